// Payments made directly (Flexprice's POST/PUT/DELETE /v1/payments and POST /v1/payments/{id}/process), beside
// the ones that paying an invoice leaves. Money moves only when a payment SUCCEEDS: then the invoice's amount_paid
// and payment status follow (core/billing/payments.ts), in the same transaction, as a recorded payment does.
// OFFLINE payments are processed here; a card, a bank debit or a payment link is charged by a payment provider's
// connection when the invoice is pushed (domains/integrations), and CREDITS by the wallet's own route.
import { moneyAmount } from '../../../core/billing/amounts.ts'
import { applyPayment } from '../../../core/billing/payments.ts'
import { assertRecordTransition, type RecordStatus } from '../../../core/billing/payment-records.ts'
import { alreadyExists, invalidOperation, notFound, validationError } from '../../../core/errors.ts'
import { D } from '../../../core/money.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Tx } from '../../../infra/postgres.ts'
import { deleteRecord, insertRecord, requireRecord, updateRecord, type Audit } from '../../../infra/records.ts'
import { auditOf, referenced, transaction, uniquely } from '../../records/service.ts'
import { paymentState, PAID, settleInvoice } from '../invoices/payments.ts'
import { lockInvoice } from '../invoices/read.ts'
import { announcePayment, stamps, viewOf, type PaymentView } from './service.ts'
import * as store from './store.ts'

export interface CreatePaymentInput {
  destination_type: 'INVOICE'
  destination_id: string
  payment_method_type: store.PaymentMethod
  amount: string
  currency: string
  idempotency_key?: string
  payment_method_id?: string
  payment_gateway?: string
  metadata?: Record<string, string>
  process_payment?: boolean
  save_card_and_make_default?: boolean
  success_url?: string
  cancel_url?: string
}

export interface UpdatePaymentInput {
  payment_status?: string
  payment_gateway?: string
  gateway_payment_id?: string
  payment_method_id?: string
  metadata?: Record<string, string>
  succeeded_at?: string
  failed_at?: string
  error_message?: string
}

/** Why a method is not processed here, and what does it instead. */
const NOT_PROCESSED: Partial<Record<store.PaymentMethod, string>> = {
  CREDITS: "a wallet pays an invoice with POST /v1/invoices/{id}/payment/attempt, which debits the customer's prepaid wallet",
  CARD: "a card is charged by the payment provider's connection when the invoice is pushed to it (POST /v1/invoices/{id}/sync)",
  ACH: "a bank debit is collected by the payment provider's connection when the invoice is pushed to it (POST /v1/invoices/{id}/sync)",
  PAYMENT_LINK: "a payment link is the provider's page in the invoice's metadata.checkout_url once the invoice is pushed (POST /v1/invoices/{id}/sync)",
}

/** The payment statuses of Flexprice that a payment record here never takes, with what to do instead. */
const NOT_RECORD_STATUSES: Record<string, string> = {
  OVERPAID: 'a payment SUCCEEDS; the invoice it pays is OVERPAID when paid beyond what it owes',
  REFUNDED: 'money is given back with a credit note (POST /v1/creditnotes), which refunds the invoice',
  PARTIALLY_REFUNDED: 'money is given back with a credit note (POST /v1/creditnotes), which refunds the invoice',
  VOIDED: 'a payment that has not succeeded is deleted (DELETE /v1/payments/{id}); a succeeded one is refunded with a credit note',
}

/** Only INITIATED and FAILED payments moved no money: the others are kept for the record (Flexprice's rule). */
const DELETABLE: RecordStatus[] = ['INITIATED', 'FAILED']

function refuseLinkOptions(input: CreatePaymentInput): void {
  for (const field of ['success_url', 'cancel_url'] as const) {
    if (input[field] !== undefined) throw validationError(field, 'is used to open a payment link, which payments made here do not do')
  }
  if (input.save_card_and_make_default) throw validationError('save_card_and_make_default', 'cards are saved by the payment provider connection (a trial\'s checkout page), not by a payment made here')
}

/** Where a SUCCEEDED payment's money goes: the invoice's amounts and status follow, as for a recorded payment. */
async function payInvoice(deps: Deps, tx: Tx, scope: Scope, audit: Audit, invoiceId: string, payment: store.PaymentRow): Promise<void> {
  const invoice = await lockInvoice(tx, scope, invoiceId)
  await settleInvoice(deps, tx, scope, audit, invoiceId, applyPayment(paymentState(invoice), payment.amount, audit.at))
}

