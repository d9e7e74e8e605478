// Invoices, their line items, the coupon applications and taxes applied to them, and the gap-free
// number sequences.
import type { Scope } from '../../../core/scope.ts'
import type { Decimal } from '../../../core/money.ts'
import type { InvoiceStatus, PaymentStatus } from '../../../core/billing/payments.ts'
import type { Db } from '../../../infra/postgres.ts'
import { newId } from '../../../core/ids.ts'
import { toWire } from '../../records/wire.ts'
import { decodeRow, filterSpec, publishedIn, type FilterSpec, type Fragment, type RecordRow, type RecordTable } from '../../../infra/records.ts'

const MONEY = ['subtotal', 'total_discount', 'total_tax', 'total', 'amount_due', 'amount_paid', 'amount_remaining', 'adjustment_amount', 'refunded_amount', 'overpaid_amount', 'total_prepaid_credits_applied']

export const INVOICES: RecordTable = { name: 'invoices', noun: 'invoice', prefix: 'inv', decimals: MONEY }
export const LINE_ITEMS: RecordTable = {
  name: 'invoice_line_items',
  noun: 'invoice_line_item',
  prefix: 'inli',
  decimals: ['quantity', 'amount', 'line_item_discount', 'invoice_level_discount', 'tax_amount', 'prepaid_credits_applied', 'price_unit_amount'],
}
export const COUPON_APPLICATIONS: RecordTable = {
  name: 'coupon_applications',
  noun: 'coupon_application',
  prefix: 'capp',
  decimals: ['discount_percentage', 'discounted_amount', 'original_price', 'final_price'],
}
export const TAXES_APPLIED: RecordTable = { name: 'taxes_applied', noun: 'tax_applied', prefix: 'taxapp', decimals: ['taxable_amount', 'tax_amount'] }

export const IDEMPOTENCY_INDEX = 'invoices_idempotency_key'

export const FILTERS: FilterSpec = filterSpec({
  eq: { customer_id: 'customer_id', subscription_id: 'subscription_id', invoice_type: 'invoice_type', billing_reason: 'billing_reason', currency: 'currency' },
  in: { invoice_ids: 'id', invoice_status: 'invoice_status', payment_status: 'payment_status', customer_ids: 'customer_id', subscription_ids: 'subscription_id' },
  gte: { period_start_gte: 'period_start', period_end_gte: 'period_end', created_at_gte: 'created_at' },
  lt: { period_start_lt: 'period_start', period_end_lt: 'period_end', created_at_lt: 'created_at' },
})

export interface InvoiceRow extends RecordRow {
  customer_id: string
  subscription_id: string | null
  subscription_customer_id: string | null
  invoice_number: string | null
  invoice_status: InvoiceStatus
  invoice_type: 'SUBSCRIPTION' | 'ONE_OFF' | 'CREDIT'
  payment_status: PaymentStatus
  billing_reason: string
  billing_period: string | null
  billing_sequence: number | null
  currency: string
  subtotal: Decimal
  total_discount: Decimal
  total_tax: Decimal
  total: Decimal
  amount_due: Decimal
  amount_paid: Decimal
  amount_remaining: Decimal
  adjustment_amount: Decimal
  refunded_amount: Decimal
  overpaid_amount: Decimal
  total_prepaid_credits_applied: Decimal
  description: string | null
  due_date: Date | null
  period_start: Date | null
  period_end: Date | null
  issue_date: string | null
  finalized_at: Date | null
  paid_at: Date | null
  voided_at: Date | null
  last_computed_at: Date | null
  finalize_after: Date | null
  overdue_notified_at: Date | null
  recalculated_invoice_id: string | null
  idempotency_key: string | null
  invoice_pdf_url: string | null
  coupon_uses: unknown[]
  tax_rate_overrides: unknown[]
  prepared_tax_rates: unknown[]
  /** Where the invoice stands in its environment's dunning schedule (domains/dunning; dunning-state.ts). */
  dunning_status: DunningStatus | null
  dunning_next_step: number | null
  dunning_next_step_at: Date | null
}

export type DunningStatus = 'active' | 'completed' | 'uncollectible' | 'resolved'

export interface LineItemRow extends RecordRow {
  invoice_id: string
  position: number
  customer_id: string
  subscription_id: string | null
  subscription_line_item_id: string | null
  entity_id: string | null
  entity_type: string | null
  plan_id: string | null
  plan_display_name: string | null
  display_name: string | null
  price_id: string | null
  price_type: 'FIXED' | 'USAGE' | null
  price_unit: string | null
  price_unit_id: string | null
  price_unit_amount: Decimal | null
  meter_id: string | null
  meter_display_name: string | null
  currency: string
  quantity: Decimal
  amount: Decimal
  line_item_discount: Decimal
  invoice_level_discount: Decimal
  tax_amount: Decimal
  prepaid_credits_applied: Decimal
  commitment_info: Record<string, unknown> | null
  calculation: Record<string, unknown> | null
  period_start: Date | null
  period_end: Date | null
}

