// SQL of usage corrections: the Postgres record of each correction (sql/postgres/0870), and the ClickHouse reads and
// inserts that apply one (sql/clickhouse/0010): the corrected event's dedup key and meter rows, the cancel rows, and the
// amended event stored under its new id through event_batches like any batch.
import type { ChainLink, CorrectionAction } from '../../../core/corrections.ts'
import type { UsageRow } from '../../../core/meters.ts'
import type { Scope } from '../../../core/scope.ts'
import type { UsageEvent } from '../../../core/events.ts'
import type { ClickHouseSettings } from '@clickhouse/client'
import type { ClickHouse } from '../../../infra/clickhouse.ts'
import { chDateTime, sqlString } from '../../../infra/ch-literals.ts'
import type { Db } from '../../../infra/postgres.ts'

/** Leaves out events cancelled by corrections (an amended one included: its corrected copy is stored under a new id). */
export const NOT_CANCELLED = 'id NOT IN (SELECT event_id FROM event_cancellations WHERE tenant_id = {tenant:String} AND environment_id = {env:String})'

/** NOT_CANCELLED for a statement with its scope as literals, on the column holding the event's id. */
export const notCancelledIn = (scope: Scope, idColumn: string): string =>
  `${idColumn} NOT IN (SELECT event_id FROM event_cancellations WHERE tenant_id = ${sqlString(scope.tenantId)} AND environment_id = ${sqlString(scope.environmentId)})`

export interface CorrectionRow extends ChainLink {
  tenant_id: string
  environment_id: string
  event_id: string
  reason: string | null
  external_customer_id: string
  event_name: string
  event_timestamp: Date
  replacement: Record<string, unknown> | null
  status: 'pending' | 'applied'
  created_by: string | null
  created_at: Date
  applied_at: Date | null
}

export type NewCorrection = Omit<CorrectionRow, 'status' | 'applied_at'>

/** Every recorded correction of these events. */
export const chainsOf = (db: Db, scope: Scope, eventIds: string[]): Promise<CorrectionRow[]> =>
  db<CorrectionRow[]>`SELECT * FROM usage_corrections
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND event_id = ANY(${eventIds})`

/** Of these ids, those an amend stored (a replacement is corrected through its original's id). */
export const replacementsAmong = (db: Db, scope: Scope, ids: string[]): Promise<{ replacement_id: string; event_id: string }[]> =>
  db<{ replacement_id: string; event_id: string }[]>`SELECT replacement_id, event_id FROM usage_corrections
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND replacement_id = ANY(${ids})`

/** Records a correction; undefined when another request took its place in the event's chain (or sent the same item) first. */
export async function insertCorrection(db: Db, c: NewCorrection): Promise<CorrectionRow | undefined> {
  const [row] = await db<CorrectionRow[]>`INSERT INTO usage_corrections
      (id, tenant_id, environment_id, event_id, sequence, correction_key, action, reason, cancelled_id, external_customer_id,
       event_name, event_timestamp, replacement_id, replacement, created_by, created_at)
    VALUES (${c.id}, ${c.tenant_id}, ${c.environment_id}, ${c.event_id}, ${c.sequence}, ${c.correction_key}, ${c.action}, ${c.reason},
       ${c.cancelled_id}, ${c.external_customer_id}, ${c.event_name}, ${c.event_timestamp}, ${c.replacement_id},
       ${c.replacement === null ? null : db.json(c.replacement as never)}, ${c.created_by}, ${c.created_at})
    ON CONFLICT DO NOTHING
    RETURNING *`
  return row
}

export async function markApplied(db: Db, ids: string[], at: Date): Promise<void> {
  if (ids.length > 0) await db`UPDATE usage_corrections SET status = 'applied', applied_at = ${at} WHERE id = ANY(${ids}) AND status = 'pending'`
}

/** Corrections left pending since before `before` (their request stopped between Postgres and ClickHouse), oldest first. */
export const pendingCorrections = (db: Db, before: Date, limit: number): Promise<CorrectionRow[]> =>
  db<CorrectionRow[]>`SELECT * FROM usage_corrections WHERE status = 'pending' AND created_at < ${before} ORDER BY created_at LIMIT ${limit}`