export async function createPayment(deps: Deps, actor: Actor, input: CreatePaymentInput): Promise<PaymentView> {
  refuseLinkOptions(input)
  const process = input.process_payment ?? true
  const why = NOT_PROCESSED[input.payment_method_type]
  if (input.payment_method_type === 'CREDITS') throw invalidOperation(`CREDITS payments are not made here: ${why}`, { payment_method_type: 'CREDITS' })
  if (process && why) {
    throw invalidOperation(`a ${input.payment_method_type} payment is not processed here: ${why}; to record one made elsewhere send process_payment: false, then PUT its payment_status`, { process_payment: 'true', payment_method_type: input.payment_method_type })
  }
  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    const invoice = await referenced('destination_id', lockInvoice(tx, actor, input.destination_id))
    // After the invoice's lock: a retry racing its first try on the same invoice waits for it and answers its payment.
    if (input.idempotency_key) {
      const earlier = await store.paymentByIdempotencyKey(tx, actor, input.idempotency_key)
      if (earlier && (earlier.destination_id !== invoice.id || !earlier.amount.eq(new D(input.amount)))) {
        throw alreadyExists(`idempotency_key ${input.idempotency_key} was used for another payment (${earlier.id})`, { idempotency_key: input.idempotency_key })
      }
      if (earlier) return viewOf(tx, actor, earlier)
    }
    if (input.currency.toUpperCase() !== invoice.currency.toUpperCase()) throw validationError('currency', `is ${input.currency}, the invoice's is ${invoice.currency}`)
    if (invoice.invoice_status !== 'FINALIZED') throw invalidOperation(`invoice ${invoice.id} is ${invoice.invoice_status}: only a finalized invoice takes payments`, { invoice_status: invoice.invoice_status })
    if (PAID.includes(invoice.payment_status)) throw invalidOperation(`invoice ${invoice.id} is already paid (${invoice.payment_status})`, { payment_status: invoice.payment_status })
    const amount = moneyAmount(input.amount, invoice.currency, 'amount')
    if (!amount.gt(0)) throw validationError('amount', 'must be greater than 0')
    // OFFLINE money is received when it is recorded: processed, the payment SUCCEEDS at once.
    const status: RecordStatus = process ? 'SUCCEEDED' : input.payment_method_type === 'OFFLINE' ? 'PENDING' : 'INITIATED'
    const key = [{ index: 'payments_idempotency_key', field: 'idempotency_key', value: input.idempotency_key }]
    const row = await uniquely('payment', key, () => insertRecord<store.PaymentRow>(tx, store.PAYMENTS, actor, audit, {
      destination_type: 'INVOICE',
      destination_id: invoice.id,
      customer_id: invoice.customer_id,
      idempotency_key: input.idempotency_key ?? null,
      payment_method_type: input.payment_method_type,
      payment_method_id: input.payment_method_id ?? null,
      payment_gateway: input.payment_gateway ?? null,
      amount,
      currency: invoice.currency,
      payment_status: status,
      metadata: input.metadata ?? {},
      ...stamps(status, audit.at),
    }))
    if (status === 'SUCCEEDED') await payInvoice(deps, tx, actor, audit, invoice.id, row)
    const view = await viewOf(tx, actor, row)
    await announcePayment(tx, actor, null, view)
    return view
  })
}

/**
 * Locks the invoice, then the payment (the order recorded payments take), and moves the payment with `change`;
 * reaching SUCCEEDED pays the invoice.
 */
async function changePayment(deps: Deps, actor: Actor, id: string, change: (p: store.PaymentRow, audit: Audit) => Record<string, unknown>): Promise<PaymentView> {
  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    // Read unlocked for its invoice, then locked after the invoice: the order recorded payments lock in, so no deadlock.
    const seen = await requireRecord<store.PaymentRow>(tx, store.PAYMENTS, actor, id, { published: true })
    await lockInvoice(tx, actor, seen.destination_id)
    const before = await store.lockPayment(tx, actor, id)
    if (!before || before.status === 'deleted') throw notFound('payment', id)
    const fields = change(before, audit)
    const row = await updateRecord<store.PaymentRow>(tx, store.PAYMENTS, actor, id, fields, { audit })
    if (before.payment_status !== 'SUCCEEDED' && row.payment_status === 'SUCCEEDED') await payInvoice(deps, tx, actor, audit, row.destination_id, row)
    const view = await viewOf(tx, actor, row)
    await announcePayment(tx, actor, before.payment_status, view)
    return view
  })
}