export interface CouponApplicationRow extends RecordRow {
  coupon_id: string
  coupon_association_id: string | null
  coupon_snapshot: Record<string, unknown>
  invoice_id: string
  invoice_line_item_id: string | null
  subscription_id: string | null
  applied_at: Date
  currency: string
  discount_type: string
  discount_percentage: Decimal | null
  discounted_amount: Decimal
  original_price: Decimal
  final_price: Decimal
}

export interface TaxAppliedRow extends RecordRow {
  tax_rate_id: string
  tax_rate: Record<string, unknown>
  tax_association_id: string | null
  entity_type: string
  entity_id: string
  taxable_amount: Decimal
  tax_amount: Decimal
  currency: string
  applied_at: Date
  idempotency_key: string | null
}

/** The invoice's row lock for the rest of the transaction: finalize, void, payments and credit notes take it first. */
export async function lockInvoice(db: Db, scope: Scope, id: string): Promise<InvoiceRow | undefined> {
  const [row] = await db`SELECT * FROM invoices WHERE id = ${id} AND tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} FOR UPDATE`
  return row ? decodeRow<InvoiceRow>(INVOICES, row) : undefined
}

/** lockInvoice for many invoices, locked in id order (as any other batch locks them: no deadlock between two). */
export async function lockInvoices(db: Db, scope: Scope, ids: string[]): Promise<Map<string, InvoiceRow>> {
  const rows = await db`SELECT * FROM invoices WHERE id = ANY(${ids}::text[]) AND tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}
    ORDER BY id FOR UPDATE`
  return new Map(rows.map((r) => [r.id as string, decodeRow<InvoiceRow>(INVOICES, r)]))
}

/** The invoice holding an idempotency key (rule 11: voided and deleted ones do not). */
export async function findByIdempotencyKey(db: Db, scope: Scope, key: string): Promise<InvoiceRow | undefined> {
  const [row] = await db`SELECT * FROM invoices WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}
    AND idempotency_key = ${key} AND invoice_status <> 'VOIDED' AND status <> 'deleted'`
  return row ? decodeRow<InvoiceRow>(INVOICES, row) : undefined
}

/** An invoice's lines, coupon applications and taxes applied (of some invoices, together). */
export interface Children {
  lines: LineItemRow[]
  applications: CouponApplicationRow[]
  taxes: TaxAppliedRow[]
}

/** Line items, coupon applications and taxes of some invoices, in line order. */
export async function childrenOf(db: Db, scope: Scope, invoiceIds: string[]): Promise<Children> {
  const [lines, applications, taxes] = await Promise.all([
    publishedIn<LineItemRow>(db, LINE_ITEMS, scope, 'invoice_id', invoiceIds, ['position']),
    publishedIn<CouponApplicationRow>(db, COUPON_APPLICATIONS, scope, 'invoice_id', invoiceIds),
    publishedIn<TaxAppliedRow>(db, TAXES_APPLIED, scope, 'entity_id', invoiceIds),
  ])
  return { lines, applications, taxes }
}

/** Drafts' computed parts are replaced whole when they are computed again. */
export async function deleteComputed(db: Db, scope: Scope, invoiceIds: string[]): Promise<void> {
  if (invoiceIds.length === 0) return
  const where = db`tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}`
  await db`DELETE FROM coupon_applications WHERE ${where} AND invoice_id = ANY(${invoiceIds}::text[])`
  await db`DELETE FROM taxes_applied WHERE ${where} AND entity_type = 'invoice' AND entity_id = ANY(${invoiceIds}::text[])`
  await db`DELETE FROM invoice_line_items WHERE ${where} AND invoice_id = ANY(${invoiceIds}::text[])`
}

/**
 * The next numbers of a sequence, gap-free: the counter row is locked until the caller's transaction
 * ends, so a concurrent finalize waits, and a rollback gives the number back.
 */
export async function nextNumbers(db: Db, scope: Scope, key: string, count = 1): Promise<number> {
  const [row] = await db<{ last_value: string }[]>`INSERT INTO number_sequences (tenant_id, environment_id, scope, last_value)
    VALUES (${scope.tenantId}, ${scope.environmentId}, ${key}, ${count})
    ON CONFLICT (tenant_id, environment_id, scope) DO UPDATE SET last_value = number_sequences.last_value + ${count}
    RETURNING last_value`
  // The first of the `count` numbers taken.
  return Number(row.last_value) - count + 1
}

