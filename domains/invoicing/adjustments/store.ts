// The SQL of usage adjustments: each environment's settings, the finalized usage lines within their environment's
// horizon, and the adjustments issued for them (a row per line and usage settled; sql/postgres/0875).
import { newId } from '../../../core/ids.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Db } from '../../../infra/postgres.ts'
import type { Fragment } from '../../../infra/records.ts'
import type { TaxRate } from '../../../core/billing/taxes.ts'
import type { LineItemRow } from '../invoices/store.ts'

export type Method = 'next_invoice' | 'own_invoice'

export interface SettingsRow {
  late_usage: 'adjust' | 'ignore'
  /** More usage: a line on the subscription's next invoice (default), or an invoice of its own. */
  method: Method
  minimum_amount: string
  horizon_periods: number
  updated_at: Date | null
}

export const DEFAULT_SETTINGS: SettingsRow = { late_usage: 'adjust', method: 'next_invoice', minimum_amount: '0', horizon_periods: 3, updated_at: null }

export async function settingsOf(db: Db, scope: Scope): Promise<SettingsRow | undefined> {
  const [row] = await db<SettingsRow[]>`SELECT late_usage, method, minimum_amount::text AS minimum_amount, horizon_periods, updated_at
    FROM usage_adjustment_settings WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}`
  return row
}

export async function saveSettings(db: Db, scope: Scope, s: Omit<SettingsRow, 'updated_at'>, at: Date, by: string): Promise<void> {
  await db`INSERT INTO usage_adjustment_settings (tenant_id, environment_id, late_usage, method, minimum_amount, horizon_periods, updated_at, updated_by)
    VALUES (${scope.tenantId}, ${scope.environmentId}, ${s.late_usage}, ${s.method}, ${s.minimum_amount}, ${s.horizon_periods}, ${at}, ${by})
    ON CONFLICT (tenant_id, environment_id) DO UPDATE SET late_usage = EXCLUDED.late_usage, method = EXCLUDED.method, minimum_amount = EXCLUDED.minimum_amount,
      horizon_periods = EXCLUDED.horizon_periods, updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by`
}

/** A finalized usage line the job looks at, with what it settled so far and its environment's settings. */
export interface CandidateRow {
  id: string
  tenant_id: string
  environment_id: string
  invoice_id: string
  /** Who the invoice is to, and its subscription (a parent's, for a grouped or inherited child's line). */
  invoice_customer_id: string
  invoice_subscription_id: string
  /** The line's customer: whose usage it billed. */
  external_customer_id: string
  subscription_id: string
  subscription_line_item_id: string
  meter_id: string
  display_name: string | null
  currency: string
  /** numeric text: what the invoice billed. */
  quantity: string
  /** The invoice's rates left this line out (it had something to tax and no tax): its adjustment is not taxed either. */
  untaxed: boolean
  /** numeric text: the last adjustment's settled usage, if any. */
  adjusted_usage: string | null
  /** How many adjustments the line had: part of the next one's key, so usage that comes back to an earlier value is settled again. */
  adjustments: number
  usage_start: Date
  usage_end: Date
  minimum_amount: string
  method: Method
  /** The meter's event name: corrections and late events of the line are of it. */
  event_name: string
  /** When the line's usage was last settled: its last adjustment (scheduled or issued), else the invoice's finalization. */
  settled_at: Date
}

/**
 * The corrections (usage_corrections, 0870) of the line's customer and meter's events in its window applied since it
 * was last settled (`settled_at`): what an adjustment now settles, named on it — `limit` ids and how many in all.
 */
export async function correctionsSince(db: Db, scope: Scope, line: CandidateRow, limit: number): Promise<{ ids: string[]; count: number }> {
  const rows = await db<{ id: string; total: number }[]>`
    SELECT id, (count(*) OVER ())::int AS total FROM usage_corrections
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND external_customer_id = ${line.external_customer_id}
      AND event_name = ${line.event_name} AND event_timestamp >= ${line.usage_start} AND event_timestamp < ${line.usage_end} AND created_at >= ${line.settled_at}
    ORDER BY created_at, id
    LIMIT ${limit}`
  return { ids: rows.map((r) => r.id), count: rows[0]?.total ?? 0 }
}