function recordStatus(value: string): RecordStatus {
  const instead = NOT_RECORD_STATUSES[value]
  if (instead) throw validationError('payment_status', `a payment is not ${value} here: ${instead}`)
  return value as RecordStatus
}

const instant = (field: string, value: string | undefined): Date | undefined => {
  if (value === undefined) return undefined
  const at = new Date(value)
  if (Number.isNaN(at.getTime())) throw validationError(field, 'is not a date-time')
  return at
}

/**
 * PUT /v1/payments/{id}: status forward only (core/billing/payment-records.ts), the provider's fields, metadata.
 * A gateway_payment_id on an INITIATED payment makes it PENDING (the provider took it), as in Flexprice.
 */
export function updatePayment(deps: Deps, actor: Actor, id: string, input: UpdatePaymentInput): Promise<PaymentView> {
  const asked = input.payment_status === undefined ? undefined : recordStatus(input.payment_status)
  const succeededAt = instant('succeeded_at', input.succeeded_at)
  const failedAt = instant('failed_at', input.failed_at)
  return changePayment(deps, actor, id, (p, audit) => {
    const to = asked ?? (input.gateway_payment_id !== undefined && p.payment_status === 'INITIATED' ? 'PENDING' : p.payment_status)
    assertRecordTransition(p.payment_status, to)
    return {
      payment_status: to,
      ...(to !== p.payment_status && stamps(to, audit.at)),
      ...(succeededAt && to === 'SUCCEEDED' && { succeeded_at: succeededAt }),
      ...(failedAt && to === 'FAILED' && { failed_at: failedAt }),
      ...(input.error_message !== undefined && { error_message: input.error_message }),
      ...(input.payment_gateway !== undefined && { payment_gateway: input.payment_gateway }),
      ...(input.gateway_payment_id !== undefined && { gateway_payment_id: input.gateway_payment_id }),
      ...(input.payment_method_id !== undefined && { payment_method_id: input.payment_method_id }),
      ...(input.metadata !== undefined && { metadata: input.metadata }),
    }
  })
}

/** POST /v1/payments/{id}/process: an OFFLINE payment not yet processed SUCCEEDS and pays its invoice. */
export function processPayment(deps: Deps, actor: Actor, id: string): Promise<PaymentView> {
  return changePayment(deps, actor, id, (p, audit) => {
    const why = NOT_PROCESSED[p.payment_method_type]
    if (why) throw invalidOperation(`a ${p.payment_method_type} payment is not processed here: ${why}`, { payment_method_type: p.payment_method_type })
    if (!['INITIATED', 'PENDING'].includes(p.payment_status)) throw invalidOperation(`payment ${p.id} is ${p.payment_status}: only an INITIATED or PENDING payment is processed`, { payment_status: p.payment_status })
    return { payment_status: 'SUCCEEDED', ...stamps('SUCCEEDED', audit.at) }
  })
}

/** DELETE /v1/payments/{id}: only a payment that moved no money (INITIATED, FAILED); the invoice is unchanged. */
export async function deletePayment(deps: Deps, actor: Actor, id: string): Promise<{ message: string }> {
  const audit = auditOf(deps, actor)
  await transaction(deps, async (tx) => {
    const seen = await requireRecord<store.PaymentRow>(tx, store.PAYMENTS, actor, id, { published: true })
    await lockInvoice(tx, actor, seen.destination_id)
    const p = await store.lockPayment(tx, actor, id)
    if (!p || p.status === 'deleted') throw notFound('payment', id)
    if (!DELETABLE.includes(p.payment_status)) {
      throw invalidOperation(`a ${p.payment_status} payment cannot be deleted: only INITIATED and FAILED ones, which moved no money (a succeeded one is refunded with a credit note)`, { payment_status: p.payment_status })
    }
    await deleteRecord(tx, store.PAYMENTS, actor, id, audit)
  })
  return { message: 'payment deleted successfully' }
}
