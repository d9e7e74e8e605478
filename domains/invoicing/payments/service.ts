// Payments as records (GET /v1/payments, Flexprice's PaymentResponse): each change of an invoice's
// payment state (by hand, from a wallet, a provider's notification or its charge) makes or moves one
// payment, in the same transaction, and announces it (payment.created / .updated / .success / .failed /
// .pending) through the outbox.
import { paymentEvents, type RecordStatus } from '../../../core/billing/payment-records.ts'
import { page, type ListRequest, type Page } from '../../../core/list.ts'
import type { Decimal } from '../../../core/money.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import { recordEvents } from '../../../infra/outbox.ts'
import type { Db, Tx } from '../../../infra/postgres.ts'
import { filterConditions, insertRecord, listRecords, requireRecord, updateRecord, type Audit } from '../../../infra/records.ts'
import { toWire } from '../../records/wire.ts'
import * as store from './store.ts'

export const FILTERS = store.FILTERS
export { PAYMENT_METHODS } from './store.ts'

/** How a payment was made: its method and, for a provider's, the provider and its reference. */
export interface PaymentSource {
  method: store.PaymentMethod
  gateway?: string | null
  /** The provider's id of the payment (or of the provider invoice it pays). */
  reference?: string | null
  error_message?: string | null
}

export type PaymentView = store.PaymentRow & { invoice_number: string | null }

async function views(db: Db, scope: Scope, rows: store.PaymentRow[]): Promise<PaymentView[]> {
  const numbers = await store.invoiceNumbers(db, scope, [...new Set(rows.map((r) => r.destination_id))])
  return rows.map((r) => ({ ...r, invoice_number: numbers.get(r.destination_id) ?? null }))
}

/** The instant a payment ended, in the column its status names. */
export const stamps = (status: RecordStatus, at: Date) => (status === 'SUCCEEDED' ? { succeeded_at: at } : status === 'FAILED' ? { failed_at: at } : {})

/**
 * Records what happened to a payment of `invoice`: the payment under way that this change reports on
 * (same provider reference, or same method without one) moves to `change`; else a new payment is made.
 */
export async function trackPayment(
  tx: Tx,
  scope: Scope,
  audit: Audit,
  invoice: { id: string; customer_id: string; currency: string; invoice_number: string | null },
  change: { status: RecordStatus; amount: Decimal },
  source: PaymentSource,
): Promise<store.PaymentRow> {
  const reference = source.reference ?? null
  const open = await store.lockOpenPayment(tx, scope, invoice.id, source.method, reference)
  const fields = { payment_status: change.status, amount: change.amount, error_message: change.status === 'FAILED' ? (source.error_message ?? null) : null, ...stamps(change.status, audit.at) }
  const row = open
    ? await updateRecord<store.PaymentRow>(tx, store.PAYMENTS, scope, open.id, fields, { audit })
    : await insertRecord<store.PaymentRow>(tx, store.PAYMENTS, scope, audit, {
        ...fields,
        destination_type: 'INVOICE',
        destination_id: invoice.id,
        customer_id: invoice.customer_id,
        payment_method_type: source.method,
        payment_gateway: source.gateway ?? null,
        gateway_payment_id: reference,
        currency: invoice.currency,
      })
  await announcePayment(tx, scope, open?.payment_status ?? null, { ...row, invoice_number: invoice.invoice_number })
  return row
}

/** The payment.* events of a payment made (`before` null) or moved from `before`, through the outbox. */
export async function announcePayment(tx: Tx, scope: Scope, before: RecordStatus | null, payment: PaymentView): Promise<void> {
  const payload = { payment: toWire(payment) }
  await recordEvents(tx, scope, paymentEvents(before, payment.payment_status).map((eventType) => ({ eventType, entityType: 'payment', entityId: payment.id, payload })))
}

/** A payment as it is answered: with its invoice's number. */
export async function viewOf(db: Db, scope: Scope, row: store.PaymentRow): Promise<PaymentView> {
  const [view] = await views(db, scope, [row])
  return view
}

export async function getPayment(deps: Deps, actor: Actor, id: string): Promise<PaymentView> {
  return viewOf(deps.sql, actor, await requireRecord<store.PaymentRow>(deps.sql, store.PAYMENTS, actor, id))
}

export async function listPayments(deps: Deps, actor: Actor, { params, filters }: ListRequest): Promise<Page<PaymentView>> {
  const { rows, total } = await listRecords<store.PaymentRow>(deps.sql, store.PAYMENTS, actor, params, filterConditions(deps.sql, store.FILTERS, filters))
  return page(await views(deps.sql, actor, rows), total, params)
}

/** Payments that succeeded in [start, end) (the accounting journal's payments). */
export const succeededPayments = (db: Db, scope: Scope, start: Date, end: Date): Promise<store.PaymentRow[]> => store.succeededBetween(db, scope, start, end)
