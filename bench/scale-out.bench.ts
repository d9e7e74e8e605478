// (11) Scale-out (issue 31): what the aggregator gains from more processes on this machine's cores. The same backlog
// of N events (UUID ids, 1,000 customers, one SUM meter) is pre-loaded into fresh topics of 6 partitions, one topic
// per drain, and drained by 1 and by 3 `meterbill aggregator` processes of the CLI (one consumer group), alternately.
// chDB binds a data directory to one process, so the shared store is the ClickHouse HTTP endpoint of
// test/clickhouse-http/server.ts (ClickHouse's HTTP interface over chDB, a process of its own), for 1 process as for 3:
// like is compared with like. Each drain gets a fresh ClickHouse database on it (the same ids stored afresh); the
// meters are read from a fresh database on a Postgres server (SCALE_POSTGRES_URL, else DATABASE_URL, else
// postgres://postgres@127.0.0.1:5432/postgres), dropped at the end. Needs KAFKA_BROKERS.
//
// Measured per drain: the time from spawning the processes to the last offset committed (start-up, group join and
// the tail included), the sustained rate from the first poll at which the group is Stable with every process and 10% of
// the backlog is committed to 90% committed, and in that window the CPU of every thread of each aggregator and of the
// endpoint (/proc/<pid>/task), and of the broker (BROKER_PID).
// BENCH_SCALE_EVENTS (200,000 by default; 1,000,000 for BENCHMARKS.md's table), BENCH_SCALE_ROUNDS (1: one drain
// by 1 process, one by 3; 2: 1, 3, 1, 3), BENCH_SCALE_PROCESSES (3).
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { Kafka, logLevel } from 'kafkajs'
import postgres from 'postgres'
import { loadConfig } from '../core/config.ts'
import { createMeter } from '../domains/catalog/meters/service.ts'
import { startRoles } from '../roles.ts'
import { consumerGroup } from '../aggregator/consumer.ts'
import { committedEvents, preloadTopic } from './aggregator-drain.ts'
import { freePort } from '../test/kafka.ts'
import { BENCH_TOPIC_PREFIX, benchDataDir, fmt, removeBenchTopics, report, YOUNG_GENERATION } from './common.ts'

const TITLE = '## 11. Scale-out: aggregator processes on one ClickHouse (issue 31)'
const N = Number(process.env.BENCH_SCALE_EVENTS ?? 200_000)
const ROUNDS = Number(process.env.BENCH_SCALE_ROUNDS ?? 1)
const MANY = Number(process.env.BENCH_SCALE_PROCESSES ?? 3)
const PARTITIONS = 6
const BROKER_PID = process.env.BROKER_PID ? Number(process.env.BROKER_PID) : undefined
const ROOT = fileURLToPath(new URL('..', import.meta.url))
const brokers = process.env.KAFKA_BROKERS
if (!brokers) {
  report(`${TITLE}\n\nNot measured: KAFKA_BROKERS is not set.`)
  process.exit(0)
}
const pgServer = process.env.SCALE_POSTGRES_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0)
const runId = `${process.pid}${Date.now().toString(36)}`

// ---------------------------------------------------------------------------------------------------------------
// CPU by thread, from /proc: the main thread is the one whose id is the process's; chDB names its own threads
// (ThreadPool: a query's pipeline; MergeMutate: merges; ...), Node's other threads are all "node" (the aggregator's
// decode worker, V8's GC and compiler helpers, libuv's pool, which also runs chDB's statements in the endpoint).

type Threads = Map<number, { name: string; seconds: number }>

function threads(pid: number): Threads {
  const out: Threads = new Map()
  let tids: string[] = []
  try {
    tids = readdirSync(`/proc/${pid}/task`)
  } catch {
    return out
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
      const f = stat.slice(stat.lastIndexOf(') ') + 2).split(' ')
      out.set(Number(tid), { name: Number(tid) === pid ? 'main' : name, seconds: (Number(f[11]) + Number(f[12])) / 100 })
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return out
}

function processSeconds(pid: number): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return (Number(f[11]) + Number(f[12])) / 100
  } catch {
    return Number.NaN
  }
}

