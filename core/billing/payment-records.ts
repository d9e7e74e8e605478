// What one recorded payment looks like after a change of an invoice's payment state, and which
// payment.* events that change announces. The invoice's state (core/billing/payments.ts) counts money;
// a payment record says what happened to one payment: money received, a provider's pending or
// processing charge, or a failure.
import { invalidOperation } from '../errors.ts'
import { D, type Decimal } from '../money.ts'
import type { PaymentStatus } from './payments.ts'

/** What a payment record can be: money moves at SUCCEEDED, nothing moves at the others. */
export type RecordStatus = 'INITIATED' | 'PENDING' | 'PROCESSING' | 'SUCCEEDED' | 'FAILED'

/** A payment that has not ended yet: a later change of the same payment settles it. */
export const OPEN_STATUSES: readonly RecordStatus[] = ['INITIATED', 'PENDING', 'PROCESSING']

/**
 * The payment a change of the invoice records: money (an amount, or SUCCEEDED paying what remains) is a
 * SUCCEEDED payment of that amount; a state without money (PENDING, PROCESSING, FAILED) is a payment of
 * what remains in that state. Nothing when no money moves and nothing remains (marking a paid invoice
 * paid again).
 */
export function paymentRecordOf(remaining: Decimal, input: { payment_status: PaymentStatus; amount?: string }): { status: RecordStatus; amount: Decimal } | null {
  if (input.amount !== undefined) return { status: 'SUCCEEDED', amount: new D(input.amount) }
  if (remaining.isZero()) return null
  const status = input.payment_status === 'OVERPAID' ? 'SUCCEEDED' : input.payment_status
  if (status === 'REFUNDED' || status === 'PARTIALLY_REFUNDED') return null
  return { status, amount: remaining }
}

const STATUS_EVENTS: Partial<Record<RecordStatus, string>> = { SUCCEEDED: 'payment.success', FAILED: 'payment.failed', PENDING: 'payment.pending' }

/** The events of a payment made (`before` null) or moved from `before` to `after`, in the order they happened. */
export function paymentEvents(before: RecordStatus | null, after: RecordStatus): string[] {
  const change = before === null ? 'payment.created' : 'payment.updated'
  const status = before !== after ? STATUS_EVENTS[after] : undefined
  return status ? [change, status] : [change]
}

/**
 * How one payment record may move when changed directly (PUT /v1/payments/{id}, Flexprice's lifecycle): forward
 * until it ends; SUCCEEDED and FAILED are final (money back is a credit note; a failed payment is retried as a new one).
 */
const RECORD_TRANSITIONS: Readonly<Record<RecordStatus, readonly RecordStatus[]>> = {
  INITIATED: ['INITIATED', 'PENDING', 'PROCESSING', 'SUCCEEDED', 'FAILED'],
  PENDING: ['PENDING', 'PROCESSING', 'SUCCEEDED', 'FAILED'],
  PROCESSING: ['PROCESSING', 'SUCCEEDED', 'FAILED'],
  SUCCEEDED: ['SUCCEEDED'],
  FAILED: ['FAILED'],
}

export function assertRecordTransition(from: RecordStatus, to: RecordStatus): void {
  if (!RECORD_TRANSITIONS[from].includes(to)) {
    throw invalidOperation(`a ${from} payment cannot become ${to}`, { payment_status: `cannot go from ${from} to ${to}`, allowed: RECORD_TRANSITIONS[from] })
  }
}
