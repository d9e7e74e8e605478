// ClickHouse SQL of the batch writer: which event ids are already stored, and the one insert per batch.
import type { ClickHouseSettings } from '@clickhouse/client'
import type { ClickHouse } from '../infra/clickhouse.ts'
import { chDateTime } from '../infra/clickhouse.ts'
import { LONG_QUERY, sqlStringArray } from '../infra/ch-literals.ts'
import type { UsageEvent } from '../core/events.ts'
import type { UsageRow } from '../core/meters.ts'

export interface EventKey {
  tenantId: string
  environmentId: string
  id: string
}

export const keyOf = (k: EventKey): string => `${k.tenantId}\u0000${k.environmentId}\u0000${k.id}`

/** The keys among `keys` already stored: one query for the whole batch, using the table's primary key. */
export async function storedKeys(ch: ClickHouse, keys: EventKey[]): Promise<Set<string>> {
  if (keys.length === 0) return new Set()
  const rs = await ch.client.query({
    query: `SELECT tenant_id, environment_id, event_id FROM event_ids
      WHERE tenant_id IN {tenants:Array(String)} AND environment_id IN {envs:Array(String)}
        AND event_id IN ${sqlStringArray([...new Set(keys.map((k) => k.id))])}`,
    query_params: { tenants: [...new Set(keys.map((k) => k.tenantId))], envs: [...new Set(keys.map((k) => k.environmentId))] },
    format: 'JSONCompactEachRow',
    clickhouse_settings: LONG_QUERY,
  })
  const rows = await rs.json<[string, string, string]>()
  return new Set(rows.map(([tenantId, environmentId, id]) => keyOf({ tenantId, environmentId, id })))
}

export type Outcome =
  | { kind: 'stored'; event: UsageEvent; rows: UsageRow[] }
  | { kind: 'duplicate' | 'rejected'; event: Pick<UsageEvent, 'id' | 'tenantId' | 'environmentId'> & Partial<UsageEvent>; reason: string }

const EPOCH = new Date(0)

function batchRow(o: Outcome, expiresAt: string): Record<string, unknown> {
  const e = o.event
  const rows = o.kind === 'stored' ? o.rows : []
  return {
    kind: o.kind,
    tenant_id: e.tenantId,
    environment_id: e.environmentId,
    id: e.id,
    external_customer_id: e.externalCustomerId ?? '',
    customer_id: e.customerId ?? '',
    event_name: e.eventName ?? '',
    source: e.source ?? '',
    timestamp: chDateTime(e.timestamp ?? EPOCH),
    received_at: chDateTime(e.receivedAt ?? EPOCH),
    properties: o.kind === 'stored' ? JSON.stringify(e.properties) : '',
    reason: o.kind === 'stored' ? '' : o.reason,
    expires_at: expiresAt,
    meter_ids: rows.map((r) => r.meterId),
    revisions: rows.map((r) => r.revision),
    meter_values: rows.map((r) => r.value),
    group_values: rows.map((r) => r.groupValue),
    unique_values: rows.map((r) => r.uniqueValue),
  }
}

/**
 * One INSERT for the whole batch: the views fan it out to events, event_ids, meter_usage and event_drops.
 * The token makes a retry of the same batch a no-op in every target table.
 */
export async function insertBatch(ch: ClickHouse, outcomes: Outcome[], token: string, dedupUntil: Date): Promise<void> {
  if (outcomes.length === 0) return
  const expiresAt = chDateTime(dedupUntil).slice(0, 19)
  await insertRows(ch, 'event_batches', outcomes.map((o) => batchRow(o, expiresAt)), {
    insert_deduplication_token: token,
    deduplicate_blocks_in_dependent_materialized_views: 1,
    // One block per batch whatever its size, so the token covers the batch as a whole.
    max_insert_block_size: '10000000',
    min_insert_block_size_rows: '0',
    min_insert_block_size_bytes: '0',
  })
}

/**
 * INSERT … FORMAT JSONEachRow with the rows in the statement: on chDB three times faster than
 * client.insert (which re-encodes the rows through a stream); a server reads the rows as the insert's data.
 */
