// The CSV exports over HTTP: the raw-events export (POST /v1/events/export) over N stored events, then the aggregated
// analytics export (POST /v1/events/analytics/export) of ~AGG_ROWS customer × minute rows. Each: rows/s and peak RSS
// growth of the server process over its idle state, next to a same-run baseline of ClickHouse (chDB, in the same
// process) writing the same rows to a file itself (SELECT … INTO OUTFILE … FORMAT CSVWithNames). Alternated, each
// twice. The client reads the response in this process and discards it. Peak RSS is the kernel's high-water mark
// (VmHWM), reset before each run through /proc/self/clear_refs.
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { join } from 'node:path'
import { loadConfig } from '../core/config.ts'
import { createMeter, getMeter } from '../domains/catalog/meters/service.ts'
import { features } from '../domains/catalog/features/service.ts'
import { startRoles } from '../roles.ts'
import { pricedCustomers } from './priced-customers.ts'
import { benchDataDir, fmt, report } from './common.ts'
import { loadMarch } from './march-events.ts'

const N = Number(process.env.BENCH_EXPORT_EVENTS ?? 10_000_000)
// Aggregated rows: customers × MINUTE windows, 5,000 windows being a request's most.
const AGG_CUSTOMERS = Number(process.env.BENCH_EXPORT_CUSTOMERS ?? 2_000)
const AGG_MINUTES = 5_000
const AGG_ROWS = AGG_CUSTOMERS * AGG_MINUTES
// Customers of the aggregated export on a priced plan, in a second measurement.
const PRICED = Number(process.env.BENCH_EXPORT_PRICED ?? 20)
const dataDir = benchDataDir('export')
const env = { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', DATA_DIR: dataDir, KAFKA_BROKERS: '', METRICS_PORT: 'off' }
const running = await startRoles(loadConfig(env), ['api'])
const { deps } = running
const tenant = running.bootstrap!
const scope = { tenantId: tenant.tenantId, environmentId: tenant.environments.production }

// N events over March 2024 for 100 customers, properties of ~60 bytes.
const loadStart = performance.now()
for (let from = 0; from < N; from += 1_000_000) {
  await deps.ch.client.command({
    query: `INSERT INTO events (tenant_id, environment_id, external_customer_id, event_name, timestamp, id, customer_id, source, properties, received_at)
      SELECT {t:String}, {e:String}, concat('cust-', toString(number % 100)), 'api.call',
        fromUnixTimestamp64Milli(toInt64(1709251200000 + intDiv(number * 2678400000, ${N})), 'UTC'), concat('evt-', toString(number)),
        concat('cus_', toString(number % 100)), if(number % 3 = 0, 'sdk-go', ''), concat('{"tokens":', toString(number % 1000), ',"model":"model-', toString(number % 7), '"}'), now64(3)
      FROM numbers(${from}, ${Math.min(1_000_000, N - from)})`,
    query_params: { t: scope.tenantId, e: scope.environmentId },
    clickhouse_settings: { max_insert_block_size: '1000000' },
  })
}
await deps.ch.client.command({ query: 'OPTIMIZE TABLE events FINAL' })
const loadSeconds = (performance.now() - loadStart) / 1000

const RANGE = { start_time: '2024-03-01T00:00:00Z', end_time: '2024-04-01T00:00:00Z' }

const resetPeak = () => writeFileSync('/proc/self/clear_refs', '5')
const kib = (field: string) => Number(/(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8').split('\n').find((l) => l.startsWith(field))!)![1])

interface Run {
  seconds: number
  bytes: number
  rows: number
  peakGrowthMb: number
}

async function measured(work: () => Promise<{ bytes: number; rows: number }>): Promise<Run> {
  ;(globalThis as { gc?: () => void }).gc?.()
  await new Promise((r) => setTimeout(r, 200))
  const idle = kib('VmRSS:')
  resetPeak()
  const t = performance.now()
  const { bytes, rows } = await work()
  const seconds = (performance.now() - t) / 1000
  return { seconds, bytes, rows, peakGrowthMb: (kib('VmHWM:') - idle) / 1024 }
}

const viaHttp = (path: string, query: Record<string, unknown>) =>
  measured(
    () =>
      new Promise((resolve, reject) => {
        const body = JSON.stringify(query)
        const req = request(
          { host: '127.0.0.1', port: running.port, method: 'POST', path, headers: { 'x-api-key': tenant.apiKey, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
          (res) => {
            if (res.statusCode !== 200) reject(new Error(`export answered ${res.statusCode}`))
            let bytes = 0
            let lines = 0
            res.on('data', (chunk: Buffer) => {
              bytes += chunk.length
              for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++
            })
            res.on('end', () => resolve({ bytes, rows: lines - 1 }))
            res.on('error', reject)
          },
        )
        req.on('error', reject)
        req.end(body)
      }),
  )

const outfile = join(dataDir, 'baseline.csv')
const viaClickHouse = (select: string, rows: number) =>
  measured(async () => {
    rmSync(outfile, { force: true })
    await deps.ch.client.command({ query: `${select} INTO OUTFILE '${outfile}' FORMAT CSVWithNames SETTINGS optimize_read_in_order = 1`, query_params: { t: scope.tenantId, e: scope.environmentId } })
    return { bytes: statSync(outfile).size, rows }
  })

/** Both writers alternated, each twice; the export must send every row. */
async function compare(rows: number, http: () => Promise<Run>, ch: () => Promise<Run>): Promise<{ http: Run[]; ch: Run[] }> {
  const runs: { http: Run[]; ch: Run[] } = { http: [], ch: [] }
  for (let i = 0; i < 2; i++) {
    runs.ch.push(await ch())
    runs.http.push(await http())
  }
  rmSync(outfile, { force: true })
  for (const r of runs.http) if (r.rows !== rows) throw new Error(`the export sent ${r.rows} rows of ${rows}`)
  return runs
}

const runs = await compare(
  N,
  () => viaHttp('/v1/events/export', RANGE),
  () =>
    viaClickHouse(
      `SELECT id, timestamp, received_at, external_customer_id, customer_id, event_name, source, properties FROM events
        WHERE tenant_id = {t:String} AND environment_id = {e:String} AND timestamp >= '2024-03-01 00:00:00' AND timestamp < '2024-04-01 00:00:00'
        ORDER BY external_customer_id, event_name, timestamp, id`,
      N,
    ),
)

// The aggregated export: one COUNT meter with its feature (no subscription: cost 0, the rows' shape unchanged), one
// event per customer and minute over 5,000 minutes from 1 March, written through the event_batches views.
const actor = { ...scope, keyId: 'bench', roles: ['admin' as const] }
const meter = await createMeter(deps, actor, { name: 'minutes', event_name: 'agg.call', aggregation: { type: 'COUNT' } })
let revision = 0
while ((revision = (await getMeter(deps, scope, meter.id)).ready_revision) === 0) await new Promise((r) => setTimeout(r, 200))
const feature = await features.create(deps, actor, { name: 'Minutes', type: 'metered', meter_id: meter.id } as never)
const aggLoadSeconds = await loadMarch(deps.ch, scope, {
  meterId: meter.id,
  events: AGG_ROWS,
  customers: AGG_CUSTOMERS,
  // One source for every event ('sdk-0'): the filtered export below matches them all.
  sources: 1,
  spanMs: AGG_MINUTES * 60_000,
  eventName: 'agg.call',
  tables: ['meter_usage_1m', 'meter_usage_1h', 'meter_usage_1d', 'meter_usage_by_source_1h', 'meter_usage_by_source_env_1h'],
})
const aggEnd = new Date(Date.parse(RANGE.start_time) + AGG_MINUTES * 60_000)
const aggRuns = await compare(
  AGG_ROWS,
  () => viaHttp('/v1/events/analytics/export', { start_time: RANGE.start_time, end_time: aggEnd.toISOString(), feature_ids: [(feature as { id: string }).id], window_size: 'MINUTE', format: 'csv' }),
  () =>
    viaClickHouse(
      `SELECT minute AS window_start, external_customer_id, sum(events) AS event_count, sum(value_sum) AS usage FROM meter_usage_1m
        WHERE tenant_id = {t:String} AND environment_id = {e:String} AND meter_id = '${meter.id}' AND revision = ${revision}
          AND minute >= '2024-03-01 00:00:00' AND minute < '${aggEnd.toISOString().slice(0, 19).replace('T', ' ')}'
        GROUP BY external_customer_id, minute ORDER BY external_customer_id, minute`,
      AGG_ROWS,
    ),
)
// The same export with PRICED of the customers subscribed to a plan pricing the meter: their rows' costs are their
// window costs (costs.ts) split in the statement.
await pricedCustomers(deps, actor, { meterId: meter.id, displayName: 'Minutes', amount: '0.0013', customers: PRICED })
const pricedRuns: Run[] = []
for (let i = 0; i < 2; i++) {
  pricedRuns.push(await viaHttp('/v1/events/analytics/export', { start_time: RANGE.start_time, end_time: aggEnd.toISOString(), feature_ids: [(feature as { id: string }).id], window_size: 'MINUTE', format: 'csv' }))
}
// And filtered on the source: each priced row's cost is its share of its customer's unfiltered usage (read apart).
const filteredRuns: Run[] = []
for (let i = 0; i < 2; i++) {
  filteredRuns.push(await viaHttp('/v1/events/analytics/export', { start_time: RANGE.start_time, end_time: aggEnd.toISOString(), feature_ids: [(feature as { id: string }).id], window_size: 'MINUTE', sources: ['sdk-0'], format: 'csv' }))
}
for (const r of [...pricedRuns, ...filteredRuns]) if (r.rows !== AGG_ROWS) throw new Error(`the priced export sent ${r.rows} rows of ${AGG_ROWS}`)
await running.stop()

const best = (list: Run[]) => list.reduce((a, b) => (b.seconds < a.seconds ? b : a))
const row = (label: string, list: Run[], rows: number) => {
  const b = best(list)
  return `| ${label} | ${fmt(rows / b.seconds)} | ${fmt(b.seconds, 2)} | ${fmt(b.bytes / 1e6, 1)} | ${list.map((r) => fmt(r.peakGrowthMb)).join(' · ')} |`
}
const [h, c] = [best(runs.http), best(runs.ch)]
const [ah, ac] = [best(aggRuns.http), best(aggRuns.ch)]
const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
report(`## CSV export (raw events)

\`POST /v1/events/export\` of ${fmt(N)} stored events (a month, 100 customers; loaded in ${fmt(loadSeconds, 1)} s) over HTTP on
127.0.0.1, read and discarded by a client in the server's process, next to ClickHouse (chDB in the same process) writing
the same rows to a file itself (\`INTO OUTFILE … FORMAT CSVWithNames\`), alternated, each twice (best time shown; peak RSS
growth of both runs). Peak RSS growth: the process's high-water mark (VmHWM, reset before each run) over its RSS before it.
Ratio: **${fmt(c.seconds / h.seconds, 2)}** of ClickHouse's own speed (export ${fmt(N / h.seconds)} rows/s against ${fmt(N / c.seconds)}).

| writer | rows/s | seconds | MB | peak RSS growth MB |
| --- | ---: | ---: | ---: | ---: |
${row('meterbill export (HTTP, CSV)', runs.http, N)}
${row('ClickHouse INTO OUTFILE (baseline)', runs.ch, N)}

## CSV export (aggregated rows)

\`POST /v1/events/analytics/export\` of ${fmt(AGG_ROWS)} rows: ${fmt(AGG_CUSTOMERS)} customers × ${fmt(AGG_MINUTES)} MINUTE windows (one event each, generated in
ClickHouse through the event_batches views in ${fmt(aggLoadSeconds, 1)} s, rollups then merged), one COUNT meter and its feature, no
subscription (cost 0), over HTTP as above (written by ClickHouse: breakdownCsv), next to ClickHouse writing the same customer ×
minute rows (event count and usage from the minute rollup) to a file itself, alternated, each twice; then the export again, twice,
with ${PRICED} of the customers on a plan pricing the meter (their rows' costs split in the statement), and twice filtered on the
events' one source (each priced row's share taken against its customer's unfiltered usage, in the statement too). Ratio:
**${fmt(ac.seconds / ah.seconds, 2)}** of ClickHouse's own speed (export ${fmt(AGG_ROWS / ah.seconds)} rows/s against ${fmt(AGG_ROWS / ac.seconds)}).
Load average at the end: ${load}.

| writer | rows/s | seconds | MB | peak RSS growth MB |
| --- | ---: | ---: | ---: | ---: |
${row('meterbill analytics export (HTTP, CSV)', aggRuns.http, AGG_ROWS)}
${row('ClickHouse INTO OUTFILE (baseline)', aggRuns.ch, AGG_ROWS)}
${row(`meterbill analytics export, ${PRICED} customers priced (HTTP, CSV)`, pricedRuns, AGG_ROWS)}
${row(`meterbill analytics export, ${PRICED} customers priced, filtered on a source (HTTP, CSV)`, filteredRuns, AGG_ROWS)}
`)
process.exit(0)
