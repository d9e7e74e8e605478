// Usage corrections (issue 34): what one correction costs with many events stored. N events (CORRECTIONS_EVENTS,
// default 1M; 10M measured once for docs) of 1,000 customers over the last 30 days are generated straight into
// event_batches (every table and rollup filled by the views), then, through the service the route calls: single cancels
// of random events, single amends, and requests of 1,000 cancels, timed; and a customer's month of usage read from the
// rollups before and after its corrections (the read cost a correction leaves behind).
import { writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { loadConfig } from '../core/config.ts'
import { createMeter, getMeter } from '../domains/catalog/meters/service.ts'
import { meterUsage } from '../domains/usage/queries/service.ts'
import { applyCorrections } from '../domains/usage/corrections/service.ts'
import { startRoles } from '../roles.ts'
import { benchDataDir, fmt, percentile, report } from './common.ts'

const N = Number(process.env.CORRECTIONS_EVENTS ?? 1_000_000)
const CUSTOMERS = 1000
const startLoad = loadavg()
const env = { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', DATA_DIR: benchDataDir('corrections'), KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0' }
const running = await startRoles(loadConfig(env), ['api'])
const { deps } = running
const tenant = running.bootstrap!
const scope = { tenantId: tenant.tenantId, environmentId: tenant.environments.production }
const actor = { ...scope, keyId: 'bench', roles: ['admin' as const] }
const meter = await createMeter(deps, actor, { name: 'tokens', event_name: 'llm', aggregation: { type: 'SUM', field: 'tokens' } })
while ((await getMeter(deps, scope, meter.id)).ready_revision === 0) await new Promise((r) => setTimeout(r, 200))

const now = Date.now()
const from = now - 30 * 86_400_000
const genStart = performance.now()
const SLICE = 2_000_000
for (let s = 0; s < N; s += SLICE) {
  await deps.ch.client.command({
    query: `INSERT INTO event_batches (kind, tenant_id, environment_id, id, external_customer_id, customer_id, event_name, source,
        timestamp, received_at, properties, reason, expires_at, meter_ids, revisions, meter_values, group_values, unique_values)
      SELECT 'stored', {t:String}, {e:String}, concat('b', toString(number)), concat('cust-', toString(number % ${CUSTOMERS})), '', 'llm', '',
        fromUnixTimestamp64Milli(toInt64(${from} + intDiv(number * ${30 * 86_400_000}, ${N})), 'UTC'), now64(3),
        concat('{"tokens":', toString(number % 100), '}'), '', now() + INTERVAL 35 DAY, [{m:String}], [toUInt32(1)],
        [toDecimal128(number % 100, 12)], [''], ['']
      FROM numbers(${s}, ${Math.min(SLICE, N - s)})`,
    query_params: { t: scope.tenantId, e: scope.environmentId, m: meter.id },
    clickhouse_settings: { max_execution_time: 0 },
  })
}
const genSeconds = (performance.now() - genStart) / 1000

const timed = async (f: () => Promise<unknown>): Promise<number> => {
  const t = performance.now()
  await f()
  return performance.now() - t
}
const pick = (i: number): string => `b${(i * 7_919_993 + 12_345) % N}`
const customerOf = (id: string): string => `cust-${Number(id.slice(1)) % CUSTOMERS}`

// One customer's 30 days from the rollups, before its corrections.
const target = pick(0)
const month = { meterId: meter.id, externalCustomerId: customerOf(target), start: new Date(from - 86_400_000), end: new Date(now + 86_400_000) }
const readBefore: number[] = []
for (let i = 0; i < 7; i++) readBefore.push(await timed(() => meterUsage(deps, scope, month)))

const single: number[] = []
for (let i = 0; i < 30; i++) single.push(await timed(() => applyCorrections(deps, actor, [{ event_id: pick(i), action: 'cancel', reason: 'bench' }])))
const amend: number[] = []
for (let i = 30; i < 45; i++) {
  const id = pick(i)
  amend.push(await timed(() => applyCorrections(deps, actor, [{ event_id: id, action: 'amend', event: { event_name: 'llm', external_customer_id: customerOf(id), timestamp: new Date(from + 1000).toISOString(), properties: { tokens: 1 } } }])))
}
const batch: number[] = []
for (let b = 0; b < 3; b++) {
  const items = Array.from({ length: 1000 }, (_, k) => ({ event_id: pick(1000 + b * 1000 + k), action: 'cancel' as const }))
  batch.push(await timed(async () => {
    const r = await applyCorrections(deps, actor, items)
    if (r.applied !== 1000) throw new Error(`applied ${r.applied} of 1000: ${JSON.stringify(r.items.find((x) => x.status === 'failed'))}`)
  }))
}
const readAfter: number[] = []
for (let i = 0; i < 7; i++) readAfter.push(await timed(() => meterUsage(deps, scope, month)))
await running.stop()

const ms = (xs: number[], p: number) => fmt(percentile([...xs].sort((a, b) => a - b), p), 1)
const text = `## Usage corrections at ${fmt(N)} stored events (bench/corrections.bench.ts)

${fmt(N)} events of ${fmt(CUSTOMERS)} customers over 30 days (one SUM meter), generated into event_batches in ${fmt(genSeconds, 1)} s.
Corrections through the service the route calls (Postgres record, ClickHouse cancel rows, applied), embedded engines,
load average at start ${startLoad.map((l) => l.toFixed(1)).join(', ')}.

| operation | runs | p50 ms | p95 ms |
|---|---:|---:|---:|
| cancel 1 event | ${single.length} | ${ms(single, 50)} | ${ms(single, 95)} |
| amend 1 event (cancel + corrected copy) | ${amend.length} | ${ms(amend, 50)} | ${ms(amend, 95)} |
| cancel 1,000 events in one request | ${batch.length} | ${ms(batch, 50)} | ${ms(batch, 95)} |
| a customer's month from the rollups, before corrections | ${readBefore.length} | ${ms(readBefore, 50)} | ${ms(readBefore, 95)} |
| the same read after | ${readAfter.length} | ${ms(readAfter, 50)} | ${ms(readAfter, 95)} |
`
report(text)
if (process.env.CORRECTIONS_OUT) writeFileSync(process.env.CORRECTIONS_OUT, `${text}\n`, { flag: 'a' })