async function insertRows(ch: ClickHouse, table: string, rows: Record<string, unknown>[], settings: ClickHouseSettings): Promise<void> {
  await ch.client.command({ query: `INSERT INTO ${table} FORMAT JSONEachRow\n${rows.map((r) => JSON.stringify(r)).join('\n')}`, clickhouse_settings: settings })
}

export interface StoredEventRow {
  id: string
  external_customer_id: string
  customer_id: string
  event_name: string
  source: string
  timestamp: string
  received_at: string
  properties: string
}

export const EVENT_COLUMNS = 'id, external_customer_id, customer_id, event_name, source, timestamp, received_at, properties'

/** ClickHouse's `YYYY-MM-DD hh:mm:ss.sss` (UTC) as a Date. */
export const fromChDateTime = (s: string): Date => new Date(`${s.replace(' ', 'T')}Z`)

export interface BackfillPage {
  after?: { customer: string; timestamp: string; id: string }
  limit: number
}

/**
 * A page of the events a meter revision should count but has no row for, among events inserted before
 * the cutoff (older than `settledMs` by the server's clock), in primary-key order.
 */
export async function eventsMissingRows(
  ch: ClickHouse,
  q: { tenantId: string; environmentId: string; eventName: string; meterId: string; revision: number; settledMs: number },
  page: BackfillPage,
): Promise<StoredEventRow[]> {
  const rs = await ch.client.query({
    query: `SELECT ${EVENT_COLUMNS} FROM events
      WHERE tenant_id = {tenant:String} AND environment_id = {env:String} AND event_name = {name:String}
        AND inserted_at < now64(3) - toIntervalMillisecond({settled:UInt32})
        AND (external_customer_id, timestamp, id) > ({c:String}, {t:DateTime64(3, 'UTC')}, {id:String})
        AND id NOT IN (SELECT event_id FROM meter_usage WHERE tenant_id = {tenant:String} AND environment_id = {env:String}
                         AND meter_id = {meter:String} AND revision = {rev:UInt32})
      ORDER BY external_customer_id, timestamp, id
      LIMIT {limit:UInt32}`,
    query_params: {
      tenant: q.tenantId,
      env: q.environmentId,
      name: q.eventName,
      settled: q.settledMs,
      meter: q.meterId,
      rev: q.revision,
      c: page.after?.customer ?? '',
      t: page.after?.timestamp ?? '1970-01-01 00:00:00.000',
      id: page.after?.id ?? '',
      limit: page.limit,
    },
    format: 'JSONEachRow',
  })
  return rs.json<StoredEventRow>()
}

export async function countEvents(ch: ClickHouse, q: { tenantId: string; environmentId: string; eventName: string }): Promise<number> {
  const rs = await ch.client.query({
    query: `SELECT toString(count()) AS n FROM events
      WHERE tenant_id = {tenant:String} AND environment_id = {env:String} AND event_name = {name:String}`,
    query_params: { tenant: q.tenantId, env: q.environmentId, name: q.eventName },
    format: 'JSONEachRow',
  })
  const [row] = await rs.json<{ n: string }>()
  return Number(row.n)
}

export interface MeterUsageInsert {
  tenant_id: string
  environment_id: string
  external_customer_id: string
  timestamp: string
  event_id: string
  row: UsageRow
}

/** Backfilled meter rows; the token names the page so a rerun of it is dropped. */
export async function insertMeterUsage(ch: ClickHouse, rows: MeterUsageInsert[], token: string): Promise<void> {
  if (rows.length === 0) return
  await insertRows(
    ch,
    'meter_usage',
    rows.map((r) => ({
      tenant_id: r.tenant_id,
      environment_id: r.environment_id,
      meter_id: r.row.meterId,
      revision: r.row.revision,
      external_customer_id: r.external_customer_id,
      timestamp: r.timestamp,
      event_id: r.event_id,
      value: r.row.value,
      group_value: r.row.groupValue,
      unique_value: r.row.uniqueValue,
    })),
    { insert_deduplication_token: token, deduplicate_blocks_in_dependent_materialized_views: 1 },
  )
}
