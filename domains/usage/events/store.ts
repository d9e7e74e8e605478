// ClickHouse SQL for reading raw events back: keyset pages and the per-id lookup.
import type { Scope } from '../../../core/scope.ts'
import type { ClickHouse } from '../../../infra/clickhouse.ts'
import { chDateTime } from '../../../infra/ch-literals.ts'
import { EVENT_COLUMNS, type StoredEventRow } from '../../../infra/stored-events.ts'
import { NOT_CANCELLED } from '../corrections/store.ts'

export interface EventFilter {
  externalCustomerId?: string
  eventName?: string
  source?: string
  start?: Date
  end?: Date
  /** Keyset: events strictly older than this (timestamp, id); with `ascending`, strictly newer. */
  before?: { timestamp: Date; id: string }
  eventId?: string
  /** Property values, any of which matches (string or number properties alike). */
  properties?: Record<string, string[]>
}

export interface EventPage {
  limit: number
  offset?: number
  ascending?: boolean
}

function where(scope: Scope, f: EventFilter): { sql: string; params: Record<string, unknown> } {
  const parts = ['tenant_id = {tenant:String}', 'environment_id = {env:String}', NOT_CANCELLED]
  const params: Record<string, unknown> = { tenant: scope.tenantId, env: scope.environmentId }
  if (f.externalCustomerId !== undefined) {
    parts.push('external_customer_id = {customer:String}')
    params.customer = f.externalCustomerId
  }
  if (f.eventName !== undefined) {
    parts.push('event_name = {name:String}')
    params.name = f.eventName
  }
  if (f.source !== undefined) {
    parts.push('source = {source:String}')
    params.source = f.source
  }
  if (f.start) {
    parts.push("timestamp >= {start:DateTime64(3, 'UTC')}")
    params.start = chDateTime(f.start)
  }
  if (f.end) {
    parts.push("timestamp < {end:DateTime64(3, 'UTC')}")
    params.end = chDateTime(f.end)
  }
  if (f.eventId !== undefined) {
    parts.push('id = {eid:String}')
    params.eid = f.eventId
  }
  for (const [i, [key, values]] of Object.entries(f.properties ?? {}).entries()) {
    // A string property compares as text, a number as its JSON text: "5" matches both "5" and 5.
    parts.push(`(JSONExtractString(properties, {pk${i}:String}) IN {pv${i}:Array(String)} OR JSONExtractRaw(properties, {pk${i}:String}) IN {pv${i}:Array(String)})`)
    params[`pk${i}`] = key
    params[`pv${i}`] = values
  }
  return { sql: parts.join(' AND '), params }
}

export async function listEvents(ch: ClickHouse, scope: Scope, f: EventFilter, { limit, offset = 0, ascending = false }: EventPage): Promise<{ rows: StoredEventRow[]; total: number }> {
  const w = where(scope, f)
  const keyset = f.before ? ` AND (timestamp, id) ${ascending ? '>' : '<'} ({bt:DateTime64(3, 'UTC')}, {bid:String})` : ''
  const order = ascending ? 'ASC' : 'DESC'
  const [page, count] = await Promise.all([
    ch.client.query({
      query: `SELECT ${EVENT_COLUMNS} FROM events WHERE ${w.sql}${keyset} ORDER BY timestamp ${order}, id ${order} LIMIT {limit:UInt32} OFFSET {offset:UInt32}`,
      query_params: { ...w.params, limit, offset, bt: f.before ? chDateTime(f.before.timestamp) : undefined, bid: f.before?.id },
      format: 'JSONEachRow',
    }),
    ch.client.query({ query: `SELECT toString(count()) AS n FROM events WHERE ${w.sql}`, query_params: w.params, format: 'JSONEachRow' }),
  ])
  const rows = await page.json<StoredEventRow>()
  const [{ n }] = await count.json<{ n: string }>()
  return { rows, total: Number(n) }
}

interface DedupKeyRow {
  external_customer_id: string
  event_name: string
  timestamp: string
}

export interface DropRow {
  kind: string
  reason: string
  timestamp: string
  received_at: string
}

/** The stored event of an id (found through its dedup key) and every dropped copy of it. */
export async function lookupEvent(ch: ClickHouse, scope: Scope, id: string): Promise<{ stored?: StoredEventRow; drops: DropRow[] }> {
  const params = { tenant: scope.tenantId, env: scope.environmentId, id }
  const scoped = 'tenant_id = {tenant:String} AND environment_id = {env:String}'
  const [keys, drops] = await Promise.all([
    ch.client.query({
      query: `SELECT external_customer_id, event_name, timestamp FROM event_ids WHERE ${scoped} AND event_id = {id:String} LIMIT 1`,
      query_params: params,
      format: 'JSONEachRow',
    }),
    ch.client.query({
      query: `SELECT kind, reason, timestamp, received_at FROM event_drops WHERE ${scoped} AND event_id = {id:String} ORDER BY received_at`,
      query_params: params,
      format: 'JSONEachRow',
    }),
  ])
  const [key] = await keys.json<DedupKeyRow>()
  const dropped = await drops.json<DropRow>()
  if (!key) return { drops: dropped }
  const rs = await ch.client.query({
    query: `SELECT ${EVENT_COLUMNS} FROM events WHERE ${scoped} AND external_customer_id = {c:String} AND event_name = {n:String}
      AND timestamp = {t:DateTime64(3, 'UTC')} AND id = {id:String} LIMIT 1`,
    query_params: { ...params, c: key.external_customer_id, n: key.event_name, t: key.timestamp },
    format: 'JSONEachRow',
  })
  const [stored] = await rs.json<StoredEventRow>()
  return { stored, drops: dropped }
}
