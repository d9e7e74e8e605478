// ClickHouse counts behind the usage reconciliation report (docs/analytics.md, "Reconciliation"): a customer's events
// of a range per event name as the pipeline recorded them — stored (events), dropped as duplicates and rejected
// (event_drop_counts, sql/clickhouse/0006), cancelled by corrections (event_cancellations, sql/clickhouse/0010) — and,
// per meter, the counted events that finalized invoices saw.
import type { ClickHouse } from '../../../infra/clickhouse.ts'
import { chDateTime, sqlString } from '../../../infra/ch-literals.ts'
import type { Scope } from '../../../core/scope.ts'
import type { AnalyticsMeter } from './store.ts'

export interface EventOutcomes {
  stored: number
  duplicates: number
  rejected: number
  /** Stored events cancelled (or amended: the original is cancelled) by usage corrections. */
  corrected: number
}

interface CustomerRange {
  scope: Scope
  externalCustomerId: string
  start: Date
  end: Date
}

const SCOPE = 'tenant_id = {tenant:String} AND environment_id = {env:String} AND external_customer_id = {customer:String}'
const params = (q: CustomerRange) => ({ tenant: q.scope.tenantId, env: q.scope.environmentId, customer: q.externalCustomerId, start: chDateTime(q.start), end: chDateTime(q.end) })
const RANGE = "timestamp >= {start:DateTime64(3, 'UTC')} AND timestamp < {end:DateTime64(3, 'UTC')}"

/** Per event name with any: events of [start, end) (by their timestamp) stored, dropped as duplicates, rejected, corrected. */
export async function eventOutcomes(ch: ClickHouse, q: CustomerRange): Promise<Map<string, EventOutcomes>> {
  const rs = await ch.client.query({
    query: `SELECT event_name, 'stored' AS kind, toString(count()) AS n FROM events WHERE ${SCOPE} AND ${RANGE} GROUP BY event_name
            UNION ALL
            SELECT event_name, kind, toString(sum(events)) AS n FROM event_drop_counts WHERE ${SCOPE} AND ${RANGE} GROUP BY event_name, kind
            UNION ALL
            SELECT event_name, 'corrected' AS kind, toString(uniqExact(event_id)) AS n FROM event_cancellations WHERE ${SCOPE} AND ${RANGE} GROUP BY event_name`,
    query_params: params(q),
    format: 'JSONEachRow',
  })
  const out = new Map<string, EventOutcomes>()
  for (const r of await rs.json<{ event_name: string; kind: string; n: string }>()) {
    const o = out.get(r.event_name) ?? { stored: 0, duplicates: 0, rejected: 0, corrected: 0 }
    if (r.kind === 'stored') o.stored += Number(r.n)
    else if (r.kind === 'corrected') o.corrected += Number(r.n)
    else if (r.kind === 'duplicate') o.duplicates += Number(r.n)
    else o.rejected += Number(r.n)
    out.set(r.event_name, o)
  }
  return out
}

export interface BilledWindow {
  start: Date
  end: Date
  /** When the invoice was finalized: the usage it billed was read just before. */
  finalizedAt: Date
  /** When its usage was last settled by a usage adjustment (else finalizedAt): the usage the adjustment read. */
  settledAt: Date
}

/** A meter's events in the windows finalized invoices billed: as the invoices saw them, and as stored now. */
export interface BilledCount {
  /** Counted and stored (inserted) by the time each window's invoice was finalized, less what was cancelled by then. */
  billed: number
  /** Likewise by the time each window was last settled (its last usage adjustment): billed plus what adjustments settled. */
  settled: number
  /** Counted now in the same windows: late events and corrections since make it differ (unsettled). */
  current: number
}

/**
 * Events the meter counted in the windows that finalized invoices billed, and had been stored (inserted) by the time
 * each was finalized: what the invoices saw. An event stored after its window's invoice was finalized is counted
 * but not billed; a cancel row (sign -1, sql/clickhouse/0010) counts by the time its cancellation was stored.
 */