/** The billing points (subscription, period start, reason) already invoiced among some subscriptions. */
export async function billedKeys(db: Db, scope: Scope, subscriptionIds: string[]): Promise<Set<string>> {
  const rows = await db<{ k: string }[]>`SELECT subscription_id || '|' || extract(epoch FROM period_start)::bigint || '|' || billing_reason AS k FROM invoices
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND subscription_id = ANY(${subscriptionIds}::text[])
      AND invoice_status <> 'VOIDED' AND status <> 'deleted'`
  return new Set(rows.map((r) => r.k))
}

export const billedKey = (subscriptionId: string, periodStart: Date, reason: string): string => `${subscriptionId}|${Math.floor(periodStart.getTime() / 1000)}|${reason}`

/** Per subscription, the highest billing sequence invoiced (voided invoices count: they were billed). */
export async function lastSequences(db: Db, scope: Scope, subscriptionIds: string[]): Promise<Map<string, number>> {
  if (subscriptionIds.length === 0) return new Map()
  const rows = await db<{ subscription_id: string; seq: number }[]>`SELECT subscription_id, max(billing_sequence)::int AS seq FROM invoices
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND subscription_id = ANY(${subscriptionIds}::text[])
      AND billing_sequence IS NOT NULL AND status <> 'deleted'
    GROUP BY subscription_id`
  return new Map(rows.map((r) => [r.subscription_id, r.seq]))
}

/** Where usage of a subscription was last billed by an auto-invoice threshold inside [from, to). */
export async function lastThresholdCut(db: Db, scope: Scope, subscriptionId: string, from: Date, to: Date): Promise<Date | undefined> {
  const [row] = await db<{ cut: Date | null }[]>`SELECT max(period_end) AS cut FROM invoices
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND subscription_id = ${subscriptionId}
      AND billing_reason = 'AUTO_INVOICE_THRESHOLD' AND invoice_status <> 'VOIDED' AND status <> 'deleted'
      AND period_end > ${from} AND period_end < ${to}`
  return row?.cut ?? undefined
}

/** Subscription drafts of every scope whose grace period ended, oldest first. */
export async function draftsToFinalize(db: Db, now: Date, limit: number, reach: Fragment, except: string[] = []): Promise<InvoiceRow[]> {
  const rows = await db`SELECT * FROM invoices WHERE invoice_status = 'DRAFT' AND finalize_after <= ${now} AND status = 'published' AND ${reach}
      AND NOT (id = ANY(${except}::text[]))
    ORDER BY finalize_after, id LIMIT ${limit}`
  return rows.map((r) => decodeRow<InvoiceRow>(INVOICES, r))
}

/** Finalized invoices of every scope past their due date, still owing, not yet announced as overdue. */
export async function overdue(db: Db, now: Date, limit: number, reach: Fragment): Promise<InvoiceRow[]> {
  const rows = await db`SELECT * FROM invoices WHERE invoice_status = 'FINALIZED' AND overdue_notified_at IS NULL AND due_date < ${now} AND ${reach}
    AND amount_remaining > 0 AND payment_status NOT IN ('SUCCEEDED', 'OVERPAID', 'REFUNDED', 'PARTIALLY_REFUNDED') AND status = 'published'
    ORDER BY due_date, id LIMIT ${limit}`
  return rows.map((r) => decodeRow<InvoiceRow>(INVOICES, r))
}

/** How many times an association's coupon already discounted an invoice that stands. */
export async function redemptionsOf(db: Db, scope: Scope, associationIds: string[], exceptInvoiceId = ''): Promise<Map<string, number>> {
  if (associationIds.length === 0) return new Map()
  const rows = await db<{ id: string; n: number }[]>`SELECT a.coupon_association_id AS id, count(DISTINCT a.invoice_id)::int AS n
    FROM coupon_applications a JOIN invoices i ON i.id = a.invoice_id
    WHERE a.tenant_id = ${scope.tenantId} AND a.environment_id = ${scope.environmentId} AND a.coupon_association_id = ANY(${associationIds}::text[])
      AND a.invoice_id <> ${exceptInvoiceId} AND a.discounted_amount > 0 AND i.invoice_status <> 'VOIDED' AND i.status <> 'deleted'
    GROUP BY a.coupon_association_id`
  return new Map(rows.map((r) => [r.id, r.n]))
}

/** Whether credit notes that are not voided stand on the invoice. */
export async function hasLiveCreditNotes(db: Db, scope: Scope, invoiceId: string): Promise<boolean> {
  const [row] = await db<{ n: number }[]>`SELECT count(*)::int AS n FROM credit_notes WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}
    AND invoice_id = ${invoiceId} AND credit_note_status <> 'VOIDED' AND status <> 'deleted'`
  return row.n > 0
}

