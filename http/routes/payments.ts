import { defineRoute, type Route } from '../route.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { recordRoutes } from '../record-routes.ts'
import { currencySchema, dateTime, decimalString, metadataSchema } from '../record-schema.ts'
import { toWire } from '../../domains/records/wire.ts'
import * as service from '../../domains/invoicing/payments/service.ts'
import * as direct from '../../domains/invoicing/payments/direct.ts'

const text: JsonSchema = { type: 'string', minLength: 1, maxLength: 255 }
// Flexprice's statuses all: those a payment here never takes are refused by the service saying what to do instead.
const paymentStatus: JsonSchema = { type: 'string', enum: ['INITIATED', 'PENDING', 'PROCESSING', 'SUCCEEDED', 'FAILED', 'OVERPAID', 'REFUNDED', 'PARTIALLY_REFUNDED', 'VOIDED'] }

// Payments are made by what pays an invoice (PUT /v1/invoices/{id}/payment, a wallet, a provider) or directly here
// (domains/invoicing/payments/direct.ts).
export const paymentRoutes: Route[] = [
  // unknown: a delete answers Flexprice's {message}, not the payment.
  ...recordRoutes<unknown>({
    path: '/v1/payments',
    tag: 'Payments',
    noun: 'payment',
    sortable: ['created_at', 'updated_at', 'amount'],
    filters: service.FILTERS,
    createBody: {
      type: 'object',
      required: ['destination_type', 'destination_id', 'payment_method_type', 'amount', 'currency'],
      additionalProperties: false,
      properties: {
        destination_type: { type: 'string', enum: ['INVOICE'] },
        destination_id: text,
        payment_method_type: { type: 'string', enum: [...service.PAYMENT_METHODS] },
        amount: decimalString,
        currency: currencySchema,
        idempotency_key: text,
        payment_method_id: text,
        payment_gateway: { type: 'string', enum: ['stripe', 'razorpay', 'nomod', 'moyasar'] },
        metadata: metadataSchema,
        process_payment: { type: 'boolean', default: true, description: 'OFFLINE: the payment SUCCEEDS and pays the invoice now (the default)' },
        save_card_and_make_default: { type: 'boolean' },
        success_url: { type: 'string' },
        cancel_url: { type: 'string' },
      },
    },
    updateBody: {
      type: 'object',
      additionalProperties: false,
      properties: {
        payment_status: paymentStatus,
        payment_gateway: text,
        gateway_payment_id: text,
        payment_method_id: text,
        metadata: metadataSchema,
        succeeded_at: dateTime,
        failed_at: dateTime,
        error_message: { type: 'string', maxLength: 2000 },
      },
    },
    service: { create: direct.createPayment, get: service.getPayment, list: service.listPayments, update: direct.updatePayment, remove: direct.deletePayment },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/payments/{id}/process',
    tag: 'Payments',
    summary: 'Process an OFFLINE payment not yet processed: it SUCCEEDS and pays its invoice',
    permission: 'write',
    handler: async ({ deps, actor, params }) => toWire(await direct.processPayment(deps, actor, params.id)),
  }),
]
