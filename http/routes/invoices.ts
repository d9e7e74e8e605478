import { defineRoute, type Route } from '../route.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { BILLING_PERIODS } from '../../core/periods.ts'
import { recordRoutes } from '../record-routes.ts'
import { currencySchema, dateTime, decimalString, idList, metadataSchema, nonNegativeDecimal, versionField } from '../record-schema.ts'
import { toWire } from '../../domains/records/wire.ts'
import { invoicePdf } from '../../domains/invoicing/invoices/pdf.ts'
import * as finalize from '../../domains/invoicing/invoices/finalize.ts'
import * as payments from '../../domains/invoicing/invoices/payments.ts'
import * as read from '../../domains/invoicing/invoices/read.ts'
import * as service from '../../domains/invoicing/invoices/service.ts'
import * as subscriptionInvoices from '../../domains/invoicing/invoices/subscription-invoices.ts'
import { expandUsage } from '../../domains/invoicing/invoices/usage.ts'
import { PAYMENT_METHODS } from '../../domains/invoicing/payments/service.ts'
import { sendInvoiceNow } from '../../domains/communications/service.ts'
import { sendPdf } from '../pdf-response.ts'

const id: JsonSchema = { type: 'string', minLength: 1 }
const text: JsonSchema = { type: 'string', maxLength: 2000 }
const PAYMENT_STATUSES = ['INITIATED', 'PENDING', 'PROCESSING', 'SUCCEEDED', 'OVERPAID', 'FAILED', 'REFUNDED', 'PARTIALLY_REFUNDED']
const BILLING_REASONS = ['SUBSCRIPTION_CREATE', 'SUBSCRIPTION_CYCLE', 'SUBSCRIPTION_UPDATE', 'SUBSCRIPTION_TRIAL_END', 'SUBSCRIPTION_TRIAL_START', 'PRORATION', 'MANUAL', 'AUTO_INVOICE_THRESHOLD', 'WALLET_AUTO_TOPUP']

const lineItem: JsonSchema = {
  type: 'object',
  required: ['amount', 'quantity'],
  additionalProperties: false,
  properties: {
    amount: nonNegativeDecimal,
    quantity: nonNegativeDecimal,
    display_name: text,
    price_id: id,
    price_type: { type: 'string', enum: ['FIXED', 'USAGE'] },
    plan_id: id,
    plan_display_name: text,
    entity_id: id,
    entity_type: id,
    meter_id: id,
    meter_display_name: text,
    price_unit: { type: 'string', maxLength: 16 },
    price_unit_amount: decimalString,
    period_start: dateTime,
    period_end: dateTime,
    metadata: metadataSchema,
    line_item_discount: nonNegativeDecimal,
    invoice_level_discount: nonNegativeDecimal,
    prepaid_credits_applied: nonNegativeDecimal,
    commitment_info: {
      type: 'object',
      additionalProperties: false,
      description: 'the commitment the line was billed under, kept with it; its computed amounts add up to the line amount',
      properties: {
        type: { type: 'string', enum: ['amount', 'quantity'] },
        amount: nonNegativeDecimal,
        quantity: nonNegativeDecimal,
        duration: { type: 'string', enum: [...BILLING_PERIODS] },
        overage_factor: nonNegativeDecimal,
        true_up_enabled: { type: 'boolean' },
        is_windowed: { type: 'boolean' },
        computed_commitment_utilized_amount: nonNegativeDecimal,
        computed_overage_amount: nonNegativeDecimal,
        computed_true_up_amount: nonNegativeDecimal,
      },
    },
  },
}

const taxRateOverride: JsonSchema = {
  type: 'object',
  required: ['currency', 'tax_rate_code'],
  additionalProperties: false,
  properties: { currency: currencySchema, tax_rate_code: id, auto_apply: { type: 'boolean', default: true }, priority: { type: 'integer' }, metadata: metadataSchema },
}