export interface CorrectionFilter {
  externalCustomerId?: string
  eventName?: string
  eventId?: string
  action?: CorrectionAction
  start?: Date
  end?: Date
}

/** A page of corrections, newest first, and how many match. */
export async function listCorrections(db: Db, scope: Scope, f: CorrectionFilter, limit: number, offset: number): Promise<{ rows: CorrectionRow[]; total: number }> {
  const where = db`tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}
    ${f.externalCustomerId === undefined ? db`` : db`AND external_customer_id = ${f.externalCustomerId}`}
    ${f.eventName === undefined ? db`` : db`AND event_name = ${f.eventName}`}
    ${f.eventId === undefined ? db`` : db`AND event_id = ${f.eventId}`}
    ${f.action === undefined ? db`` : db`AND action = ${f.action}`}
    ${f.start === undefined ? db`` : db`AND event_timestamp >= ${f.start}`}
    ${f.end === undefined ? db`` : db`AND event_timestamp < ${f.end}`}`
  const [rows, [{ n }]] = await Promise.all([
    db<CorrectionRow[]>`SELECT * FROM usage_corrections WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}`,
    db<{ n: number }[]>`SELECT count(*)::int AS n FROM usage_corrections WHERE ${where}`,
  ])
  return { rows, total: n }
}

/** A stored event's dedup key (event_ids): where its rows are, and until when it may be corrected. */
export interface StoredKey {
  event_id: string
  external_customer_id: string
  event_name: string
  timestamp: string
  expires_at: string
}

export async function storedKeys(ch: ClickHouse, scope: Scope, ids: string[]): Promise<Map<string, StoredKey>> {
  const rs = await ch.client.query({
    query: `SELECT event_id, external_customer_id, event_name, timestamp, expires_at FROM event_ids
      WHERE tenant_id = {tenant:String} AND environment_id = {env:String} AND event_id IN {ids:Array(String)}
      LIMIT 1 BY event_id`,
    query_params: { tenant: scope.tenantId, env: scope.environmentId, ids },
    format: 'JSONEachRow',
  })
  return new Map((await rs.json<StoredKey>()).map((k) => [k.event_id, k]))
}

/** A stored event's meter rows (sign 1) and source: what its cancellation takes back. */
export interface StoredUsage {
  source: string
  rows: UsageRow[]
}

export async function storedUsage(ch: ClickHouse, scope: Scope, keys: StoredKey[]): Promise<Map<string, StoredUsage>> {
  const out = new Map<string, StoredUsage>()
  if (keys.length === 0) return out
  const params = {
    tenant: scope.tenantId,
    env: scope.environmentId,
    customers: keys.map((k) => k.external_customer_id),
    instants: keys.map((k) => k.timestamp),
    ids: keys.map((k) => k.event_id),
  }
  // Narrowed by customer and instant first (both in each table's sort key), then by id.
  const near = "external_customer_id IN {customers:Array(String)} AND timestamp IN {instants:Array(DateTime64(3, 'UTC'))}"
  const scoped = 'tenant_id = {tenant:String} AND environment_id = {env:String}'
  const [events, meters] = await Promise.all([
    ch.client.query({ query: `SELECT id, source FROM events WHERE ${scoped} AND ${near} AND id IN {ids:Array(String)} LIMIT 1 BY id`, query_params: params, format: 'JSONEachRow' }),
    ch.client.query({
      query: `SELECT event_id, meter_id, revision, toString(value) AS value, group_value, unique_value FROM meter_usage
        WHERE ${scoped} AND ${near} AND event_id IN {ids:Array(String)} AND sign = 1`,
      query_params: params,
      format: 'JSONEachRow',
    }),
  ])
  for (const e of await events.json<{ id: string; source: string }>()) out.set(e.id, { source: e.source, rows: [] })
  type MeterRow = { event_id: string; meter_id: string; revision: number; value: string; group_value: string; unique_value: string }
  for (const m of await meters.json<MeterRow>()) {
    out.get(m.event_id)?.rows.push({ meterId: m.meter_id, revision: Number(m.revision), value: m.value, groupValue: m.group_value, uniqueValue: m.unique_value })
  }
  return out
}