const LINE = (db: Db) => db`
    SELECT li.id, li.tenant_id, li.environment_id, li.invoice_id, i.customer_id AS invoice_customer_id, i.subscription_id AS invoice_subscription_id,
           c.external_id AS external_customer_id, li.subscription_id, li.subscription_line_item_id, li.meter_id, li.display_name, i.currency,
           li.quantity::text AS quantity, (li.tax_amount = 0 AND li.amount - li.line_item_discount - li.invoice_level_discount > 0) AS untaxed,
           (SELECT a.settled_usage::text FROM usage_adjustments a WHERE a.invoice_line_item_id = li.id ORDER BY a.seq DESC LIMIT 1) AS adjusted_usage,
           (SELECT count(*) FROM usage_adjustments a WHERE a.invoice_line_item_id = li.id)::int AS adjustments,
           (li.calculation->>'usage_start')::timestamptz AS usage_start, (li.calculation->>'usage_end')::timestamptz AS usage_end,
           COALESCE(s.minimum_amount, 0)::text AS minimum_amount, COALESCE(s.method, 'next_invoice') AS method, m.event_name,
           COALESCE((SELECT max(a.created_at) FROM usage_adjustments a WHERE a.invoice_line_item_id = li.id AND a.status IN ('scheduled', 'issued')), i.finalized_at) AS settled_at
    FROM invoice_line_items li
    JOIN invoices i ON i.id = li.invoice_id AND i.tenant_id = li.tenant_id AND i.environment_id = li.environment_id
    JOIN customers c ON c.id = li.customer_id
    JOIN meters m ON m.id = li.meter_id
    LEFT JOIN usage_adjustment_settings s ON s.tenant_id = li.tenant_id AND s.environment_id = li.environment_id`

/**
 * Usage lines of finalized subscription invoices whose usage window ended within `horizon_periods` of its own
 * length before `now`, in environments that adjust, after `after` (by line id). Left out: lines whose allowance
 * resets inside the period, lines under a commitment and lines priced in a custom price unit (their amount is not
 * the line's price of its usage in the invoice's currency).
 */
export async function candidates(db: Db, now: Date, after: string, limit: number, reach: Fragment): Promise<CandidateRow[]> {
  return db<CandidateRow[]>`${LINE(db)}
    WHERE li.id > ${after} AND li.status = 'published' AND li.price_type = 'USAGE' AND li.meter_id IS NOT NULL
      AND li.subscription_line_item_id IS NOT NULL AND li.commitment_info IS NULL AND li.price_unit_amount IS NULL
      AND li.calculation->>'kind' = 'usage' AND li.calculation->>'allowance_windows' IS NULL
      AND (li.calculation->>'usage_end')::timestamptz > (li.calculation->>'usage_start')::timestamptz
      AND i.invoice_type = 'SUBSCRIPTION' AND i.invoice_status = 'FINALIZED' AND i.status = 'published'
      AND COALESCE(s.late_usage, 'adjust') = 'adjust'
      AND (li.calculation->>'usage_end')::timestamptz > ${now}::timestamptz - COALESCE(s.horizon_periods, 3)
            * ((li.calculation->>'usage_end')::timestamptz - (li.calculation->>'usage_start')::timestamptz)
      AND ${reach}
    ORDER BY li.id
    LIMIT ${limit}`
}

/** One line as candidates() reads it, whatever the settings now (a pending adjustment of it is finished regardless). */
export async function candidateById(db: Db, scope: Scope, id: string): Promise<CandidateRow> {
  const [row] = await db<CandidateRow[]>`${LINE(db)} WHERE li.tenant_id = ${scope.tenantId} AND li.environment_id = ${scope.environmentId} AND li.id = ${id}`
  return row
}

export interface AdjustmentRow {
  id: string
  invoice_id: string
  invoice_line_item_id: string
  adjustment_key: string
  /** numeric text, as the columns below. */
  settled_usage: string
  usage_delta: string
  amount: string
  tax: string
  total: string
  kind: 'charge' | 'credit'
  /** pending: claimed, its document not made yet; scheduled: waiting for the subscription's next invoice; issued. */
  status: 'pending' | 'scheduled' | 'issued'
  method: Method | 'credit_note'
  /** The subscription whose next invoice carries it (next_invoice), and by when that invoice is expected. */
  subscription_id: string | null
  carry_by: Date | null
  /** The original invoice's percentage rates, as applied to it (taxes_applied snapshots). */
  tax_rates: TaxRate[]
  correction_ids: string[]
  corrections: number
  late_event_ids: string[]
  late_events: number
  /** invoice: its own USAGE_ADJUSTMENT invoice, or the next invoice carrying it as a line; credit_note. */
  document_type: 'invoice' | 'credit_note' | null
  document_id: string | null
  created_at: Date
  issued_at: Date | null
}

