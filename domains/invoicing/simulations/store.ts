// SQL of pricing simulations: the simulation rows, each subscription's result, a customer's results added up, and
// the coupon uses the stored invoices of the simulated billing points were computed with.
import type { CouponUse } from '../../../core/billing/coupons.ts'
import { D, type Decimal } from '../../../core/money.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Db } from '../../../infra/postgres.ts'

type SimulationStatus = 'pending' | 'running' | 'completed' | 'failed'

export interface SimulationRow {
  id: string
  tenant_id: string
  environment_id: string
  name: string
  start_time: Date
  end_time: Date
  customer_ids: string[] | null
  candidate: Record<string, unknown>
  currency: string
  sim_status: SimulationStatus
  processed: number
  total: number | null
  totals: Record<string, unknown> | null
  distribution: Record<string, unknown>[] | null
  error: string | null
  created_at: Date
  created_by: string | null
  started_at: Date | null
  finished_at: Date | null
}

/** A customer's results added up over its subscriptions; lines as stored, one list per subscription. */
export interface CustomerResult {
  customer_id: string
  current: Decimal
  candidate: Decimal
  invoices: number
  lines: { price_id: string | null; current: string; candidate: string }[][]
}

export interface ResultRow {
  simulation_id: string
  subscription_id: string
  customer_id: string
  current: Decimal
  candidate: Decimal
  invoices: number
  lines: { price_id: string | null; current: string; candidate: string }[]
}

export async function insertSimulation(db: Db, row: Pick<SimulationRow, 'id' | 'tenant_id' | 'environment_id' | 'name' | 'start_time' | 'end_time' | 'customer_ids' | 'candidate' | 'currency' | 'created_at' | 'created_by'>): Promise<SimulationRow> {
  const [created] = await db<SimulationRow[]>`INSERT INTO pricing_simulations (id, tenant_id, environment_id, name, start_time, end_time, customer_ids, candidate, currency, created_at, created_by)
    VALUES (${row.id}, ${row.tenant_id}, ${row.environment_id}, ${row.name}, ${row.start_time}, ${row.end_time}, ${row.customer_ids}::text[], ${db.json(row.candidate as never)},
            ${row.currency}, ${row.created_at}, ${row.created_by}) RETURNING *`
  return created
}

export async function findSimulation(db: Db, scope: Scope, id: string): Promise<SimulationRow | undefined> {
  const [row] = await db<SimulationRow[]>`SELECT * FROM pricing_simulations WHERE id = ${id} AND tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}`
  return row
}

/** Takes a pending simulation, or a running one whose process stopped (no heartbeat since `staleBefore`), to run it. */
export async function claim(db: Db, id: string, now: Date, staleBefore: Date): Promise<SimulationRow | undefined> {
  const [row] = await db<SimulationRow[]>`UPDATE pricing_simulations SET sim_status = 'running', started_at = ${now}, heartbeat_at = ${now}, processed = 0, total = NULL
    WHERE id = ${id} AND (sim_status = 'pending' OR (sim_status = 'running' AND heartbeat_at < ${staleBefore})) RETURNING *`
  return row
}

/** Simulations waiting to run, or left running by a stopped process. */
export async function openSimulations(db: Db, staleBefore: Date, limit: number): Promise<string[]> {
  const rows = await db<{ id: string }[]>`SELECT id FROM pricing_simulations
    WHERE sim_status = 'pending' OR (sim_status = 'running' AND heartbeat_at < ${staleBefore}) ORDER BY created_at LIMIT ${limit}`
  return rows.map((r) => r.id)
}

export async function recordProgress(db: Db, id: string, processed: number, total: number, now: Date): Promise<void> {
  await db`UPDATE pricing_simulations SET processed = ${processed}, total = ${total}, heartbeat_at = ${now} WHERE id = ${id}`
}

export async function complete(db: Db, id: string, totals: Record<string, unknown>, distribution: Record<string, unknown>[], now: Date): Promise<void> {
  await db`UPDATE pricing_simulations SET sim_status = 'completed', totals = ${db.json(totals as never)}, distribution = ${db.json(distribution as never)}, finished_at = ${now}, heartbeat_at = ${now} WHERE id = ${id}`
}

