// (8) The load a newcomer tries first: `npm start` itself (every role in one process, embedded PGlite and chDB,
// direct mode, default settings), 8 connections posting 500-event bulks (a burst, then the same load on as long again
// and more: what it sustains), against the parse-and-validate ceiling
// server (bench/intake-server.ts) under the same load in the same run. Then every accepted event is counted back
// through the API: nothing lost, nothing twice.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { blast, bulkBodies, fmt, intakeServer, report, type LoadResult } from './common.ts'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
// After the burst, the same load goes on this long: what it is accepted at once the log's backlog has built up is what
// the process sustains (the inserter's rate, intake beside it on the same cores).
const STEADY_SECONDS = Number(process.env.BENCH_STEADY_SECONDS ?? 30)
const LOAD = { concurrency: 8, eventsPerRequest: 500 }

/** `npm start` as a newcomer runs it: no engine variables, a fresh data directory. */
async function npmStart(dataDir: string) {
  const env: Record<string, string | undefined> = { ...process.env, DATA_DIR: dataDir, PORT: '0', METRICS_PORT: '0' }
  for (const name of ['DATABASE_URL', 'KAFKA_BROKERS', 'CLICKHOUSE_URL', 'NODE_OPTIONS']) delete env[name]
  // Its own process group, so that the service npm starts stops with it.
  const child = spawn('npm', ['start'], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  // The key comes alone on stdout; the address on stderr, with the other messages.
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`npm start exited with ${code}`))))
  const lineOf = (input: NodeJS.ReadableStream, pattern: RegExp) =>
    Promise.race([exited, new Promise<string>((resolve) => createInterface({ input }).on('line', (line) => pattern.exec(line) && resolve(pattern.exec(line)![1])))])
  const [key, port] = await Promise.all([lineOf(child.stdout!, /^(mb_\S+)/), lineOf(child.stderr!, /listening on http:\/\/127\.0\.0\.1:(\d+)/).then(Number)]).catch((err: unknown) => {
    process.kill(-child.pid!, 'SIGTERM')
    throw err
  })
  return { port, key, child }
}

/**
 * Usage counted through the API, in 5-second windows (a usage read refuses a range of over 1,000,000 events); a read
 * waits for the events acknowledged before it (503 after 5 s: asked again).
 */
async function counted(port: number, key: string, from: Date): Promise<number> {
  const end = Date.now() + 60_000
  let total = 0
  for (let at = from.getTime(); at < end; at += 5000) {
    for (let tries = 1; ; tries++) {
      const value = await countedOnce(port, key, new Date(at), new Date(Math.min(at + 5000, end)))
      if (value !== undefined) {
        total += value
        break
      }
      if (tries === 24) return Number.NaN
    }
  }
  return total
}

/** The log's backlog (events acknowledged, not yet inserted) as /v1/health reports it. */
async function backlog(port: number): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}/v1/health`)
  return ((await res.json()) as { event_log?: { backlog_events: number } }).event_log?.backlog_events ?? 0
}

async function countedOnce(port: number, key: string, from: Date, to: Date): Promise<number | undefined> {
  const res = await fetch(`http://127.0.0.1:${port}/v1/events/usage`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ event_name: 'api.call', aggregation_type: 'COUNT', start_time: from.toISOString(), end_time: to.toISOString() }),
  })
  const body = (await res.json()) as { value?: string; message?: string }
  if (res.status === 503) return undefined
  if (res.status !== 200) throw new Error(`usage answered ${res.status}: ${body.message}`)
  return Number(body.value)
}

const body = bulkBodies()
const ceiling = await intakeServer('ceiling')
await blast({ port: ceiling.port, path: '/v1/events/bulk', key: ceiling.key, body, ...LOAD, seconds: 1 })
const top = await blast({ port: ceiling.port, path: '/v1/events/bulk', key: ceiling.key, body, ...LOAD, seconds: SECONDS })
ceiling.child.kill('SIGTERM')

const dataDir = mkdtempSync(join(tmpdir(), 'meterbill-bench-npm-start-'))
const started = new Date(Date.now() - 60_000)
const service = await npmStart(dataDir)
let run: LoadResult
let steady: LoadResult
let stored: number
let warm: LoadResult
let left: number
let leftAfterSteady: number
let insertRate: number
let drainSeconds: number
try {
  const t0 = performance.now()
  warm = await blast({ port: service.port, path: '/v1/events/bulk', key: service.key, body, ...LOAD, seconds: 1 })
  run = await blast({ port: service.port, path: '/v1/events/bulk', key: service.key, body, ...LOAD, seconds: SECONDS })
  left = await backlog(service.port)
  steady = await blast({ port: service.port, path: '/v1/events/bulk', key: service.key, body, ...LOAD, seconds: STEADY_SECONDS })
  leftAfterSteady = await backlog(service.port)
  const loadEnd = performance.now()
  // From the first request to the last acknowledged event stored (the log's backlog empty): the insert rate.
  while ((await backlog(service.port)) > 0) await new Promise((r) => setTimeout(r, 100))
  drainSeconds = (performance.now() - loadEnd) / 1000
  insertRate = (warm.events + run.events + steady.events) / ((performance.now() - t0) / 1000)
  stored = await counted(service.port, service.key, started)
} finally {
  process.kill(-service.child.pid!, 'SIGTERM')
  await new Promise((r) => service.child.once('exit', r))
  // The service may still be ending (npm exits first): retried until its files are gone.
  rmSync(dataDir, { recursive: true, force: true, maxRetries: 20, retryDelay: 250 })
}
const accepted = warm.events + run.events + steady.events
// Stored during the steady phase: what was accepted in it less what the backlog grew by.
const steadyInserted = (steady.events - (leftAfterSteady - left)) / steady.seconds
const row = (name: string, r: LoadResult) =>
  `| ${name} | ${fmt(r.eventsPerSecond)} | ${fmt(r.p50, 1)} | ${fmt(r.p99, 1)} | ${fmt(r.eventsPerSecond / top.eventsPerSecond, 2)} | ${r.failed} |`
report(`## 8. \`npm start\` under a newcomer's load

\`npm start\` exactly as README.md runs it (all roles in one process, embedded engines, direct mode, default settings), ${LOAD.concurrency}
connections posting ${LOAD.eventsPerRequest}-event bulks: a burst of ${SECONDS} s, then ${STEADY_SECONDS} s more of the same load (steady), against the
parse-and-validate ceiling server under the burst's load in the same run. Accepted ${fmt(accepted)} events (warm-up included), counted back
through \`POST /v1/events/usage\`: ${fmt(stored)}${stored === accepted ? ' (all, once)' : ' (MISMATCH)'}. The log's backlog (acknowledged, not yet
stored) was ${fmt(left)} events after the burst and ${fmt(leftAfterSteady)} after the steady load, stored ${fmt(drainSeconds, 1)} s later; during the steady
load the inserter stored ${fmt(steadyInserted)} events/s, and from the first request until all were stored ${fmt(insertRate)} events/s.
Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${new Date().toISOString().slice(0, 16)}Z, load average ${loadavg().map((l) => l.toFixed(1)).join(', ')} at the end.

| server | events/s accepted | p50 ms | p99 ms | ratio to ceiling | non-202 |
| --- | ---: | ---: | ---: | ---: | ---: |
${row('ceiling', top)}
${row('npm start, burst', run)}
${row('npm start, steady', steady)}`)
process.exit(stored === accepted ? 0 : 1)
