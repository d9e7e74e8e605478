// Payment status of an invoice: which moves are allowed, and the amounts that follow a payment or a
// refund. Amounts decide the status (paid in full: SUCCEEDED, more: OVERPAID, less: PENDING), so a
// caller cannot mark an invoice paid without the money; provider-only states are set with
// setPaymentStatus. Every refused move is an invalid_operation naming both statuses.
import { invalidOperation, validationError } from '../errors.ts'
import { D, formatMoney, type Decimal } from '../money.ts'
import { moneyAmount } from './amounts.ts'

export type PaymentStatus = 'INITIATED' | 'PENDING' | 'PROCESSING' | 'SUCCEEDED' | 'OVERPAID' | 'FAILED' | 'REFUNDED' | 'PARTIALLY_REFUNDED'
export type InvoiceStatus = 'DRAFT' | 'FINALIZED' | 'VOIDED' | 'SKIPPED'

const COLLECTING: PaymentStatus[] = ['PENDING', 'PROCESSING', 'SUCCEEDED', 'OVERPAID', 'FAILED']
const REFUNDING: PaymentStatus[] = ['PARTIALLY_REFUNDED', 'REFUNDED']

/**
 * Allowed moves. Until paid, any collecting state may follow another (PENDING → PENDING is a second
 * partial payment; FAILED may be retried). Once paid, only more money (OVERPAID) or refunds; REFUNDED is final.
 */
const PAYMENT_TRANSITIONS: Readonly<Record<PaymentStatus, readonly PaymentStatus[]>> = {
  INITIATED: COLLECTING,
  PENDING: COLLECTING,
  PROCESSING: COLLECTING.filter((s) => s !== 'PROCESSING'),
  FAILED: COLLECTING.filter((s) => s !== 'FAILED'),
  SUCCEEDED: ['OVERPAID', ...REFUNDING],
  OVERPAID: ['OVERPAID', ...REFUNDING],
  PARTIALLY_REFUNDED: REFUNDING,
  REFUNDED: [],
}

/** The payment fields of an invoice. */
export type PaymentState = {
  currency: string
  invoice_status: InvoiceStatus
  payment_status: PaymentStatus
  total: Decimal
  amount_due: Decimal
  amount_paid: Decimal
  amount_remaining: Decimal
  overpaid_amount: Decimal
  refunded_amount: Decimal
  adjustment_amount: Decimal
  paid_at: Date | null
}

export function assertTransition(from: PaymentStatus, to: PaymentStatus): void {
  if (!PAYMENT_TRANSITIONS[from]?.includes(to)) throw invalidOperation(`payment_status cannot go from ${from} to ${to}`, { from, to })
}

function assertFinalized(state: PaymentState): void {
  if (state.invoice_status !== 'FINALIZED') throw invalidOperation(`a ${state.invoice_status} invoice takes no payments or refunds`, { invoice_status: state.invoice_status })
}

function positive(amount: Decimal, currency: string): Decimal {
  const d = moneyAmount(amount, currency, 'amount')
  if (d.isZero()) throw validationError('amount', 'must be greater than 0')
  return d
}

/** The states a payment provider reports without money changing hands: PENDING, PROCESSING, FAILED. */
export function setPaymentStatus(state: PaymentState, to: PaymentStatus): PaymentState {
  if (!['PENDING', 'PROCESSING', 'FAILED'].includes(to)) throw invalidOperation(`payment_status ${to} follows from amounts: record a payment or a refund`, { to })
  assertFinalized(state)
  assertTransition(state.payment_status, to)
  return { ...state, payment_status: to }
}

/**
 * Records a payment of `amount`. amount_remaining = due − paid (not below 0). Overpaid is what was
 * paid beyond amount_due: the spec's paid − total, counting prepaid credits as paid (without them,
 * due = total). paid_at is the first time the invoice was paid in full.
 */
export function applyPayment(state: PaymentState, amount: Decimal, at: Date): PaymentState {
  assertFinalized(state)
  const paid = state.amount_paid.plus(positive(amount, state.currency))
  const due = state.amount_due
  const status: PaymentStatus = paid.gt(due) ? 'OVERPAID' : paid.eq(due) ? 'SUCCEEDED' : 'PENDING'
  assertTransition(state.payment_status, status)
  return {
    ...state,
    payment_status: status,
    amount_paid: paid,
    amount_remaining: D.max(0, due.minus(paid)),
    overpaid_amount: D.max(0, paid.minus(due)),
    paid_at: status === 'PENDING' ? null : (state.paid_at ?? at),
  }
}

/**
 * Records a refund (a REFUND credit note). REFUNDED once everything the invoice still charges
 * (total − adjustments) has been refunded, PARTIALLY_REFUNDED before.
 */
export function applyRefund(state: PaymentState, amount: Decimal): PaymentState {
  assertFinalized(state)
  const refunded = state.refunded_amount.plus(positive(amount, state.currency))
  const refundable = state.total.minus(state.adjustment_amount)
  if (refunded.gt(refundable)) throw invalidOperation(`refunds of ${formatMoney(refunded, state.currency)} would exceed the ${formatMoney(refundable, state.currency)} charged`, { refundable: formatMoney(refundable, state.currency) })
  const status: PaymentStatus = refunded.eq(refundable) ? 'REFUNDED' : 'PARTIALLY_REFUNDED'
  assertTransition(state.payment_status, status)
  return { ...state, payment_status: status, refunded_amount: refunded }
}