export async function billedEvents(ch: ClickHouse, q: Omit<CustomerRange, 'start' | 'end'> & { meter: AnalyticsMeter; windows: BilledWindow[] }): Promise<BilledCount> {
  if (q.windows.length === 0) return { billed: 0, settled: 0, current: 0 }
  const p: Record<string, unknown> = {
    tenant: q.scope.tenantId,
    env: q.scope.environmentId,
    customer: q.externalCustomerId,
    name: q.meter.eventName,
    start: chDateTime(new Date(Math.min(...q.windows.map((w) => w.start.getTime())))),
    end: chDateTime(new Date(Math.max(...q.windows.map((w) => w.end.getTime())))),
  }
  const within = (i: number) => `m.timestamp >= {a${i}:DateTime64(3, 'UTC')} AND m.timestamp < {b${i}:DateTime64(3, 'UTC')}`
  q.windows.forEach((w, i) => {
    p[`a${i}`] = chDateTime(w.start)
    p[`b${i}`] = chDateTime(w.end)
    p[`f${i}`] = chDateTime(w.finalizedAt)
    p[`s${i}`] = chDateTime(w.settledAt)
  })
  const windows = q.windows.map((_, i) => `(${within(i)})`).join(' OR ')
  const seenBy = (at: string) => q.windows.map((_, i) => `(${within(i)} AND if(m.sign > 0, e.inserted_at, c.inserted_at) <= {${at}${i}:DateTime64(3, 'UTC')})`).join(' OR ')
  const rs = await ch.client.query({
    query: `SELECT toString(sumIf(m.sign, ${seenBy('f')})) AS billed, toString(sumIf(m.sign, ${seenBy('s')})) AS settled, toString(sum(m.sign)) AS current
            FROM meter_usage AS m
            INNER JOIN (SELECT id, inserted_at FROM events WHERE ${SCOPE} AND event_name = {name:String} AND ${RANGE}) AS e ON m.event_id = e.id
            LEFT JOIN (SELECT event_id, inserted_at FROM event_cancellations WHERE ${SCOPE} AND event_name = {name:String} AND ${RANGE}) AS c ON m.event_id = c.event_id
            WHERE m.tenant_id = {tenant:String} AND m.environment_id = {env:String} AND m.meter_id = ${sqlString(q.meter.meterId)} AND m.revision = ${q.meter.revision}
              AND m.external_customer_id = {customer:String} AND m.timestamp >= {start:DateTime64(3, 'UTC')} AND m.timestamp < {end:DateTime64(3, 'UTC')}
              AND (${windows})`,
    query_params: p,
    format: 'JSONEachRow',
  })
  const [row] = await rs.json<{ billed: string; settled: string; current: string }>()
  return { billed: Number(row?.billed ?? 0), settled: Number(row?.settled ?? 0), current: Number(row?.current ?? 0) }
}

/**
 * The events the meter counts in [start, end) that were stored (inserted) after `after` and by `until`: the late events
 * a usage adjustment settles, the first `limit` ids in the order they were stored, and how many in all.
 */
export async function lateEvents(ch: ClickHouse, q: CustomerRange & { meter: Pick<AnalyticsMeter, 'meterId' | 'revision' | 'eventName'>; after: Date; until: Date; limit: number }): Promise<{ ids: string[]; count: number }> {
  const rs = await ch.client.query({
    query: `SELECT toString(count()) AS n, groupArray(${Math.max(1, Math.trunc(q.limit))})(id) AS ids FROM (
              SELECT e.id AS id FROM meter_usage AS m
              INNER JOIN (SELECT id, inserted_at FROM events WHERE ${SCOPE} AND event_name = {name:String} AND ${RANGE}
                            AND inserted_at > {after:DateTime64(3, 'UTC')} AND inserted_at <= {until:DateTime64(3, 'UTC')}) AS e ON m.event_id = e.id
              WHERE m.tenant_id = {tenant:String} AND m.environment_id = {env:String} AND m.meter_id = ${sqlString(q.meter.meterId)} AND m.revision = ${q.meter.revision}
                AND m.external_customer_id = {customer:String} AND m.timestamp >= {start:DateTime64(3, 'UTC')} AND m.timestamp < {end:DateTime64(3, 'UTC')} AND m.sign > 0
              ORDER BY e.inserted_at, e.id)`,
    query_params: { ...params(q), name: q.meter.eventName, after: chDateTime(q.after), until: chDateTime(q.until) },
    format: 'JSONEachRow',
  })
  const [row] = await rs.json<{ n: string; ids: string[] }>()
  return { ids: row?.ids ?? [], count: Number(row?.n ?? 0) }
}
