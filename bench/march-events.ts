// A month of generated usage for the query benches: `events` events over March 2024 for `customers` customers,
// tokens 0..999, written inside ClickHouse (INSERT … SELECT FROM numbers) through the same event_batches Null table
// and views the batch writer uses; then merged, as a month of past usage long has been in a running system.
import type { ClickHouse } from '../infra/clickhouse.ts'
import type { Scope } from '../core/scope.ts'

export interface MarchEvents {
  meterId: string
  events: number
  customers: number
  /** Sources `sdk-0`… in turn; 0: events without a source. */
  sources: number
  /** Rollups merged (OPTIMIZE … FINAL) once the load's merges are done. */
  tables: string[]
  /** The events spread evenly over this many ms from 1 March (default: the month); the name they carry (default api.call). */
  spanMs?: number
  eventName?: string
}

/** Loads the events and returns the seconds the load took (merges excluded). */
export async function loadMarch(ch: ClickHouse, scope: Scope, m: MarchEvents): Promise<number> {
  const start = performance.now()
  const span = m.spanMs ?? 31 * 86_400_000
  const source = m.sources > 0 ? `concat('sdk-', toString(intDiv(number, ${m.customers}) % ${m.sources}))` : `''`
  for (let from = 0; from < m.events; from += 1_000_000) {
    await ch.client.command({
      query: `INSERT INTO event_batches (kind, tenant_id, environment_id, id, external_customer_id, customer_id, event_name, source,
          timestamp, received_at, properties, reason, expires_at, meter_ids, revisions, meter_values, group_values, unique_values)
        SELECT 'stored', {t:String}, {e:String}, concat('q', toString(number)), concat('cust-', toString(number % ${m.customers})), '', {n:String}, ${source},
          fromUnixTimestamp64Milli(toInt64(1709251200000 + intDiv(number * ${span}, ${m.events})), 'UTC'), now64(3), concat('{"tokens":', toString(number % 1000), '}'),
          '', now() + INTERVAL 35 DAY, [{m:String}], [toUInt32(1)], [toDecimal128(number % 1000, 12)], [''], ['']
        FROM numbers(${from}, ${Math.min(1_000_000, m.events - from)})`,
      query_params: { t: scope.tenantId, e: scope.environmentId, m: m.meterId, n: m.eventName ?? 'api.call' },
      clickhouse_settings: { max_insert_block_size: '1000000' },
    })
  }
  const seconds = (performance.now() - start) / 1000
  // Time the steady state: background merges of the fresh parts would compete for the two cores.
  for (;;) {
    const rs = await ch.client.query({ query: 'SELECT count() AS n FROM system.merges', format: 'JSONEachRow' })
    if (Number(((await rs.json()) as { n: string }[])[0].n) === 0) break
    await new Promise((r) => setTimeout(r, 500))
  }
  // Merged now, the rollups' fresh parts do not start merging in the middle of the timing.
  for (const table of m.tables) await ch.client.command({ query: `OPTIMIZE TABLE ${table} FINAL` })
  return seconds
}