/** One cancellation to write: the cancelled stored event, its usage and the correction that cancels it. */
export interface Cancellation {
  scope: Scope
  key: StoredKey
  usage: StoredUsage
  correctionId: string
}

/** The usual settings of a deduplicated insert through a Null table's views (as aggregator/store.ts insertBatch). */
const dedupSettings = (token: string): ClickHouseSettings => ({ insert_deduplication_token: token, deduplicate_blocks_in_dependent_materialized_views: 1, max_insert_block_size: '10000000', min_insert_block_size_rows: '0', min_insert_block_size_bytes: '0' })

/** The cancel rows (sign -1) and the cancellation records, in one statement; a retry under the same token is dropped. */
export async function insertCancellations(ch: ClickHouse, cs: Cancellation[], token: string): Promise<void> {
  if (cs.length === 0) return
  const rows = cs.map((c) =>
    JSON.stringify({
      tenant_id: c.scope.tenantId,
      environment_id: c.scope.environmentId,
      event_id: c.key.event_id,
      external_customer_id: c.key.external_customer_id,
      event_name: c.key.event_name,
      source: c.usage.source,
      timestamp: c.key.timestamp,
      correction_id: c.correctionId,
      meter_ids: c.usage.rows.map((r) => r.meterId),
      revisions: c.usage.rows.map((r) => r.revision),
      meter_values: c.usage.rows.map((r) => r.value),
      group_values: c.usage.rows.map((r) => r.groupValue),
      unique_values: c.usage.rows.map((r) => r.uniqueValue),
    }),
  )
  await ch.insertRaw({ table: 'event_cancellations_in', format: 'JSONEachRow', rows: rows.join('\n'), settings: dedupSettings(token) })
}

/** Amended events, stored under their new ids with their meter rows: one batch of event_batches, as the aggregator writes. */
export async function insertReplacements(ch: ClickHouse, events: { event: UsageEvent; rows: UsageRow[] }[], expiresAt: Date, token: string): Promise<void> {
  if (events.length === 0) return
  const rows = events.map(({ event: e, rows: m }) =>
    JSON.stringify({
      kind: 'stored',
      tenant_id: e.tenantId,
      environment_id: e.environmentId,
      id: e.id,
      external_customer_id: e.externalCustomerId,
      customer_id: e.customerId,
      event_name: e.eventName,
      source: e.source,
      timestamp: chDateTime(e.timestamp),
      received_at: chDateTime(e.receivedAt),
      properties: JSON.stringify(e.properties),
      reason: '',
      expires_at: chDateTime(expiresAt).slice(0, 19),
      meter_ids: m.map((r) => r.meterId),
      revisions: m.map((r) => r.revision),
      meter_values: m.map((r) => r.value),
      group_values: m.map((r) => r.groupValue),
      unique_values: m.map((r) => r.uniqueValue),
    }),
  )
  await ch.insertRaw({ table: 'event_batches', format: 'JSONEachRow', rows: rows.join('\n'), settings: dedupSettings(token) })
}

/** Which of these ids of one scope are recorded in `table` (event_cancellations or event_ids): what a crashed request wrote. */
export async function landed(ch: ClickHouse, table: 'event_cancellations' | 'event_ids', scope: Scope, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set()
  const rs = await ch.client.query({
    query: `SELECT DISTINCT event_id FROM ${table} WHERE tenant_id = {tenant:String} AND environment_id = {env:String} AND event_id IN {ids:Array(String)}`,
    query_params: { tenant: scope.tenantId, env: scope.environmentId, ids },
    format: 'JSONEachRow',
  })
  return new Set((await rs.json<{ event_id: string }>()).map((r) => r.event_id))
}
