// Usage analytics over many events: p50/p99 of POST /v1/events/analytics's service function (usage by source per
// day, and its cost priced from the customers' subscriptions) for one customer's month and for the whole environment,
// next to same-run baselines: the breakdown read alone (usageBreakdown, the same groups and points without cost) and
// the usage query (meterUsage, one meter's daily values). Events are generated inside ClickHouse through the same
// event_batches views the batch writer uses, in three sources.
import { loadConfig } from '../core/config.ts'
import { createMeter, getMeter } from '../domains/catalog/meters/service.ts'
import { features } from '../domains/catalog/features/service.ts'
import { usageAnalytics, type AnalyticsRequest } from '../domains/analytics/service.ts'
import { usageBreakdown } from '../domains/usage/analytics/store.ts'
import { meterUsage } from '../domains/usage/queries/service.ts'
import { startRoles } from '../roles.ts'
import { pricedCustomers } from './priced-customers.ts'
import { benchDataDir, fmt, percentile, report } from './common.ts'
import { loadMarch } from './march-events.ts'

const N = Number(process.env.BENCH_ANALYTICS_EVENTS ?? 10_000_000)
const CUSTOMERS = 10
const RUNS = Number(process.env.BENCH_ANALYTICS_RUNS ?? 1000)
// Untimed first: the first requests of a process compile their code (JIT) and fill its caches.
const WARM_UP = 20
const env = { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', DATA_DIR: benchDataDir('analytics'), KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0', METRICS_PORT: 'off' }
const running = await startRoles(loadConfig(env), ['api'])
const { deps } = running
const tenant = running.bootstrap!
const scope = { tenantId: tenant.tenantId, environmentId: tenant.environments.production }
const actor = { ...scope, keyId: 'bench', roles: ['admin' as const] }
const meter = await createMeter(deps, actor, { name: 'tokens', event_name: 'api.call', aggregation: { type: 'SUM', field: 'tokens' } })
while ((await getMeter(deps, scope, meter.id)).ready_revision === 0) await new Promise((r) => setTimeout(r, 200))
await features.create(deps, actor, { name: 'Tokens', type: 'metered', meter_id: meter.id } as never)
await pricedCustomers(deps, actor, { meterId: meter.id, displayName: 'Tokens', amount: '0.001', customers: CUSTOMERS })

const loadSeconds = await loadMarch(deps.ch, scope, {
  meterId: meter.id,
  events: N,
  customers: CUSTOMERS,
  sources: 3,
  tables: ['meter_usage_1m', 'meter_usage_1h', 'meter_usage_1d', 'meter_usage_by_source_1h', 'meter_usage_by_source_env_1h'],
})

const start = new Date('2024-03-01T00:00:00Z')
const end = new Date('2024-04-01T00:00:00Z')
const request = (customer?: string): AnalyticsRequest => ({ start, end, externalCustomerId: customer, groupBy: ['source'], windowSize: 'DAY', expand: [], includeChildren: false, limit: 50, offset: 0 })

async function time(run: () => Promise<unknown>): Promise<{ p50: number; p99: number }> {
  const times: number[] = []
  for (let i = 0; i < RUNS + WARM_UP; i++) {
    const t = performance.now()
    await run()
    if (i >= WARM_UP) times.push(performance.now() - t)
  }
  times.sort((a, b) => a - b)
  return { p50: percentile(times, 50), p99: percentile(times, 99) }
}

const rows: string[] = []
for (const [label, customer] of [[`one customer (${fmt(N / CUSTOMERS)} events)`, 'cust-3'], [`whole environment (${fmt(N)} events, ${CUSTOMERS} subscriptions priced)`, undefined]] as const) {
  const analytics = await time(() => usageAnalytics(deps, actor, request(customer)))
  const meters = [{ meterId: meter.id, revision: 1, eventName: 'api.call', aggregation: { type: 'SUM' as const } }]
  const breakdown = await time(() => usageBreakdown(deps.ch, { scope, meters, externalCustomerIds: customer ? [customer] : undefined, start, end, windowSize: 'DAY', groupBy: ['source'] }))
  const usage = await time(() => meterUsage(deps, scope, { meterId: meter.id, externalCustomerId: customer, start, end, windowSize: 'DAY' }))
  const answer = await usageAnalytics(deps, actor, request(customer))
  rows.push(
    `| ${label} | ${fmt(analytics.p50, 1)} | ${fmt(analytics.p99, 1)} | ${fmt(breakdown.p50, 1)} | ${fmt(breakdown.p99, 1)} | ${fmt(analytics.p50 / breakdown.p50, 2)} | ${fmt(usage.p50, 1)} | ${answer.totalCost.toFixed()} |`,
  )
}
await running.stop()

report(`## Usage analytics

${fmt(N)} events over March 2024 for ${CUSTOMERS} customers in 3 sources (generated in ClickHouse in ${fmt(loadSeconds, 1)} s through the
event_batches views, rollups then merged), one SUM meter with its feature, each customer subscribed to a plan pricing it at
0.001 a token. \`usageAnalytics\` (POST /v1/events/analytics's service) with group_by [source] and window_size DAY: the
breakdown read of 31 daily points per source and the cost of each customer's line per day (its usage before and in the
range, priced per window by the invoice's line pricing), ${RUNS} runs after ${WARM_UP} warm-up runs, chDB in process. Same-run baselines: the
breakdown read alone (no cost) and the usage query of the meter per day (\`meterUsage\`).

| query | analytics p50 ms | analytics p99 ms | breakdown only p50 ms | breakdown only p99 ms | analytics ÷ breakdown (p50) | usage query p50 ms | total_cost |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
${rows.join('\n')}`)
process.exit(0)