interface Sample {
  at: number
  committed: number
  total: Map<number, number>
  byThread: Map<number, Threads>
}

function sample(pids: number[], committed: number): Sample {
  return { at: performance.now(), committed, total: new Map(pids.map((p) => [p, processSeconds(p)])), byThread: new Map(pids.map((p) => [p, threads(p)])) }
}

/** CPU seconds of `pid` between two samples: all threads, and by thread group (threads that ended in between are in `total` only). */
function used(a: Sample, b: Sample, pid: number): { total: number; groups: Map<string, number>; threads: { name: string; seconds: number }[] } {
  const before = a.byThread.get(pid) ?? new Map()
  const list = [...(b.byThread.get(pid) ?? new Map()).entries()].map(([tid, t]) => ({ name: t.name, seconds: t.seconds - (before.get(tid)?.seconds ?? 0) }))
  list.sort((x, y) => y.seconds - x.seconds)
  const groups = new Map<string, number>()
  for (const t of list) groups.set(t.name, (groups.get(t.name) ?? 0) + t.seconds)
  return { total: (b.total.get(pid) ?? Number.NaN) - (a.total.get(pid) ?? Number.NaN), groups, threads: list }
}

// ---------------------------------------------------------------------------------------------------------------
// The engines: a Postgres database of the run, the ClickHouse endpoint in a process of its own.

const pgName = `meterbill_bench_scale_${runId}`
const admin = postgres(pgServer, { max: 1, onnotice: () => {} })
try {
  await admin.unsafe(`CREATE DATABASE ${pgName}`)
} catch (err) {
  await admin.end()
  report(`${TITLE}\n\nNot measured: no Postgres server at ${pgServer.replace(/:[^:@/]*@/, ':…@')} (${(err as Error).message}); set SCALE_POSTGRES_URL.`)
  process.exit(0)
}
await admin.end()
const pgUrl = new URL(pgServer)
pgUrl.pathname = `/${pgName}`
async function dropPostgres(): Promise<void> {
  const drop = postgres(pgServer, { max: 1, onnotice: () => {} })
  await drop.unsafe(`DROP DATABASE IF EXISTS ${pgName} WITH (FORCE)`).catch(() => {})
  await drop.end()
}

const children: ChildProcess[] = []
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
})
const shim = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'test/clickhouse-http/server.ts'), benchDataDir('scale-ch')], {
  env: { ...process.env, PORT: '0' },
  stdio: ['ignore', 'pipe', 'inherit'],
})
children.push(shim)
const chUrl = (
  JSON.parse(
    await new Promise<string>((resolve, reject) => {
      createInterface({ input: shim.stdout! }).once('line', resolve)
      shim.once('exit', (code) => reject(new Error(`the ClickHouse endpoint exited with ${code}`)))
    }),
  ) as { url: string }
).url

async function chCount(database: string): Promise<number> {
  const res = await fetch(`${chUrl}/?database=${database}`, { method: 'POST', body: 'SELECT count() FROM events' })
  return Number((await res.text()).trim())
}

const secretsKey = randomBytes(32).toString('hex')
const baseEnv = (database: string, topic: string, dataDir: string, metricsPort?: number): Record<string, string> => ({
  PATH: process.env.PATH ?? '',
  HOME: process.env.HOME ?? '',
  HOST: '127.0.0.1',
  PORT: '0',
  METRICS_PORT: metricsPort === undefined ? 'off' : String(metricsPort),
  LOG_LEVEL: 'warn',
  DATA_DIR: dataDir,
  DATABASE_URL: pgUrl.toString(),
  CLICKHOUSE_URL: chUrl,
  CLICKHOUSE_DATABASE: database,
  KAFKA_BROKERS: brokers,
  KAFKA_TOPIC: topic,
  KAFKA_PARTITIONS: String(PARTITIONS),
  SECRETS_ENCRYPTION_KEY: secretsKey,
  METER_BACKFILL_SETTLE_SECONDS: '0',
})

