// A scheduled usage export to Parquet: N metered events in one day, exported by a daily scheduled task's forced run
// of that day (POST /v1/tasks/scheduled/{id}/run's service: the run planned, claimed under its lease, written by
// ClickHouse as Parquet, counted, moved into the task's directory) — rows/s from the trigger to the run recorded
// completed, and peak RSS growth of the process (chDB is in it) over its idle state. Next to a same-run ceiling:
// ClickHouse writing the same statement's rows to a Parquet file alone (INTO OUTFILE). Alternated, each twice.
// BENCH_SCHEDULED_EXPORT_EVENTS sets N (default 10,000,000).
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadConfig } from '../core/config.ts'
import { createMeter, getMeter } from '../domains/catalog/meters/service.ts'
import { createScheduledTask, getScheduledTask, triggerScheduledTaskRun } from '../domains/exports/service.ts'
import { chSelect, usageSource } from '../domains/exports/sources.ts'
import { sqlString } from '../infra/ch-literals.ts'
import { startRoles } from '../roles.ts'
import { benchDataDir, fmt, report } from './common.ts'
import { loadMarch } from './march-events.ts'

const N = Number(process.env.BENCH_SCHEDULED_EXPORT_EVENTS ?? 10_000_000)
const DAY = { start: new Date('2024-03-01T00:00:00Z'), end: new Date('2024-03-02T00:00:00Z') }
const dataDir = benchDataDir('scheduled-export')
const env = { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', DATA_DIR: dataDir, KAFKA_BROKERS: '', METRICS_PORT: 'off' }
const running = await startRoles(loadConfig(env), ['api'])
const { deps } = running
const tenant = running.bootstrap!
const scope = { tenantId: tenant.tenantId, environmentId: tenant.environments.production }
const actor = { ...scope, keyId: 'bench', roles: ['admin' as const] }

// The meter first (its backfill finds nothing), then N events of one day through the event_batches views.
const meter = await createMeter(deps, actor, { name: 'tokens', event_name: 'api.call', aggregation: { type: 'SUM', field: 'tokens' } })
let revision = 0
while ((revision = (await getMeter(deps, scope, meter.id)).ready_revision) === 0) await new Promise((r) => setTimeout(r, 200))
const loadSeconds = await loadMarch(deps.ch, scope, { meterId: meter.id, events: N, customers: 1000, sources: 0, spanMs: 86_400_000, tables: ['meter_usage'] })

// Created as of now (the worker is not running here): only the forced runs below export.
const task = await createScheduledTask(deps, actor, { entity_type: 'usage', interval: 'daily', job_config: { local_directory: 'bench', format: 'parquet' } })

const kib = (field: string) => Number(/(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8').split('\n').find((l) => l.startsWith(field))!)![1])

interface Run {
  seconds: number
  rows: number
  bytes: number
  peakGrowthMb: number
}

/** Times `work` with the process's RSS high-water mark (VmHWM) reset first (/proc/self/clear_refs). */
async function timed(work: () => Promise<{ rows: number; bytes: number }>): Promise<Run> {
  ;(globalThis as { gc?: () => void }).gc?.()
  await new Promise((r) => setTimeout(r, 200))
  const idle = kib('VmRSS:')
  writeFileSync('/proc/self/clear_refs', '5')
  const t = performance.now()
  const { rows, bytes } = await work()
  return { seconds: (performance.now() - t) / 1000, rows, bytes, peakGrowthMb: (kib('VmHWM:') - idle) / 1024 }
}

/** A forced run of the day, waited for until its run is recorded (completed, or failed: then the bench fails). */
const scheduledRun = () =>
  timed(async () => {
    const { run_ids } = await triggerScheduledTaskRun(deps, actor, task.id, { start_time: DAY.start.toISOString(), end_time: DAY.end.toISOString() })
    for (;;) {
      const run = (await getScheduledTask(deps, actor, task.id)).runs!.find((r) => r.id === run_ids[0])!
      if (run.run_status === 'failed') throw new Error(`the run failed: ${run.error}`)
      if (run.run_status === 'completed') return { rows: run.row_count!, bytes: run.byte_count! }
      await new Promise((r) => setTimeout(r, 20))
    }
  })

const outfile = join(dataDir, 'ceiling.parquet')
const statement = chSelect(usageSource(scope, DAY.start, DAY.end, [{ id: meter.id, revision }], {}), 'parquet')
const clickhouseAlone = () =>
  timed(async () => {
    rmSync(outfile, { force: true })
    await deps.ch.commandApart(`${statement} INTO OUTFILE ${sqlString(outfile)} TRUNCATE FORMAT Parquet`)
    const rs = await deps.ch.client.query({ query: `SELECT count() AS n FROM file(${sqlString(outfile)}, Parquet)`, format: 'JSONEachRow' })
    return { rows: Number(((await rs.json()) as { n: string }[])[0].n), bytes: statSync(outfile).size }
  })

const runs: { scheduled: Run[]; ch: Run[] } = { scheduled: [], ch: [] }
for (let i = 0; i < 2; i++) {
  runs.ch.push(await clickhouseAlone())
  runs.scheduled.push(await scheduledRun())
}
for (const r of [...runs.scheduled, ...runs.ch]) if (r.rows !== N) throw new Error(`a file holds ${r.rows} rows of ${N}`)
await running.stop()

const best = (list: Run[]) => list.reduce((a, b) => (b.seconds < a.seconds ? b : a))
const row = (label: string, list: Run[]) => {
  const b = best(list)
  return `| ${label} | ${fmt(N / b.seconds)} | ${fmt(b.seconds, 2)} | ${fmt(b.bytes / 1e6, 1)} | ${list.map((r) => fmt(r.peakGrowthMb)).join(' · ')} |`
}
const [s, c] = [best(runs.scheduled), best(runs.ch)]
const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
report(`## Scheduled export (usage to Parquet)

A daily scheduled task (\`entity_type: usage\`, \`format: parquet\`, a local directory) forced to run one day holding
${fmt(N)} metered events (1,000 customers; loaded in ${fmt(loadSeconds, 1)} s): the run planned, claimed under its lease, its rows
(one per event and meter, the meter's value) written by ClickHouse as Parquet (Snappy), counted from the file's footer and moved
into the task's directory, timed from the trigger to the run recorded completed; next to ClickHouse writing the same statement's
rows to a Parquet file alone (\`INTO OUTFILE … FORMAT Parquet\`) as the same-run ceiling. Alternated, each twice (best time;
peak RSS growth of each run: the process's high-water mark, chDB included, over its RSS before). Ratio:
**${fmt(c.seconds / s.seconds, 2)}** of ClickHouse's own speed (${fmt(N / s.seconds)} rows/s against ${fmt(N / c.seconds)}).
Load average at the end: ${load}.

| writer | rows/s | seconds | MB | peak RSS growth MB |
| --- | ---: | ---: | ---: | ---: |
${row('scheduled export run (Parquet, local directory)', runs.scheduled)}
${row('ClickHouse INTO OUTFILE alone (ceiling)', runs.ch)}
`)
process.exit(0)