const preparedRate: JsonSchema = {
  type: 'object',
  required: ['tax_rate_type'],
  properties: { id, code: id, name: text, tax_rate_type: { type: 'string', enum: ['percentage', 'fixed'] }, percentage_value: nonNegativeDecimal, fixed_value: nonNegativeDecimal },
}

const createBody: JsonSchema = {
  type: 'object',
  required: ['customer_id', 'currency', 'subtotal', 'total', 'amount_due'],
  additionalProperties: false,
  properties: {
    customer_id: id,
    currency: currencySchema,
    subtotal: nonNegativeDecimal,
    total: nonNegativeDecimal,
    amount_due: nonNegativeDecimal,
    amount_paid: nonNegativeDecimal,
    billing_period: { type: 'string', maxLength: 255 },
    billing_reason: { type: 'string', enum: BILLING_REASONS },
    coupons: idList,
    description: text,
    due_date: dateTime,
    idempotency_key: { type: 'string', minLength: 1, maxLength: 255 },
    invoice_coupons: { type: 'array', maxItems: 50, items: { type: 'object', required: ['coupon_id'], additionalProperties: false, properties: { coupon_id: id, coupon_association_id: id } } },
    invoice_number: { type: 'string', minLength: 1, maxLength: 255 },
    invoice_pdf_url: { type: 'string', maxLength: 2000 },
    invoice_status: { type: 'string', enum: ['DRAFT'] },
    invoice_type: { type: 'string', enum: ['SUBSCRIPTION', 'ONE_OFF', 'CREDIT'] },
    line_item_coupons: {
      type: 'array',
      maxItems: 50,
      items: { type: 'object', required: ['coupon_id', 'line_item_id'], additionalProperties: false, properties: { coupon_id: id, line_item_id: id, coupon_association_id: id } },
    },
    line_items: { type: 'array', maxItems: 1000, items: lineItem },
    metadata: metadataSchema,
    payment_status: { type: 'string', enum: ['INITIATED', 'PENDING'] },
    period_start: dateTime,
    period_end: dateTime,
    prepared_tax_rates: { type: 'array', maxItems: 50, items: preparedRate },
    subscription_id: id,
    tax_rate_overrides: { type: 'array', maxItems: 50, items: taxRateOverride },
    tax_rates: idList,
    total_prepaid_applied: nonNegativeDecimal,
    issue_date: { type: 'string', format: 'date' },
  },
}

const updateBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    description: { type: ['string', 'null'], maxLength: 2000 },
    due_date: { type: ['string', 'null'], format: 'date-time' },
    issue_date: { type: ['string', 'null'], format: 'date' },
    metadata: metadataSchema,
    line_items: { type: 'array', maxItems: 1000, items: lineItem },
    version: versionField,
  },
}

const expandQuery: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { expand: { type: 'array', items: { type: 'string', enum: ['usage_analytics', 'usage_breakdown'] } } },
}