/**
 * Records that the overdue notice of these invoices went out (bookkeeping of the notice, not a change of the
 * invoice), for those not yet notified: the row lock the update takes makes a concurrent run skip them.
 */
export async function markOverdue(db: Db, scope: Scope, ids: string[], at: Date): Promise<InvoiceRow[]> {
  const rows = await db`UPDATE invoices SET overdue_notified_at = ${at}
    WHERE id = ANY(${ids}::text[]) AND tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND overdue_notified_at IS NULL RETURNING *`
  return rows.map((r) => decodeRow<InvoiceRow>(INVOICES, r))
}

/**
 * Many records in one statement, passed as one JSON parameter: a billing run's page of invoices would
 * otherwise bind tens of thousands of parameters, which the embedded engine parses far more slowly.
 */
export async function insertMany<T>(db: Db, table: RecordTable, scope: Scope, audit: { by: string; at: Date }, rows: Record<string, unknown>[]): Promise<T[]> {
  if (rows.length === 0) return []
  const stamp = { tenant_id: scope.tenantId, environment_id: scope.environmentId, created_at: audit.at, created_by: audit.by, updated_at: audit.at, updated_by: audit.by }
  const json = rows.map((r) => toWire({ id: newId(table.prefix), ...stamp, ...r }) as Record<string, unknown>)
  // Only the columns given: the others take their defaults.
  const columns = db([...new Set(json.flatMap((r) => Object.keys(r)))])
  const out = await db`INSERT INTO ${db(table.name)} (${columns})
    SELECT ${columns} FROM jsonb_populate_recordset(NULL::${db(table.name)}, ${db.json(json as never)}) RETURNING *`
  return out.map((row) => decodeRow<T>(table, row))
}

export interface CustomerSummaryRow {
  currency: string
  total_invoice_count: string
  total_revenue_amount: string
  unpaid_invoice_count: string
  total_unpaid_amount: string
  overdue_invoice_count: string
  total_overdue_amount: string
  unpaid_usage_charges: string
  unpaid_fixed_charges: string
  last_at: Date
}

/**
 * A customer's finalized invoices summed per currency: revenue (totals), what is unpaid (amount_remaining
 * of invoices not paid in full), what of that is past its due date, and the unpaid lines' usage and fixed charges.
 */
export async function customerSummaries(db: Db, scope: Scope, customerId: string, now: Date): Promise<CustomerSummaryRow[]> {
  return db<CustomerSummaryRow[]>`
    WITH inv AS (
      SELECT id, currency, total, amount_remaining, due_date, created_at, amount_remaining > 0 AS unpaid
      FROM invoices
      WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND customer_id = ${customerId}
        AND status = 'published' AND invoice_status = 'FINALIZED'
    ), lines AS (
      SELECT inv.currency,
             COALESCE(SUM(l.amount) FILTER (WHERE l.price_type = 'USAGE'), 0) AS usage,
             COALESCE(SUM(l.amount) FILTER (WHERE l.price_type IS DISTINCT FROM 'USAGE'), 0) AS fixed
      FROM inv JOIN invoice_line_items l ON l.invoice_id = inv.id AND l.status = 'published'
      WHERE inv.unpaid
      GROUP BY inv.currency
    )
    SELECT inv.currency,
           COUNT(*)::text AS total_invoice_count,
           SUM(total)::text AS total_revenue_amount,
           COUNT(*) FILTER (WHERE unpaid)::text AS unpaid_invoice_count,
           COALESCE(SUM(amount_remaining) FILTER (WHERE unpaid), 0)::text AS total_unpaid_amount,
           COUNT(*) FILTER (WHERE unpaid AND due_date < ${now})::text AS overdue_invoice_count,
           COALESCE(SUM(amount_remaining) FILTER (WHERE unpaid AND due_date < ${now}), 0)::text AS total_overdue_amount,
           COALESCE(MAX(lines.usage), 0)::text AS unpaid_usage_charges,
           COALESCE(MAX(lines.fixed), 0)::text AS unpaid_fixed_charges,
           MAX(inv.created_at) AS last_at
    FROM inv LEFT JOIN lines ON lines.currency = inv.currency
    GROUP BY inv.currency
    ORDER BY inv.currency`
}

/** The newest invoice of each subscription, by subscription id. */
export async function latestOf(db: Db, scope: Scope, subscriptionIds: string[]): Promise<Map<string, InvoiceRow>> {
  if (subscriptionIds.length === 0) return new Map()
  const rows = await db`SELECT DISTINCT ON (subscription_id) * FROM invoices
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND subscription_id = ANY(${subscriptionIds}::text[]) AND status = 'published'
    ORDER BY subscription_id, created_at DESC, id DESC`
  return new Map(rows.map((r) => [r.subscription_id as string, decodeRow<InvoiceRow>(INVOICES, r)]))
}