export type Claim = Omit<AdjustmentRow, 'id' | 'document_type' | 'document_id' | 'created_at' | 'issued_at'>

const COLUMNS = (db: Db) =>
  db`a.id, a.invoice_id, a.invoice_line_item_id, a.adjustment_key, a.settled_usage::text AS settled_usage, a.usage_delta::text AS usage_delta, a.amount::text AS amount,
    a.tax::text AS tax, a.total::text AS total, a.kind, a.status, a.method, a.subscription_id, a.carry_by, a.tax_rates, a.correction_ids, a.corrections,
    a.late_event_ids, a.late_events, a.document_type, a.document_id, a.created_at, a.issued_at`

/** Claims the key: the row written now, or the one already holding it (a rerun, or another worker). */
export async function claim(db: Db, scope: Scope, a: Claim, at: Date): Promise<AdjustmentRow> {
  await db`INSERT INTO usage_adjustments (id, tenant_id, environment_id, invoice_id, invoice_line_item_id, adjustment_key, settled_usage, usage_delta, amount, tax, total, kind,
      status, method, subscription_id, carry_by, tax_rates, correction_ids, corrections, late_event_ids, late_events, created_at)
    VALUES (${newId('uadj')}, ${scope.tenantId}, ${scope.environmentId}, ${a.invoice_id}, ${a.invoice_line_item_id}, ${a.adjustment_key}, ${a.settled_usage},
      ${a.usage_delta}, ${a.amount}, ${a.tax}, ${a.total}, ${a.kind}, ${a.status}, ${a.method}, ${a.subscription_id}, ${a.carry_by}, ${db.json(a.tax_rates as never)},
      ${db.array(a.correction_ids)}::text[], ${a.corrections}, ${db.array(a.late_event_ids)}::text[], ${a.late_events}, ${at})
    ON CONFLICT (tenant_id, environment_id, adjustment_key) DO NOTHING`
  const [row] = await db<AdjustmentRow[]>`SELECT ${COLUMNS(db)} FROM usage_adjustments a
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND adjustment_key = ${a.adjustment_key}`
  return row
}

/** Issued: its document, or none when nothing was left to credit on the line. */
export async function markIssued(db: Db, id: string, documentType: 'invoice' | 'credit_note' | null, documentId: string | null, at: Date): Promise<void> {
  await db`UPDATE usage_adjustments SET status = 'issued', document_type = ${documentType}, document_id = ${documentId}, issued_at = ${at} WHERE id = ${id}`
}

type Scoped = AdjustmentRow & { tenant_id: string; environment_id: string }

/** Adjustments a stopped run left pending (claimed, document not yet recorded) of customers in `reach` (on li.customer_id), oldest first. */
export async function pending(db: Db, limit: number, reach: Fragment): Promise<Scoped[]> {
  return db`SELECT ${COLUMNS(db)}, a.tenant_id, a.environment_id FROM usage_adjustments a JOIN invoice_line_items li ON li.id = a.invoice_line_item_id
    WHERE a.status = 'pending' AND ${reach} ORDER BY a.seq LIMIT ${limit}`
}

/** Adjustments waiting for their subscription's next invoice, of customers in `reach`, after `after` (by seq). */
export async function scheduled(db: Db, after: string, limit: number, reach: Fragment): Promise<(Scoped & { seq: string })[]> {
  return db`SELECT ${COLUMNS(db)}, a.tenant_id, a.environment_id, a.seq::text AS seq FROM usage_adjustments a JOIN invoice_line_items li ON li.id = a.invoice_line_item_id
    WHERE a.status = 'scheduled' AND a.seq > ${after}::bigint AND ${reach} ORDER BY a.seq LIMIT ${limit}`
}

/** A scheduled adjustment taken back to be issued on its own invoice; none when the billing run carried it meanwhile. */
export async function unschedule(db: Db, id: string): Promise<boolean> {
  const rows = await db`UPDATE usage_adjustments SET status = 'pending', method = 'own_invoice' WHERE id = ${id} AND status = 'scheduled' RETURNING id`
  return rows.length === 1
}

/** A scheduled adjustment as the line its next invoice carries: with the adjusted line's names. */
export interface CarriedRow
  extends AdjustmentRow,
    Pick<LineItemRow, 'customer_id' | 'entity_id' | 'entity_type' | 'plan_id' | 'plan_display_name' | 'display_name' | 'price_id' | 'meter_id' | 'meter_display_name'> {
  line_subscription_id: string | null
  usage_start: Date
  usage_end: Date
}