export const invoiceRoutes: Route[] = [
  defineRoute<{ subscription_id: string }>({
    method: 'POST',
    path: '/v1/invoices/preview',
    tag: 'Invoices',
    summary: "A subscription's upcoming invoice, computed as the billing run will compute it; nothing is written",
    permission: 'read',
    body: { type: 'object', required: ['subscription_id'], additionalProperties: false, properties: { subscription_id: id } },
    handler: async ({ deps, actor, body }) => toWire(await subscriptionInvoices.previewInvoice(deps, actor, body)),
  }),
  defineRoute<Record<string, never>, { expand?: string[] }>({
    method: 'GET',
    path: '/v1/invoices/{id}',
    tag: 'Invoices',
    summary: 'Get an invoice with its customer, subscription and line items; expand=usage_analytics,usage_breakdown adds usage to usage lines',
    permission: 'read',
    query: expandQuery,
    handler: async ({ deps, actor, params, query }) => toWire(await expandUsage(deps, actor, await read.getInvoice(deps, actor, params.id), query.expand ?? [])),
  }),
  ...recordRoutes({
    path: '/v1/invoices',
    tag: 'Invoices',
    noun: 'invoice',
    sortable: ['created_at', 'updated_at', 'period_start', 'due_date', 'finalized_at'],
    filters: read.FILTERS,
    createBody,
    updateBody,
    service: { create: service.createInvoice, list: read.listInvoices, update: service.updateInvoice },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/invoices/{id}/finalize',
    tag: 'Invoices',
    summary: 'Finalize a draft: the next number of the sequence, line items locked (a zero invoice needing no payment is SKIPPED)',
    permission: 'write',
    handler: ({ deps, actor, params }) => finalize.finalizeInvoice(deps, actor, params.id),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/invoices/{id}/comms/trigger',
    tag: 'Invoices',
    summary: "Email the finalized invoice (PDF attached) to the customer now, and announce invoice.communication.triggered; the answer's communication is the message record",
    permission: 'write',
    handler: async ({ deps, actor, params }) => {
      // Sent first: an invoice that cannot be sent (a draft, voided) is refused before anything is announced.
      const communication = toWire(await sendInvoiceNow(deps, actor, params.id))
      return { ...(await service.triggerCommunication(deps, actor, params.id)), communication }
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/customers/{id}/invoices/summary',
    tag: 'Invoices',
    summary: "The customer's finalized invoices summed per currency: revenue, unpaid, overdue, unpaid usage and fixed charges",
    permission: 'read',
    handler: ({ deps, actor, params }) => read.customerInvoiceSummary(deps, actor, params.id),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/invoices/{id}/void',
    tag: 'Invoices',
    summary: 'Void a draft or an unpaid finalized invoice',
    permission: 'write',
    handler: async ({ deps, actor, params }) => toWire(await service.voidInvoice(deps, actor, params.id)),
  }),
  defineRoute<Record<string, never>, { finalize?: boolean }>({
    method: 'POST',
    path: '/v1/invoices/{id}/recalculate',
    tag: 'Invoices',
    summary: 'Compute a subscription draft again, or make the replacement of a voided subscription invoice; finalize=true finalizes the result',
    permission: 'write',
    query: { type: 'object', additionalProperties: false, properties: { finalize: { type: 'boolean', default: false } } },
    handler: async ({ deps, actor, params, query }) => {
      const draft = await service.recalculateInvoice(deps, actor, params.id)
      if (!query.finalize) return toWire(draft)
      await finalize.finalizeInvoice(deps, actor, draft.id)
      return toWire(await read.getInvoice(deps, actor, draft.id))
    },
  }),
  defineRoute<payments.PaymentInput>({
    method: 'PUT',
    path: '/v1/invoices/{id}/payment',
    tag: 'Invoices',
    summary: 'Record a payment (amount) or a provider state (PENDING, PROCESSING, FAILED)',
    permission: 'write',
    body: {
      type: 'object',
      required: ['payment_status'],
      additionalProperties: false,
      properties: {
        payment_status: { type: 'string', enum: PAYMENT_STATUSES },
        amount: nonNegativeDecimal,
        payment_method_type: { type: 'string', enum: [...PAYMENT_METHODS], default: 'OFFLINE', description: 'kept on the payment record (GET /v1/payments)' },
        gateway_payment_id: { type: 'string', minLength: 1, maxLength: 255, description: "the payment's reference elsewhere (a bank transfer's, a provider's)" },
        error_message: { type: 'string', minLength: 1, maxLength: 2000, description: 'why it failed (payment_status FAILED)' },
      },
    },
    handler: async ({ deps, actor, params, body }) => toWire(await payments.updatePayment(deps, actor, params.id, body)),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/invoices/{id}/pdf',
    tag: 'Invoices',
    summary: 'The invoice as a PDF document',
    permission: 'read',
    handler: async ({ deps, actor, params, ctx }) => {
      const { invoice, pdf } = await invoicePdf(deps, actor, params.id)
      return sendPdf(ctx, invoice.invoice_number ?? invoice.id, pdf)
    },
  }),
]
