// The SQL of usage adjustments: each environment's settings, the finalized usage lines within their environment's
// horizon, and the adjustments issued for them (a row per line and usage settled; sql/postgres/0875).
import { newId } from '../../../core/ids.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Db } from '../../../infra/postgres.ts'
import type { Fragment } from '../../../infra/records.ts'

export interface SettingsRow {
  late_usage: 'adjust' | 'ignore'
  minimum_amount: string
  horizon_periods: number
  updated_at: Date | null
}

export const DEFAULT_SETTINGS: SettingsRow = { late_usage: 'adjust', minimum_amount: '0', horizon_periods: 3, updated_at: null }

export async function settingsOf(db: Db, scope: Scope): Promise<SettingsRow | undefined> {
  const [row] = await db<SettingsRow[]>`SELECT late_usage, minimum_amount::text AS minimum_amount, horizon_periods, updated_at
    FROM usage_adjustment_settings WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}`
  return row
}

export async function saveSettings(db: Db, scope: Scope, s: Omit<SettingsRow, 'updated_at'>, at: Date, by: string): Promise<void> {
  await db`INSERT INTO usage_adjustment_settings (tenant_id, environment_id, late_usage, minimum_amount, horizon_periods, updated_at, updated_by)
    VALUES (${scope.tenantId}, ${scope.environmentId}, ${s.late_usage}, ${s.minimum_amount}, ${s.horizon_periods}, ${at}, ${by})
    ON CONFLICT (tenant_id, environment_id) DO UPDATE SET late_usage = EXCLUDED.late_usage, minimum_amount = EXCLUDED.minimum_amount,
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
}

/**
 * The corrections (usage_corrections, 0870) of the line's customer and meter's events in its window applied since it
 * was last settled (its last adjustment, else the invoice's finalization): what an adjustment now settles, named on it.
 */
export async function correctionsSince(db: Db, scope: Scope, lineId: string, limit: number): Promise<string[]> {
  const rows = await db<{ id: string }[]>`
    SELECT uc.id FROM invoice_line_items li
    JOIN invoices i ON i.id = li.invoice_id
    JOIN customers c ON c.id = li.customer_id
    JOIN meters m ON m.id = li.meter_id
    JOIN usage_corrections uc ON uc.tenant_id = li.tenant_id AND uc.environment_id = li.environment_id
      AND uc.external_customer_id = c.external_id AND uc.event_name = m.event_name
      AND uc.event_timestamp >= (li.calculation->>'usage_start')::timestamptz AND uc.event_timestamp < (li.calculation->>'usage_end')::timestamptz
      AND uc.created_at >= COALESCE((SELECT max(a.created_at) FROM usage_adjustments a WHERE a.invoice_line_item_id = li.id AND a.status = 'issued'), i.finalized_at)
    WHERE li.tenant_id = ${scope.tenantId} AND li.environment_id = ${scope.environmentId} AND li.id = ${lineId}
    ORDER BY uc.created_at, uc.id
    LIMIT ${limit}`
  return rows.map((r) => r.id)
}

const LINE = (db: Db) => db`
    SELECT li.id, li.tenant_id, li.environment_id, li.invoice_id, i.customer_id AS invoice_customer_id, i.subscription_id AS invoice_subscription_id,
           c.external_id AS external_customer_id, li.subscription_id, li.subscription_line_item_id, li.meter_id, li.display_name, i.currency,
           li.quantity::text AS quantity, (li.tax_amount = 0 AND li.amount - li.line_item_discount - li.invoice_level_discount > 0) AS untaxed,
           (SELECT a.settled_usage::text FROM usage_adjustments a WHERE a.invoice_line_item_id = li.id ORDER BY a.seq DESC LIMIT 1) AS adjusted_usage,
           (SELECT count(*) FROM usage_adjustments a WHERE a.invoice_line_item_id = li.id)::int AS adjustments,
           (li.calculation->>'usage_start')::timestamptz AS usage_start, (li.calculation->>'usage_end')::timestamptz AS usage_end,
           COALESCE(s.minimum_amount, 0)::text AS minimum_amount
    FROM invoice_line_items li
    JOIN invoices i ON i.id = li.invoice_id AND i.tenant_id = li.tenant_id AND i.environment_id = li.environment_id
    JOIN customers c ON c.id = li.customer_id
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
  status: 'pending' | 'issued'
  document_type: 'invoice' | 'credit_note' | null
  document_id: string | null
}

const COLUMNS = (db: Db) =>
  db`a.id, a.invoice_id, a.invoice_line_item_id, a.adjustment_key, a.settled_usage::text AS settled_usage, a.usage_delta::text AS usage_delta, a.amount::text AS amount,
    a.tax::text AS tax, a.total::text AS total, a.kind, a.status, a.document_type, a.document_id`

/** Claims the key: the row written now, or the one already holding it (a rerun, or another worker). */
export async function claim(db: Db, scope: Scope, a: Omit<AdjustmentRow, 'id' | 'status' | 'document_type' | 'document_id'>, at: Date): Promise<AdjustmentRow> {
  await db`INSERT INTO usage_adjustments (id, tenant_id, environment_id, invoice_id, invoice_line_item_id, adjustment_key, settled_usage, usage_delta, amount, tax, total, kind, created_at)
    VALUES (${newId('uadj')}, ${scope.tenantId}, ${scope.environmentId}, ${a.invoice_id}, ${a.invoice_line_item_id}, ${a.adjustment_key}, ${a.settled_usage},
      ${a.usage_delta}, ${a.amount}, ${a.tax}, ${a.total}, ${a.kind}, ${at})
    ON CONFLICT (tenant_id, environment_id, adjustment_key) DO NOTHING`
  const [row] = await db<AdjustmentRow[]>`SELECT ${COLUMNS(db)} FROM usage_adjustments a
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND adjustment_key = ${a.adjustment_key}`
  return row
}

/** Issued: its document, or none when nothing was left to credit on the line. */
export async function markIssued(db: Db, id: string, documentType: 'invoice' | 'credit_note' | null, documentId: string | null, at: Date): Promise<void> {
  await db`UPDATE usage_adjustments SET status = 'issued', document_type = ${documentType}, document_id = ${documentId}, issued_at = ${at} WHERE id = ${id}`
}

/** Adjustments a stopped run left pending (claimed, document not yet recorded) of customers in `reach` (on li.customer_id), oldest first. */
export async function pending(db: Db, limit: number, reach: Fragment): Promise<(AdjustmentRow & { tenant_id: string; environment_id: string })[]> {
  return db`SELECT ${COLUMNS(db)}, a.tenant_id, a.environment_id FROM usage_adjustments a JOIN invoice_line_items li ON li.id = a.invoice_line_item_id
    WHERE a.status = 'pending' AND ${reach} ORDER BY a.seq LIMIT ${limit}`
}
