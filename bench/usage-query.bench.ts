// (3) The monthly usage query over 10 million events: p50/p99 of POST /v1/events/usage/meter's service
// function for one customer's month, for the whole environment and for a billing-anchored month, from the
// rollups and from raw meter_usage rows. The events are generated inside ClickHouse (INSERT … SELECT FROM numbers) through
// the same Null table and views the batch writer uses.
import { loadConfig } from '../core/config.ts'
import { createMeter, getMeter } from '../domains/catalog/meters/service.ts'
import { meterUsage } from '../domains/usage/queries/service.ts'
import { startRoles } from '../roles.ts'
import { benchDataDir, fmt, percentile, report } from './common.ts'
import { loadMarch } from './march-events.ts'

const N = Number(process.env.BENCH_QUERY_EVENTS ?? 10_000_000)
const CUSTOMERS = 10
// Enough runs for the p99 to be a percentile rather than the slowest run.
const RUNS = 200
/** Raw recounts take seconds each over the whole environment: fewer runs. */
const RAW_RUNS = 10
const env = { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', DATA_DIR: benchDataDir('query'), KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0' }
const running = await startRoles(loadConfig(env), ['api'])
const { deps } = running
const tenant = running.bootstrap!
const scope = { tenantId: tenant.tenantId, environmentId: tenant.environments.production }
const meter = await createMeter(deps, { ...scope, keyId: 'bench', roles: ['admin'] }, { name: 'tokens', event_name: 'api.call', aggregation: { type: 'SUM', field: 'tokens' } })
while ((await getMeter(deps, scope, meter.id)).ready_revision === 0) await new Promise((r) => setTimeout(r, 200))

// N events over March 2024 (31 days), CUSTOMERS customers, tokens 0..999, each with its meter row.
const loadSeconds = await loadMarch(deps.ch, scope, { meterId: meter.id, events: N, customers: CUSTOMERS, sources: 0, tables: ['meter_usage_1m', 'meter_usage_1h', 'meter_usage_1d'] })

interface Case {
  label: string
  customer?: string
  start: string
  end: string
  billingAnchor?: string
}

// A subscription's month: its anchor carries a time of day with seconds, so the boundaries cut a day, an hour and a minute.
const cases: Case[] = [
  { label: `one customer (${fmt(N / CUSTOMERS)} events)`, customer: 'cust-3', start: '2024-03-01T00:00:00Z', end: '2024-04-01T00:00:00Z' },
  { label: `whole environment (${fmt(N)} events)`, start: '2024-03-01T00:00:00Z', end: '2024-04-01T00:00:00Z' },
  { label: 'one customer, billing-anchored month (Feb 15 12:34:56 to Mar 15)', customer: 'cust-3', start: '2024-02-15T12:34:56Z', end: '2024-03-15T12:34:56Z', billingAnchor: '2024-02-15T12:34:56Z' },
]

async function timeQuery(source: 'views' | 'raw', c: Case): Promise<{ p50: number; p99: number; value: string }> {
  const times: number[] = []
  let value = ''
  const runs = source === 'views' ? RUNS : RAW_RUNS
  for (let i = 0; i < runs + 3; i++) {
    const t = performance.now()
    const r = await meterUsage(deps, scope, {
      meterId: meter.id,
      externalCustomerId: c.customer,
      start: new Date(c.start),
      end: new Date(c.end),
      windowSize: 'MONTH',
      billingAnchor: c.billingAnchor ? new Date(c.billingAnchor) : undefined,
      source,
    })
    if (i >= 3) times.push(performance.now() - t) // the first runs warm caches
    value = r.value.toFixed()
  }
  times.sort((a, b) => a - b)
  return { p50: percentile(times, 50), p99: percentile(times, 99), value }
}

const rows: string[] = []
for (const c of cases) {
  const views = await timeQuery('views', c)
  const raw = await timeQuery('raw', c)
  if (views.value !== raw.value) throw new Error(`${c.label}: views ${views.value} ≠ raw ${raw.value}`)
  rows.push(`| ${c.label} | ${fmt(views.p50, 1)} | ${fmt(views.p99, 1)} | ${fmt(raw.p50, 1)} | ${fmt(raw.p99, 1)} | ${views.value} |`)
}
await running.stop()

report(`## 3. Monthly usage query

${fmt(N)} events over March 2024 for ${CUSTOMERS} customers (generated in ClickHouse in ${fmt(loadSeconds, 1)} s through the
event_batches views, rollups then merged), one SUM meter; \`meterUsage\` with window_size MONTH, ${RUNS} runs (raw: ${RAW_RUNS}) after 3 warm-up
runs, chDB in process.
"views" reads meter_usage_1d (daily states) in one statement, with hours, minutes and raw rows only where a boundary cuts a
day; "raw" recounts meter_usage rows. Both gave the same value.

| query | views p50 ms | views p99 ms | raw p50 ms | raw p99 ms | value |
| --- | ---: | ---: | ---: | ---: | ---: |
${rows.join('\n')}`)
process.exit(0)