export async function fail(db: Db, id: string, error: string, now: Date): Promise<void> {
  await db`UPDATE pricing_simulations SET sim_status = 'failed', error = ${error}, finished_at = ${now} WHERE id = ${id}`
}

/** A rerun (after a stopped process) starts over. */
export async function clearResults(db: Db, id: string): Promise<void> {
  await db`DELETE FROM pricing_simulation_results WHERE simulation_id = ${id}`
}

export async function insertResults(db: Db, rows: ResultRow[]): Promise<void> {
  if (rows.length === 0) return
  const values = rows.map((r) => ({ ...r, current: r.current.toFixed(), candidate: r.candidate.toFixed() }))
  await db`INSERT INTO pricing_simulation_results SELECT * FROM jsonb_populate_recordset(NULL::pricing_simulation_results, ${db.json(values as never)})`
}

export type CustomerSort = 'customer_id' | 'difference' | 'abs_difference' | 'difference_percent'

const decode = (r: { customer_id: string; current: string; candidate: string; invoices: number; lines: CustomerResult['lines'] }): CustomerResult => ({
  customer_id: r.customer_id,
  current: new D(r.current),
  candidate: new D(r.candidate),
  invoices: r.invoices,
  lines: r.lines,
})

/** A page of customers' results, sorted; ties in customer id order. */
export async function customerPage(db: Db, id: string, p: { sort: CustomerSort; order: 'asc' | 'desc'; limit: number; offset: number }): Promise<{ items: CustomerResult[]; total: number }> {
  const key = {
    customer_id: db`customer_id`,
    difference: db`candidate - current`,
    abs_difference: db`abs(candidate - current)`,
    // No base (current 0): sorted as the largest move its way.
    difference_percent: db`CASE WHEN current = 0 THEN sign(candidate - current) * 1e30 ELSE (candidate - current) / abs(current) END`,
  }[p.sort]
  const direction = p.order === 'desc' ? db`DESC` : db`ASC`
  const rows = await db`WITH c AS (SELECT customer_id, sum(current) AS current, sum(candidate) AS candidate, sum(invoices)::int AS invoices, jsonb_agg(lines) AS lines
      FROM pricing_simulation_results WHERE simulation_id = ${id} GROUP BY customer_id)
    SELECT customer_id, current::text, candidate::text, invoices, lines FROM c ORDER BY ${key} ${direction}, customer_id LIMIT ${p.limit} OFFSET ${p.offset}`
  const [{ n }] = await db<{ n: number }[]>`SELECT count(DISTINCT customer_id)::int AS n FROM pricing_simulation_results WHERE simulation_id = ${id}`
  return { items: rows.map((r) => decode(r as never)), total: n }
}

/**
 * Customers' results in customer id order after `after`: the totals and the export read them a page at a time. The
 * totals need no lines (`lines: false`: each customer's lines are empty).
 */
export async function customersAfter(db: Db, id: string, after: string, limit: number, opts: { lines: boolean }): Promise<CustomerResult[]> {
  const lines = opts.lines ? db`jsonb_agg(lines)` : db`'[]'::jsonb`
  const rows = await db`SELECT customer_id, sum(current)::text AS current, sum(candidate)::text AS candidate, sum(invoices)::int AS invoices, ${lines} AS lines
    FROM pricing_simulation_results WHERE simulation_id = ${id} AND customer_id > ${after} GROUP BY customer_id ORDER BY customer_id LIMIT ${limit}`
  return rows.map((r) => decode(r as never))
}

/** The coupon uses the stored invoices of these subscriptions' billing points were computed with, by subscription and sequence. */
export async function billedCouponUses(db: Db, scope: Scope, subscriptionIds: string[]): Promise<Map<string, CouponUse[]>> {
  if (subscriptionIds.length === 0) return new Map()
  const rows = await db<{ subscription_id: string; billing_sequence: number; coupon_uses: CouponUse[] }[]>`SELECT subscription_id, billing_sequence, coupon_uses FROM invoices
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND subscription_id = ANY(${subscriptionIds}::text[])
      AND billing_sequence IS NOT NULL AND invoice_status <> 'VOIDED' AND status <> 'deleted' AND jsonb_array_length(coupon_uses) > 0`
  return new Map(rows.map((r) => [`${r.subscription_id}:${r.billing_sequence}`, r.coupon_uses]))
}