interface Drained {
  processes: number
  seconds: number
  sustained: number
  stored: number
  /** CPU µs an event in the 10–90% window: each aggregator, the endpoint, the broker. */
  aggregators: { total: number; groups: Map<string, number>; threads: { name: string; seconds: number }[] }[]
  endpoint: { total: number; groups: Map<string, number>; threads: { name: string; seconds: number }[] }
  broker: number
  windowEvents: number
  windowSeconds: number
  startupCpu: number
  /** Rows per insert and seconds per insert (retries included), from each process's /metrics. */
  rowsPerInsert: number
  insertSeconds: number
  load: string
}

/** Sum and count of a histogram of the aggregator's /metrics. */
async function histogram(port: number, name: string): Promise<{ sum: number; count: number }> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
  const value = (suffix: string) => Number(new RegExp(`^${name}_${suffix}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN)
  return { sum: value('sum'), count: value('count') }
}

// Whatever fails, the run's Postgres database, its topics and the endpoint go at the end.
const kafka = new Kafka({ brokers: brokers.split(','), logLevel: logLevel.NOTHING })
const kafkaAdmin = kafka.admin()
const results: Drained[] = []
const produceRates: number[] = []
const plan = Array.from({ length: ROUNDS }, () => [1, MANY]).flat()
const drains = plan.map((processes, i) => ({ processes, database: `scale_${runId}_${i}`, topic: `${BENCH_TOPIC_PREFIX}scale-${runId}-${i}` }))
try {
  // The tenant and the meter, in Postgres, once; each drain's ClickHouse database migrated before its processes start.
  let running = await startRoles(loadConfig({ ...baseEnv(drains[0].database, drains[0].topic, benchDataDir('scale-setup')), KAFKA_BROKERS: '', LOG_LEVEL: 'silent' }), ['api'])
  const tenant = running.bootstrap!
  const scope = { tenantId: tenant.tenantId, environmentId: tenant.environments.production }
  await createMeter(running.deps, { ...scope, keyId: 'bench', roles: ['admin' as const] }, { name: 'tokens', event_name: 'api.call', aggregation: { type: 'SUM', field: 'tokens' } })
  await running.stop()
  for (const d of drains.slice(1)) {
    running = await startRoles(loadConfig({ ...baseEnv(d.database, d.topic, benchDataDir('scale-setup')), KAFKA_BROKERS: '', LOG_LEVEL: 'silent' }), [])
    await running.stop()
  }

  // The same events into every drain's topic, all before the first drain.
  await kafkaAdmin.connect()
  await kafkaAdmin.createTopics({ waitForLeaders: true, topics: drains.flatMap((d) => [{ topic: d.topic, numPartitions: PARTITIONS }, { topic: `${d.topic}-dlq`, numPartitions: 1 }]) })
  const same = { ids: Array.from({ length: N }, () => randomUUID()), at: new Date() }
  for (const d of drains) produceRates.push(await preloadTopic(kafka, d.topic, scope, N, same))

  // ---------------------------------------------------------------------------------------------------------------
  // A drain: k aggregator processes of the CLI spawned together; committed offsets polled every 100 ms.

  async function drain(d: (typeof drains)[number]): Promise<Drained> {
    const load = loadavg()
      .map((l) => l.toFixed(1))
      .join(', ')
    const ports = await Promise.all(Array.from({ length: d.processes }, freePort))
    const procs = ports.map((metricsPort, i) => {
      const tail: string[] = []
      const child = spawn(process.execPath, [YOUNG_GENERATION, '--import', 'tsx', join(ROOT, 'cli.ts'), 'aggregator'], {
        cwd: ROOT,
        env: baseEnv(d.database, d.topic, benchDataDir(`scale-agg${i}`), metricsPort),
        stdio: ['ignore', 'ignore', 'pipe'],
      })
      children.push(child)
      createInterface({ input: child.stderr! }).on('line', (l) => {
        tail.push(l)
        if (tail.length > 40) tail.shift()
      })
      return { child, tail }
    })
    const pids = procs.map((p) => p.child.pid!)
    const watched = [...pids, shim.pid!]
    const start = sample(watched, 0)
    let from: Sample | undefined
    let to: Sample | undefined
    let brokerFrom = Number.NaN
    let brokerTo = Number.NaN
    for (;;) {
      const dead = procs.find((p) => p.child.exitCode !== null || p.child.signalCode !== null)
      if (dead) throw new Error(`an aggregator exited (${dead.child.exitCode ?? dead.child.signalCode}):\n${dead.tail.join('\n')}`)
      const [{ committed, end }, group] = await Promise.all([committedEvents(kafkaAdmin, d.topic), kafkaAdmin.describeGroups([consumerGroup(d.topic)])])
      // The window opens once every process is a member of the settled group (start-up and rebalances left out) and
      // a tenth of the backlog is committed.
      const settled = group.groups[0]?.state === 'Stable' && group.groups[0].members.length === d.processes
      if (!from && settled && committed >= 0.1 * end) {
        from = sample(watched, committed)
        brokerFrom = BROKER_PID ? processSeconds(BROKER_PID) : Number.NaN
      }
      if (!to && committed >= 0.9 * end) {
        to = sample(watched, committed)
        brokerTo = BROKER_PID ? processSeconds(BROKER_PID) : Number.NaN
      }
      if (committed === end) break
      await sleep(100)
    }
    const done = sample(watched, N)
    if (!from || !to || from.committed >= to.committed) throw new Error(`the group of ${d.processes} settled only after 90% of the backlog was committed: more events (BENCH_SCALE_EVENTS)`)
    const rows = await Promise.all(ports.map((p) => histogram(p, 'meterbill_batch_rows')))
    const inserts = await Promise.all(ports.map((p) => histogram(p, 'meterbill_batch_insert_seconds')))
    await Promise.all(
      procs.map(async ({ child }) => {
        const exited = new Promise((r) => child.once('exit', r))
        child.kill('SIGTERM')
        const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
        await exited
        clearTimeout(timer)
      }),
    )
    const windowEvents = to!.committed - from!.committed
    const windowSeconds = (to!.at - from!.at) / 1000
    // Each process's CPU before the window opens: its start (tsx's compile, connections, the group's join) and its share of the first tenth drained.
    const startupCpu = pids.reduce((s, p) => s + used(start, from!, p).total, 0) / d.processes
    return {
      processes: d.processes,
      seconds: (done.at - start.at) / 1000,
      sustained: windowEvents / windowSeconds,
      stored: await chCount(d.database),
      aggregators: pids.map((p) => used(from!, to!, p)),
      endpoint: used(from!, to!, shim.pid!),
      broker: brokerTo - brokerFrom,
      windowEvents,
      windowSeconds,
      startupCpu,
      rowsPerInsert: sum(rows.map((r) => r.sum)) / sum(rows.map((r) => r.count)),
      insertSeconds: sum(inserts.map((r) => r.sum)) / sum(inserts.map((r) => r.count)),
      load,
    }
  }

  for (const d of drains) {
    process.stderr.write(`scale-out: draining ${fmt(N)} events with ${d.processes} aggregator process(es)\n`)
    results.push(await drain(d))
    const r = results.at(-1)!
    process.stderr.write(`scale-out: ${d.processes} → ${fmt(r.sustained)} events/s (10–90%), ${fmt(r.seconds, 1)} s end to end, stored ${fmt(r.stored)}\n`)
  }
} finally {
  await kafkaAdmin.disconnect().catch(() => {})
  await removeBenchTopics(brokers, drains.map((d) => d.topic))
  shim.kill('SIGTERM')
  await new Promise((r) => shim.once('exit', r))
  await dropPostgres()
}

// ---------------------------------------------------------------------------------------------------------------
// The report.

const us = (seconds: number, events: number) => fmt((seconds * 1e6) / events, 1)
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]
const rows = results.map((r) => {
  const aggCpu = sum(r.aggregators.map((a) => a.total))
  const all = aggCpu + r.endpoint.total + (Number.isNaN(r.broker) ? 0 : r.broker)
  return `| ${r.processes} | ${fmt(r.stored)} of ${fmt(N)} | ${fmt(r.seconds, 1)} | ${fmt(r.sustained)} | ${r.aggregators.map((a) => us(a.total, r.windowEvents)).join(' · ')} | ${us(aggCpu, r.windowEvents)} | ${us(r.endpoint.total, r.windowEvents)} | ${Number.isNaN(r.broker) ? '–' : us(r.broker, r.windowEvents)} | ${fmt(all / r.windowSeconds, 2)} | ${fmt(r.startupCpu, 1)} | ${fmt(r.rowsPerInsert)} | ${fmt(r.insertSeconds * 1000)} | ${r.load} |`
})
const one = results.filter((r) => r.processes === 1).map((r) => r.sustained)
const many = results.filter((r) => r.processes === MANY).map((r) => r.sustained)

/** Threads by group, µs an event, for the last drain of each process count. */
function threadTable(r: Drained): string {
  const agg = new Map<string, number>()
  for (const a of r.aggregators) {
    // Node's threads are all "node": the busiest after the main thread is the decode worker (aggregator/chunks.ts).
    const [decode, ...rest] = a.threads.filter((t) => t.name !== 'main')
    agg.set('main (kafkajs, lookup and insert requests, commits)', (agg.get('main (kafkajs, lookup and insert requests, commits)') ?? 0) + (a.groups.get('main') ?? 0))
    if (decode) agg.set('busiest other thread (the decode worker)', (agg.get('busiest other thread (the decode worker)') ?? 0) + decode.seconds)
    agg.set('other threads (V8 GC and compiler, libuv)', (agg.get('other threads (V8 GC and compiler, libuv)') ?? 0) + sum(rest.map((t) => t.seconds)))
    agg.set('threads ended in the window', (agg.get('threads ended in the window') ?? 0) + a.total - sum(a.threads.map((t) => t.seconds)))
  }
  // chDB's shared pool threads take the name of their task of the moment: only its main thread, Node's threads and the merges' own pool are told apart.
  const ep = new Map<string, number>()
  for (const [name, s] of r.endpoint.groups) {
    const group = name === 'main' ? 'main (HTTP, request bodies, SET statements)' : name === 'node' ? "Node's other threads (libuv pool running chDB's statements, V8 helpers)" : name === 'MergeMutate' ? 'MergeMutate (merges)' : "chDB's other threads (query pipelines, views, background pools)"
    ep.set(group, (ep.get(group) ?? 0) + s)
  }
  ep.set('threads ended in the window', r.endpoint.total - sum(r.endpoint.threads.map((t) => t.seconds)))
  const line = (who: string, m: Map<string, number>) =>
    [...m]
      .filter(([, s]) => Math.abs(s) >= 0.005)
      .sort((a, b) => b[1] - a[1])
      .map(([name, s]) => `| ${r.processes} | ${who} | ${name} | ${us(s, r.windowEvents)} |`)
  return [...line(r.processes === 1 ? 'aggregator' : `${r.processes} aggregators`, agg), ...line('endpoint', ep)].join('\n')
}
const last = (k: number) => results.filter((r) => r.processes === k).at(-1)!

report(`${TITLE}

${fmt(N)} events with UUID ids (1,000 customers, one SUM meter) pre-loaded into a fresh ${brokers} topic of ${PARTITIONS} partitions per
drain (the same events into each; produced at ${produceRates.map((p) => fmt(p)).join(' · ')} events/s), drained by 1 and by ${MANY}
\`meterbill aggregator\` processes of the CLI (\`${YOUNG_GENERATION}\`, one consumer group) in the order
${plan.join(', ')}, each drain into a fresh database of one ClickHouse HTTP endpoint (test/clickhouse-http/server.ts: ClickHouse's HTTP
interface over chDB, a process of its own), meters read from Postgres (a database of the run on ${pgUrl.host}). Drain time: from
spawning the processes to the last offset committed (start-up, group join and the tail included); sustained: events committed
between 10% and 90% of the backlog ÷ that time; CPU (/proc, every thread) in that window ÷ its events. ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'},
${new Date().toISOString()}.

| aggregators | events stored | drain s | sustained events/s | CPU µs/event, each aggregator | all aggregators | endpoint | broker | cores busy | CPU s a process before the window | rows an insert | ms an insert | load average before |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |
${rows.join('\n')}

${MANY} processes ÷ 1 (sustained, median of each): **${fmt(median(many) / median(one), 2)}**.

Where the CPU goes (the last drain of each; µs an event):

| aggregators | process | threads | µs/event |
| ---: | --- | --- | ---: |
${threadTable(last(1))}
${threadTable(last(MANY))}`)
process.exit(0)
