// Payments on an invoice (core/billing/payments.ts decides the status from the amounts), recorded by the
// API or by a payment provider's notification; refunds are credit notes.
import { moneyAmount } from '../../../core/billing/amounts.ts'
import { applyPayment, assertTransition, setPaymentStatus, type PaymentState, type PaymentStatus } from '../../../core/billing/payments.ts'
import { invalidOperation, validationError } from '../../../core/errors.ts'
import { D, formatMoney } from '../../../core/money.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Db, Tx } from '../../../infra/postgres.ts'
import { updateRecord, type Audit } from '../../../infra/records.ts'
import { auditOf, transaction } from '../../records/service.ts'
import { subscriptionInvoicePaid } from '../../subscriptions/activation.ts'
import { purchasePaid } from './prepaid.ts'
import { trackPayment, type PaymentSource } from '../payments/service.ts'
import { paymentRecordOf } from '../../../core/billing/payment-records.ts'
import * as store from './store.ts'
import { announceInvoice, lockInvoice, type InvoiceView } from './read.ts'
import { resolveDunning } from './dunning-state.ts'

/** Payment states in which money was paid: such an invoice is refunded by a credit note, not voided. */
export const PAID: PaymentStatus[] = ['SUCCEEDED', 'OVERPAID', 'PARTIALLY_REFUNDED', 'REFUNDED']


export interface PaymentInput {
  payment_status: PaymentStatus
  amount?: string
  /** How it was paid (OFFLINE unless told), the provider's reference, why it failed: kept on the payment record. */
  payment_method_type?: PaymentSource['method']
  gateway_payment_id?: string
  error_message?: string
}

export const paymentState = (i: store.InvoiceRow): PaymentState => ({
  currency: i.currency,
  invoice_status: i.invoice_status,
  payment_status: i.payment_status,
  total: i.total,
  amount_due: i.amount_due,
  amount_paid: i.amount_paid,
  amount_remaining: i.amount_remaining,
  overpaid_amount: i.overpaid_amount,
  refunded_amount: i.refunded_amount,
  adjustment_amount: i.adjustment_amount,
  paid_at: i.paid_at,
})

const paymentColumns = (s: PaymentState) => ({
  payment_status: s.payment_status,
  amount_due: s.amount_due,
  amount_paid: s.amount_paid,
  amount_remaining: s.amount_remaining,
  overpaid_amount: s.overpaid_amount,
  refunded_amount: s.refunded_amount,
  adjustment_amount: s.adjustment_amount,
  paid_at: s.paid_at,
})

/**
 * Records a payment (amount given; SUCCEEDED without an amount pays what remains) or a provider's
 * state without money (PENDING, PROCESSING, FAILED). The amounts decide the status: asking for one
 * the amount does not give is refused. Refunds are credit notes.
 */
export async function updatePayment(deps: Deps, actor: Actor, id: string, input: PaymentInput): Promise<InvoiceView> {
  const audit = auditOf(deps, actor)
  const source: PaymentSource = { method: input.payment_method_type ?? 'OFFLINE', reference: input.gateway_payment_id, error_message: input.error_message }
  return transaction(deps, (tx) => recordPayment(deps, tx, actor, audit, id, input, source))
}

/**
 * updatePayment in the caller's transaction: also how a payment provider's notification pays
 * (domains/integrations) and a wallet pays (domains/credits). The change is kept as a payment record of
 * `source`'s method.
 */
export async function recordPayment(deps: Deps, tx: Tx, scope: Scope, audit: Audit, id: string, input: PaymentInput, source: PaymentSource): Promise<InvoiceView> {
  const invoice = await lockInvoice(tx, scope, id)
  const state = paymentState(invoice)
  if (input.payment_status === 'REFUNDED' || input.payment_status === 'PARTIALLY_REFUNDED') throw invalidOperation('refunds are made with a credit note (POST /v1/creditnotes)', { payment_status: input.payment_status })
  let next: PaymentState
  if (input.amount !== undefined) {
    next = applyPayment(state, moneyAmount(input.amount, invoice.currency, 'amount'), audit.at)
    if (next.payment_status !== input.payment_status) throw validationError('payment_status', `a payment of ${formatMoney(new D(input.amount), invoice.currency)} makes the invoice ${next.payment_status}, not ${input.payment_status}`)
  } else if (input.payment_status === 'SUCCEEDED') {
    if (state.amount_remaining.isZero()) {
      if (invoice.invoice_status !== 'FINALIZED') throw invalidOperation(`a ${invoice.invoice_status} invoice takes no payments`)
      assertTransition(state.payment_status, 'SUCCEEDED')
      next = { ...state, payment_status: 'SUCCEEDED', paid_at: state.paid_at ?? audit.at }
    } else next = applyPayment(state, state.amount_remaining, audit.at)
  } else if (input.payment_status === 'OVERPAID') {
    throw validationError('amount', 'is required to record an overpayment')
  } else next = setPaymentStatus(state, input.payment_status)
  const record = paymentRecordOf(state.amount_remaining, input)
  if (record) await trackPayment(tx, scope, audit, invoice, record, source)
  return settleInvoice(deps, tx, scope, audit, id, next)
}

/**
 * Moves a locked invoice to the payment state `next` after a payment: announced, a purchase's credits granted
 * (rule 10), and a subscription waiting for its invoice to be paid activated.
 */
export async function settleInvoice(deps: Deps, tx: Tx, scope: Scope, audit: Audit, id: string, next: PaymentState): Promise<InvoiceView> {
  const view = await setPaymentState(tx, scope, audit, id, next)
  await purchasePaid(deps, tx, scope, view)
  if (view.subscription_id && PAID.includes(view.payment_status)) await subscriptionInvoicePaid(tx, scope, audit, view.subscription_id)
  return view
}

export const invoiceLines = async (db: Db, scope: Scope, ids: string[]): Promise<store.LineItemRow[]> => (await store.childrenOf(db, scope, ids)).lines

/** Moves a locked invoice to a new payment state (a payment, a credit note) and announces it. */
export async function setPaymentState(tx: Tx, scope: Scope, audit: Audit, id: string, state: PaymentState): Promise<InvoiceView> {
  let row = await updateRecord<store.InvoiceRow>(tx, store.INVOICES, scope, id, paymentColumns(state), { audit })
  // Paid in full: a dunning schedule stops and its suspension is lifted, whatever step it was at.
  if (row.amount_remaining.isZero()) row = await resolveDunning(tx, scope, audit, row)
  return announceInvoice(tx, scope, 'invoice.update.payment', row)
}

/** Adds keys to an invoice's metadata under its lock (a payment provider's invoice id and checkout address, domains/integrations). */
export async function mergeInvoiceMetadata(tx: Tx, scope: Scope, audit: Audit, id: string, patch: Record<string, string>): Promise<InvoiceView> {
  const invoice = await lockInvoice(tx, scope, id)
  const row = await updateRecord<store.InvoiceRow>(tx, store.INVOICES, scope, id, { metadata: { ...invoice.metadata, ...patch } }, { audit })
  return announceInvoice(tx, scope, 'invoice.update', row)
}
