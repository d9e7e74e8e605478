// Payment records and their SQL.
import type { RecordStatus } from '../../../core/billing/payment-records.ts'
import { OPEN_STATUSES } from '../../../core/billing/payment-records.ts'
import type { Decimal } from '../../../core/money.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Db } from '../../../infra/postgres.ts'
import { decodeRow, filterSpec, type FilterSpec, type RecordRow, type RecordTable } from '../../../infra/records.ts'

export const PAYMENTS: RecordTable = { name: 'payments', noun: 'payment', prefix: 'pay', decimals: ['amount'] }

// destination_*: Flexprice's names; invoice_id: the same filter by its plain name.
export const FILTERS: FilterSpec = filterSpec({
  eq: {
    destination_type: 'destination_type',
    destination_id: 'destination_id',
    invoice_id: 'destination_id',
    customer_id: 'customer_id',
    payment_status: 'payment_status',
    payment_method_type: 'payment_method_type',
    payment_gateway: 'payment_gateway',
    gateway_payment_id: 'gateway_payment_id',
    currency: 'currency',
  },
  in: { payment_ids: 'id' },
})

export const PAYMENT_METHODS = ['CARD', 'ACH', 'OFFLINE', 'CREDITS', 'PAYMENT_LINK'] as const
export type PaymentMethod = (typeof PAYMENT_METHODS)[number]

export interface PaymentRow extends RecordRow {
  destination_type: 'INVOICE'
  destination_id: string
  customer_id: string
  idempotency_key: string | null
  payment_method_type: PaymentMethod
  payment_method_id: string | null
  payment_gateway: string | null
  gateway_payment_id: string | null
  amount: Decimal
  currency: string
  payment_status: RecordStatus
  error_message: string | null
  succeeded_at: Date | null
  failed_at: Date | null
}

/**
 * The invoice's payment still under way that a change reports on: the one with the provider's reference
 * when there is one, else the latest of the same method without one. Locked for the caller's transaction.
 */
export async function lockOpenPayment(db: Db, scope: Scope, invoiceId: string, method: PaymentMethod, reference: string | null): Promise<PaymentRow | undefined> {
  const [row] = await db`SELECT * FROM payments
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND destination_id = ${invoiceId} AND status = 'published'
      AND payment_status = ANY(${OPEN_STATUSES as string[]}::text[])
      AND ${reference === null ? db`payment_method_type = ${method} AND gateway_payment_id IS NULL` : db`gateway_payment_id = ${reference}`}
    ORDER BY created_at DESC, id DESC LIMIT 1 FOR UPDATE`
  return row ? decodeRow<PaymentRow>(PAYMENTS, row) : undefined
}

/** Invoice numbers of payments' invoices, by invoice id. */
export async function invoiceNumbers(db: Db, scope: Scope, invoiceIds: string[]): Promise<Map<string, string | null>> {
  if (invoiceIds.length === 0) return new Map()
  const rows = await db<{ id: string; invoice_number: string | null }[]>`SELECT id, invoice_number FROM invoices
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND id = ANY(${invoiceIds}::text[])`
  return new Map(rows.map((r) => [r.id, r.invoice_number]))
}

/** Payments that succeeded in [start, end). */
export async function succeededBetween(db: Db, scope: Scope, start: Date, end: Date): Promise<PaymentRow[]> {
  const rows = await db`SELECT * FROM payments
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND status = 'published'
      AND payment_status = 'SUCCEEDED' AND succeeded_at >= ${start} AND succeeded_at < ${end}
    ORDER BY succeeded_at, id`
  return rows.map((r) => decodeRow<PaymentRow>(PAYMENTS, r))
}

/** One payment of the scope, locked for the caller's transaction (deleted ones too: the caller says what that means). */
export async function lockPayment(db: Db, scope: Scope, id: string): Promise<PaymentRow | undefined> {
  const [row] = await db`SELECT * FROM payments WHERE id = ${id} AND tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} FOR UPDATE`
  return row ? decodeRow<PaymentRow>(PAYMENTS, row) : undefined
}

/** The payment an idempotency key made (unique in the environment, sql/postgres/0730_payment_idempotency.sql). */
export async function paymentByIdempotencyKey(db: Db, scope: Scope, key: string): Promise<PaymentRow | undefined> {
  const [row] = await db`SELECT * FROM payments WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND idempotency_key = ${key}`
  return row ? decodeRow<PaymentRow>(PAYMENTS, row) : undefined
}