const CARRIED = (db: Db, extra = db``) => db`SELECT ${COLUMNS(db)}, ${extra} li.customer_id, li.subscription_id AS line_subscription_id, li.entity_id, li.entity_type, li.plan_id, li.plan_display_name,
    li.display_name, li.price_id, li.meter_id, li.meter_display_name,
    (li.calculation->>'usage_start')::timestamptz AS usage_start, (li.calculation->>'usage_end')::timestamptz AS usage_end
  FROM usage_adjustments a JOIN invoice_line_items li ON li.id = a.invoice_line_item_id`

/** The scheduled adjustments of these subscriptions, oldest first. */
export async function scheduledFor(db: Db, scope: Scope, subscriptionIds: string[]): Promise<CarriedRow[]> {
  if (subscriptionIds.length === 0) return []
  return db<CarriedRow[]>`${CARRIED(db)} WHERE a.tenant_id = ${scope.tenantId} AND a.environment_id = ${scope.environmentId} AND a.status = 'scheduled'
    AND a.subscription_id = ANY(${db.array(subscriptionIds)}::text[]) ORDER BY a.seq`
}

/**
 * The adjustments each invoice carries as lines, in the order they were made: those marked with it, or with the voided
 * invoice it replaces (a recalculation computes the same billing point again, lines carried included), however many
 * replacements back. One statement for a batch of invoices (finalization reads a batch of drafts at once).
 */
export async function carriedBy(db: Db, scope: Scope, invoiceIds: string[]): Promise<(CarriedRow & { carrier_id: string })[]> {
  if (invoiceIds.length === 0) return []
  return db<(CarriedRow & { carrier_id: string })[]>`WITH RECURSIVE chain(carrier, id) AS (
      SELECT x, x FROM unnest(${db.array(invoiceIds)}::text[]) AS x
      UNION SELECT c.carrier, i.id FROM invoices i JOIN chain c ON i.recalculated_invoice_id = c.id
        WHERE i.tenant_id = ${scope.tenantId} AND i.environment_id = ${scope.environmentId})
    ${CARRIED(db, db`c.carrier AS carrier_id,`)} JOIN chain c ON c.id = a.document_id
    WHERE a.tenant_id = ${scope.tenantId} AND a.environment_id = ${scope.environmentId} AND a.method = 'next_invoice' AND a.status = 'issued' ORDER BY a.seq`
}

/** Marks scheduled adjustments carried by an invoice; how many were still scheduled. */
export async function markCarried(db: Db, scope: Scope, ids: string[], invoiceId: string, at: Date): Promise<number> {
  const rows = await db`UPDATE usage_adjustments SET status = 'issued', document_type = 'invoice', document_id = ${invoiceId}, issued_at = ${at}
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND id = ANY(${db.array(ids)}::text[]) AND status = 'scheduled' RETURNING id`
  return rows.length
}

export interface ListFilters {
  /** The adjusted invoice, or the invoice that issued or carries the adjustment. */
  invoice_id?: string
  customer_id?: string
  status?: AdjustmentRow['status']
  method?: AdjustmentRow['method']
}

export type ListedRow = AdjustmentRow & { customer_id: string; subscription_id: string | null }

/** The environment's adjustments, newest first, with the adjusted invoice's customer. */
export async function list(db: Db, scope: Scope, f: ListFilters, limit: number, offset: number): Promise<{ rows: ListedRow[]; total: number }> {
  const where = db`a.tenant_id = ${scope.tenantId} AND a.environment_id = ${scope.environmentId}
    ${f.invoice_id === undefined ? db`` : db`AND (a.invoice_id = ${f.invoice_id} OR a.document_id = ${f.invoice_id})`}
    ${f.customer_id === undefined ? db`` : db`AND i.customer_id = ${f.customer_id}`}
    ${f.status === undefined ? db`` : db`AND a.status = ${f.status}`}
    ${f.method === undefined ? db`` : db`AND a.method = ${f.method}`}`
  const rows = await db<ListedRow[]>`SELECT ${COLUMNS(db)}, i.customer_id FROM usage_adjustments a JOIN invoices i ON i.id = a.invoice_id
    WHERE ${where} ORDER BY a.seq DESC LIMIT ${limit} OFFSET ${offset}`
  const [{ n }] = await db<{ n: number }[]>`SELECT count(*)::int AS n FROM usage_adjustments a JOIN invoices i ON i.id = a.invoice_id WHERE ${where}`
  return { rows, total: n }
}
