// The program as it is deployed, several processes on shared engines, through faults while events stream in:
// the ClickHouse HTTP endpoint (test/clickhouse-http/server.ts) as the shared ClickHouse in a process of its own,
// a Postgres server, a 3-node KRaft Kafka cluster (replication factor 3, min.insync.replicas 2), two `ingest`,
// three `aggregator` (one consumer group), one `api` and one `worker` process, each a child process of the CLI
// with its own PORT, METRICS_PORT and DATA_DIR. While both ingest processes take bulk requests (some resent, same
// ids, to the other one): an aggregator is SIGKILLed (no replacement: the other two take its partitions), a
// Kafka node is stopped and started again, Postgres restarts, and ClickHouse is unreachable for 30 s (its process
// killed, started again on the same port and data). The client retries 503, 429 and connection errors with the
// same ids. Then: every id answered 202 is stored exactly once (ClickHouse, the raw-events API, a COUNT meter), the
// duplicates recorded are the extra copies clients sent (none for the replays of the killed aggregator's chunks),
// nothing is stored that was never sent, and every process but the killed one is alive and healthy.
//
// It restarts the machine's Postgres, so it runs apart from the rest of the suite: in CI as its own step of
// .ci/run (`MULTIPROCESS_TEST=1 npx vitest run --project multiprocess`), elsewhere only with MULTIPROCESS_TEST=1
// (DATABASE_URL: a local Postgres server this user may restart with pg_ctlcluster, or MULTIPROCESS_PG_RESTART: the
// command that restarts it). The Kafka cluster is scripts/services.sh's (KAFKA_CLUSTER_SIZE=3), started here if
// .ci/run did not start it first.
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createWriteStream, mkdtempSync, readdirSync, rmSync, type WriteStream } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { Kafka, logLevel } from 'kafkajs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { eventKey, keyPartition } from '../../core/partition.ts'
import { ownDatabase } from '../harness.ts'
import { freePort } from '../kafka.ts'

const ENABLED = Boolean(process.env.CI || process.env.MULTIPROCESS_TEST)
if (!ENABLED) console.log('skipped: multi-process fault test runs in CI (set MULTIPROCESS_TEST=1)')

const ROOT = join(import.meta.dirname, '../..')
const run = promisify(execFile)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const T0 = Date.now()
const since = () => `${((Date.now() - T0) / 1000).toFixed(1)}s`

/** What happened when, printed with any failure. */
const timeline: string[] = []
const note = (line: string): void => {
  timeline.push(`[${since()}] ${line}`)
  if (process.env.MULTIPROCESS_VERBOSE) console.log(`[multiprocess ${since()}] ${line}`)
}

// ---------------------------------------------------------------------------------------------------------------
// The run's shape.

const EVENTS_PER_REQUEST = 1000
/** A new batch of distinct ids this often, alternately to each ingest process, while the faults run. */
const BATCH_EVERY_MS = 1500
/** Every third batch is also sent, at the same moment, to the other ingest process. */
const RESEND_EVERY = 3
/** After the faults, the first batches are sent again to both ingest processes. */
const LATE_RESENDS = 4
const CUSTOMERS = 24
const PARTITIONS = 6
const CLICKHOUSE_DOWN_MS = 30_000
const KAFKA_NODES = 3
const STOPPED_NODE = 1

const runId = `${Date.now().toString(36)}${process.pid.toString(36)}`
const topic = `usage-events-mp-${runId}`
const chDatabase = `mp_${runId}`
const bootstrapKey = `mb_mp_${randomBytes(24).toString('hex')}`
const secretsKey = randomBytes(32).toString('hex')
/** Every event's timestamp: an hour before the run, a millisecond apart (within the dedup window, never in the future). */
const BASE_TIME = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 3_600_000
const RANGE = { start_time: new Date(BASE_TIME - 3_600_000).toISOString(), end_time: new Date(BASE_TIME + 3 * 3_600_000).toISOString() }


// ---------------------------------------------------------------------------------------------------------------
// Child processes: their output to a file each, the last lines kept for failure messages.

const workDir = ENABLED ? mkdtempSync(join(tmpdir(), 'meterbill-mp-')) : ''

class Proc {
  child!: ChildProcess
  private tail: string[] = []
  private log!: WriteStream
  /** Set when the test kills it on purpose: its exit is expected. */
  killedOnPurpose = false
  exits: string[] = []

  constructor(
    readonly name: string,
    private readonly argv: string[],
    private readonly env: NodeJS.ProcessEnv,
    readonly port?: number,
    readonly metricsPort?: number,
  ) {}

  start(): void {
    this.log ??= createWriteStream(join(workDir, `${this.name}.log`), { flags: 'a' })
    this.child = spawn(process.execPath, this.argv, { cwd: ROOT, env: this.env, stdio: ['ignore', 'pipe', 'pipe'] })
    const keep = (chunk: Buffer): void => {
      this.log.write(chunk)
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) this.tail.push(line.length > 600 ? `${line.slice(0, 600)}…` : line)
      if (this.tail.length > 200) this.tail.splice(0, this.tail.length - 200)
    }
    this.child.stdout!.on('data', keep)
    this.child.stderr!.on('data', keep)
    const child = this.child
    child.once('exit', (code, signal) => {
      const line = `${this.name} (pid ${child.pid}) exited: code ${code}, signal ${signal}${this.killedOnPurpose ? ' (killed by the test)' : ''}`
      this.exits.push(line)
      note(line)
    })
    note(`${this.name} started (pid ${child.pid})`)
  }

  get alive(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null
  }

  logTail(lines = 40): string {
    return `--- ${this.name} (pid ${this.child?.pid}, ${this.alive ? 'alive' : 'exited'}; full log ${join(workDir, `${this.name}.log`)}), last ${Math.min(lines, this.tail.length)} lines:\n${this.tail.slice(-lines).join('\n')}`
  }

  async kill(signal: NodeJS.Signals): Promise<void> {
    if (!this.alive) return
    const exited = new Promise((r) => this.child.once('exit', r))
    this.child.kill(signal)
    await exited
  }

  /** SIGTERM, then SIGKILL after 15 s. */
  async stop(): Promise<void> {
    if (!this.alive) return
    const exited = new Promise((r) => this.child.once('exit', r))
    this.child.kill('SIGTERM')
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 15_000)
    await exited
    clearTimeout(timer)
    this.log.end()
  }
}

const procs: Proc[] = []
const allTails = (lines = 30): string => procs.map((p) => p.logTail(lines)).join('\n')
const failure = (what: string, lines = 30): Error => new Error(`${what}\n\ntimeline:\n${timeline.join('\n')}\n\n${allTails(lines)}`)

/** Polls `check` every `every` ms up to `ms`; on time out fails with `what` and what `check` last said. */
async function waitFor(what: string, ms: number, check: () => Promise<true | string>, every = 500): Promise<void> {
  const deadline = Date.now() + ms
  let last = ''
  for (;;) {
    // A process that exited unbidden will not get there: fail now, with its output.
    const dead = procs.filter((p) => !p.killedOnPurpose && !p.alive)
    if (dead.length) throw failure(`while waiting for ${what}: ${dead.map((p) => p.exits.join('; ')).join(' | ')}`, 60)
    try {
      const r = await check()
      if (r === true) return
      last = r
    } catch (err) {
      last = (err as Error).message
    }
    if (Date.now() > deadline) throw failure(`timed out after ${ms / 1000}s waiting for ${what}; last: ${last}`)
    await sleep(every)
  }
}

const get = async (url: string, timeoutMs = 5000): Promise<{ status: number; text: string }> => {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) })
  return { status: res.status, text: await res.text() }
}

// ---------------------------------------------------------------------------------------------------------------
// The engines.

/** The Kafka cluster of scripts/services.sh: started (or found running), and its nodes stopped and started. */
async function kafkaCluster(): Promise<{ brokers: string; stopNode(n: number): Promise<void>; startNode(n: number): Promise<void> }> {
  const env = { ...process.env, KAFKA_CLUSTER_SIZE: String(KAFKA_NODES) }
  const services = async (...args: string[]): Promise<string> => {
    try {
      return (await run('bash', [join(ROOT, 'scripts/services.sh'), ...args], { env, cwd: ROOT, maxBuffer: 1 << 20 })).stdout
    } catch (err) {
      const e = err as { stderr?: string; message: string }
      throw new Error(`scripts/services.sh ${args.join(' ')} (KAFKA_CLUSTER_SIZE=${KAFKA_NODES}) failed: ${e.message}\n${e.stderr ?? ''}`)
    }
  }
  const out = await services('start')
  const brokers = /export KAFKA_BROKERS=(\S+)/.exec(out)?.[1]
  if (!brokers || brokers.split(',').length !== KAFKA_NODES) throw new Error(`scripts/services.sh start (KAFKA_CLUSTER_SIZE=${KAFKA_NODES}) printed no ${KAFKA_NODES} brokers:\n${out}`)
  return {
    brokers,
    stopNode: async (n) => void (await services('stop-node', String(n))),
    startNode: async (n) => void (await services('start-node', String(n))),
  }
}


async function restartPostgres(): Promise<void> {
  const command = process.env.MULTIPROCESS_PG_RESTART ?? `pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main restart`
  try {
    await run('bash', ['-c', command], { timeout: 60_000 })
  } catch (err) {
    throw failure(`restarting Postgres (${command}) failed: ${(err as Error).message}`)
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The client: bulk requests resent with the same ids until answered 202, as docs/usage.md's sendEvents.

interface Batch {
  n: number
  ids: string[]
  body: string
}

const batchOf = (n: number): Batch => {
  const events = Array.from({ length: EVENTS_PER_REQUEST }, (_, i) => {
    const k = n * EVENTS_PER_REQUEST + i
    return {
      event_id: `mp-${runId}-${k}`,
      event_name: 'mp.call',
      external_customer_id: `mp-cust-${k % CUSTOMERS}`,
      timestamp: new Date(BASE_TIME + k).toISOString(),
      properties: { k, tokens: k % 7 },
    }
  })
  return { n, ids: events.map((e) => e.event_id), body: JSON.stringify({ events }) }
}

const sent = new Set<string>()
/** Ids some ingest process answered 202 for, and when first. */
const acked = new Map<string, number>()
const stats = { requests: 0, accepted: 0, unavailable: 0, tooMany: 0, connectionErrors: 0, perIngest: {} as Record<string, number> }
/** Copies of ids in requests answered 202, and in every request made (a 503 or a lost connection may have taken some in). */
const copies = { accepted: 0, attempted: 0 }
/** Requests still being retried; a failure that is not retryable ends the run. */
const inFlight = new Set<Promise<void>>()
let clientError: Error | undefined
const SEND_DEADLINE_MS = 150_000

async function deliver(batch: Batch, ingest: Proc, why: string): Promise<void> {
  const url = `http://127.0.0.1:${ingest.port}/v1/events/bulk`
  const deadline = Date.now() + SEND_DEADLINE_MS
  for (let attempt = 1; ; attempt++) {
    for (const id of batch.ids) sent.add(id)
    stats.requests++
    copies.attempted += batch.ids.length
    let status = 0
    let text = ''
    let retryAfter = 1
    try {
      const res = await fetch(url, { method: 'POST', headers: { 'x-api-key': bootstrapKey, 'content-type': 'application/json' }, body: batch.body, signal: AbortSignal.timeout(30_000) })
      status = res.status
      text = await res.text()
      retryAfter = Number(res.headers.get('retry-after') ?? 1)
    } catch (err) {
      // Refused, reset or timed out: the events may or may not be in; the retry's ids are deduplicated.
      stats.connectionErrors++
      text = (err as Error).message
    }
    if (status === 202) {
      const body = JSON.parse(text) as { event_ids: (string | null)[]; failed?: unknown[] }
      if (body.failed?.length || body.event_ids.length !== batch.ids.length || body.event_ids.some((id, i) => id !== batch.ids[i])) {
        throw failure(`batch ${batch.n} (${why}) to ${ingest.name}: 202 with other ids or failures: ${text.slice(0, 500)}`)
      }
      const at = Date.now()
      for (const id of batch.ids) if (!acked.has(id)) acked.set(id, at)
      stats.accepted++
      copies.accepted += batch.ids.length
      stats.perIngest[ingest.name] = (stats.perIngest[ingest.name] ?? 0) + 1
      if (attempt > 1) note(`batch ${batch.n} (${why}) accepted by ${ingest.name} after ${attempt} attempts`)
      return
    }
    if (status !== 0 && status !== 503 && status !== 429) {
      throw failure(`batch ${batch.n} (${why}) to ${ingest.name}: answered ${status}, which a client does not retry: ${text.slice(0, 500)}`)
    }
    if (status === 503) stats.unavailable++
    if (status === 429) stats.tooMany++
    if (attempt === 1 || attempt % 10 === 0) note(`batch ${batch.n} (${why}) to ${ingest.name}: attempt ${attempt} ${status || 'connection error'} ${text.slice(0, 160)}`)
    if (Date.now() > deadline) throw failure(`batch ${batch.n} (${why}) to ${ingest.name}: no 202 within ${SEND_DEADLINE_MS / 1000}s (${attempt} attempts, last ${status || 'connection error'}: ${text.slice(0, 300)})`)
    await sleep(Math.min(Math.max(retryAfter, 0.2), 2) * 1000)
  }
}

function launch(batch: Batch, ingest: Proc, why: string): void {
  const p = deliver(batch, ingest, why).catch((err: Error) => {
    clientError ??= err
  })
  inFlight.add(p)
  void p.finally(() => inFlight.delete(p))
}

// ---------------------------------------------------------------------------------------------------------------
// Reading back: ClickHouse through the endpoint, and the API.

let chUrl = ''
async function ch<T>(query: string): Promise<T[]> {
  const res = await fetch(`${chUrl}/?database=${chDatabase}&default_format=JSONEachRow`, { method: 'POST', body: query, signal: AbortSignal.timeout(30_000) })
  const text = await res.text()
  if (res.status !== 200) throw new Error(`ClickHouse ${res.status}: ${text.slice(0, 300)}`)
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as T)
}

/** The event topic's partitions as `partition→leader [isr]`. */
async function leaders(brokers: string): Promise<string> {
  const admin = new Kafka({ brokers: brokers.split(','), logLevel: logLevel.NOTHING, connectionTimeout: 3000 }).admin()
  await admin.connect()
  try {
    const { topics } = await admin.fetchTopicMetadata({ topics: [topic] })
    return topics[0].partitions
      .sort((a, b) => a.partitionId - b.partitionId)
      .map((p) => `${p.partitionId}→node ${p.leader} [isr ${p.isr.join(',')}]`)
      .join(', ')
  } finally {
    await admin.disconnect()
  }
}

/**
 * For a failure's message: the partition of each of `ids` the topic holds (a fresh consumer group reading every
 * partition to its high watermark, at most 30 s), so that an id lost before Kafka shows apart from one the
 * aggregators lost.
 */
async function inTopic(brokers: string, ids: Set<string>): Promise<{ found: Map<string, number>; complete: boolean }> {
  const kafka = new Kafka({ brokers: brokers.split(','), logLevel: logLevel.NOTHING, connectionTimeout: 3000 })
  const admin = kafka.admin()
  await admin.connect()
  const high = new Map((await admin.fetchTopicOffsets(topic)).map((o) => [o.partition, Number(o.high)]))
  await admin.disconnect()
  const found = new Map<string, number>()
  const reached = new Set([...high].filter(([, h]) => h === 0).map(([p]) => p))
  const consumer = kafka.consumer({ groupId: `mp-inspect-${runId}-${Date.now()}` })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  let done!: () => void
  const all = new Promise<void>((r) => (done = r))
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      for (const e of JSON.parse(message.value?.toString() ?? '[]') as { id: string }[]) if (ids.has(e.id)) found.set(e.id, partition)
      if (Number(message.offset) + 1 >= high.get(partition)!) reached.add(partition)
      if (reached.size === high.size) done()
    },
  })
  if (reached.size === high.size) done()
  const complete = await Promise.race([all.then(() => true), sleep(30_000).then(() => false)])
  await consumer.disconnect().catch(() => {})
  return { found, complete }
}

// ---------------------------------------------------------------------------------------------------------------

describe.skipIf(!ENABLED)('the processes of a deployment through faults', () => {
  let database: { url: string; drop(): Promise<void> } | undefined
  let cluster: Awaited<ReturnType<typeof kafkaCluster>>
  let shim: Proc
  let api: Proc
  let worker: Proc
  const ingests: Proc[] = []
  const aggregators: Proc[] = []
  let environmentId = ''
  let meterId = ''
  let passed = false

  const apiCall = async (method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> => {
    const res = await fetch(`http://127.0.0.1:${api.port}${path}`, {
      method,
      headers: { 'x-api-key': bootstrapKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    })
    const text = await res.text()
    return { status: res.status, body: text && (res.headers.get('content-type') ?? '').includes('json') ? JSON.parse(text) : text }
  }

  /** /v1/health for api and ingest (200, every engine ok), GET /metrics for the roles without an HTTP port. */
  const healthy = async (p: Proc): Promise<true | string> => {
    if (!p.alive) return `${p.name} is not running`
    if (p.port !== undefined) {
      const h = await get(`http://127.0.0.1:${p.port}/v1/health`)
      return h.status === 200 ? true : `${p.name} /v1/health ${h.status} ${h.text.slice(0, 300)}`
    }
    const m = await get(`http://127.0.0.1:${p.metricsPort}/metrics`)
    return m.status === 200 ? true : `${p.name} /metrics ${m.status}`
  }
  const allHealthy = async (list: Proc[]): Promise<true | string> => {
    const answers = await Promise.all(list.map((p) => healthy(p).catch((err: Error) => `${p.name}: ${err.message}`)))
    const bad = answers.filter((a) => a !== true)
    return bad.length ? bad.join('; ') : true
  }

  beforeAll(async () => {
    const server = process.env.DATABASE_URL
    if (!server) throw new Error('the multi-process fault test needs DATABASE_URL: a Postgres server (in CI the local one on 127.0.0.1:5432)')
    const started = Date.now()
    ;[cluster, database] = await Promise.all([kafkaCluster(), ownDatabase(server, `meterbill_test_mp_${runId}`)])
    note(`kafka cluster ${cluster.brokers}, database ${new URL(database.url).pathname.slice(1)}, topic ${topic} (${((Date.now() - started) / 1000).toFixed(1)}s)`)

    // ClickHouse: the HTTP endpoint over chDB, in a process of its own, on a port and data directory it keeps across its restart.
    const chPort = await freePort()
    const chData = join(workDir, 'clickhouse')
    chUrl = `http://127.0.0.1:${chPort}`
    shim = new Proc('clickhouse', ['--import', 'tsx', join(ROOT, 'test/clickhouse-http/server.ts'), chData], { PATH: process.env.PATH, HOME: process.env.HOME, PORT: String(chPort) }, chPort)
    procs.push(shim)
    shim.start()
    await waitFor('the ClickHouse endpoint to answer /ping', 60_000, async () => ((await get(`${chUrl}/ping`)).status === 200 ? true : 'not yet'))

    const role = async (name: string, command: string, extra: Record<string, string> = {}): Promise<Proc> => {
      const [port, metricsPort] = [await freePort(), await freePort()]
      const dataDir = join(workDir, name)
      const env: NodeJS.ProcessEnv = {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        HOST: '127.0.0.1',
        PORT: String(port),
        METRICS_PORT: String(metricsPort),
        DATA_DIR: dataDir,
        DATABASE_URL: database!.url,
        CLICKHOUSE_URL: chUrl,
        CLICKHOUSE_DATABASE: chDatabase,
        KAFKA_BROKERS: cluster.brokers,
        KAFKA_TOPIC: topic,
        KAFKA_PARTITIONS: String(PARTITIONS),
        KAFKA_REPLICATION_FACTOR: String(KAFKA_NODES),
        KAFKA_MIN_INSYNC_REPLICAS: '2',
        BOOTSTRAP_API_KEY: bootstrapKey,
        SECRETS_ENCRYPTION_KEY: secretsKey,
        LOG_LEVEL: process.env.MULTIPROCESS_LOG_LEVEL ?? 'warn',
        METER_BACKFILL_SETTLE_SECONDS: '0',
        ...extra,
      }
      const serves = command === 'api' || command === 'ingest'
      const p = new Proc(name, ['--import', 'tsx', join(ROOT, 'cli.ts'), command], env, serves ? port : undefined, metricsPort)
      procs.push(p)
      p.start()
      return p
    }

    // The api first and alone: its first start migrates and bootstraps the tenant with BOOTSTRAP_API_KEY.
    api = await role('api', 'api')
    await waitFor('the api process to serve /v1/health', 120_000, () => healthy(api))
    const envs = await apiCall('GET', '/v1/environments')
    expect(envs.status, JSON.stringify(envs.body)).toBe(200)
    environmentId = (envs.body.items as { id: string; type: string }[]).find((e) => e.type === 'production')!.id
    const meter = await apiCall('POST', '/v1/meters', { name: 'mp calls', event_name: 'mp.call', aggregation: { type: 'COUNT' } })
    expect(meter.status, JSON.stringify(meter.body)).toBe(201)
    meterId = meter.body.id
    await waitFor('the COUNT meter to be ready', 60_000, async () => {
      const m = await apiCall('GET', `/v1/meters/${meterId}`)
      return m.body.ready_revision === m.body.revision ? true : `revision ${m.body.revision}, ready ${m.body.ready_revision}`
    })

    for (const n of [1, 2]) ingests.push(await role(`ingest-${n}`, 'ingest'))
    for (const n of [1, 2, 3]) aggregators.push(await role(`aggregator-${n}`, 'aggregator'))
    worker = await role('worker', 'worker')
    await waitFor('every process to start and answer its health or metrics endpoint', 150_000, () => allHealthy([api, ...ingests, ...aggregators, worker]), 1000)
    note(`every process up (${since()} since the file started)`)
    note(`partition leaders before the faults: ${await leaders(cluster.brokers).catch((err: Error) => err.message)}`)
  }, 300_000)

  afterAll(async () => {
    if (!ENABLED) return
    await Promise.all(procs.map((p) => p.stop().catch(() => {})))
    await database?.drop().catch((err: Error) => console.warn(`dropping the test database: ${err.message}`))
    // The node stopped mid-run is started again by the test; a failure before that leaves it down: start it now.
    await cluster?.startNode(STOPPED_NODE).catch(() => {})
    if (passed) rmSync(workDir, { recursive: true, force: true })
    else if (workDir) console.log(`multi-process fault test: logs kept in ${workDir} (${readdirSync(workDir).filter((f) => f.endsWith('.log')).join(', ')})`)
  }, 120_000)

  it('counts every accepted event once through an aggregator SIGKILL, a Kafka node down, a Postgres restart and ClickHouse away for 30 s', async () => {
    const batches: Batch[] = []
    let faultsDone = false
    let faultError: Error | undefined

    // The faults, one after another, while the batches stream in.
    const faults = (async () => {
      await sleep(5000)
      const victim = aggregators[0]
      victim.killedOnPurpose = true
      note(`SIGKILL ${victim.name} (pid ${victim.child.pid}); no replacement is started`)
      await victim.kill('SIGKILL')

      await sleep(5000)
      note(`stopping Kafka node ${STOPPED_NODE}`)
      await cluster.stopNode(STOPPED_NODE)
      note(`Kafka node ${STOPPED_NODE} stopped`)
      await sleep(8000)
      // The node's start (some 10-50 s: it catches up with the quorum) runs beside the next faults.
      note(`starting Kafka node ${STOPPED_NODE}`)
      const nodeBack = cluster.startNode(STOPPED_NODE).then(() => note(`Kafka node ${STOPPED_NODE} started`))
      nodeBack.catch(() => {})

      await sleep(3000)
      note('restarting Postgres')
      await restartPostgres()
      note('Postgres restarted')

      await sleep(5000)
      shim.killedOnPurpose = true
      note(`SIGKILL the ClickHouse endpoint (pid ${shim.child.pid}); back in ${CLICKHOUSE_DOWN_MS / 1000}s`)
      await shim.kill('SIGKILL')
      const away = Date.now()
      // The fault took: the api reports ClickHouse down (and the aggregators, which cannot insert, hold their offsets).
      await waitFor('the api to report ClickHouse down', 20_000, async () => {
        const h = await get(`http://127.0.0.1:${api.port}/v1/health`)
        return h.status === 503 && (JSON.parse(h.text) as { engines: { clickhouse: { status: string } } }).engines.clickhouse.status === 'down' ? true : `${h.status} ${h.text.slice(0, 200)}`
      })
      note('the api reports ClickHouse down')
      await sleep(CLICKHOUSE_DOWN_MS - (Date.now() - away))
      shim.killedOnPurpose = false
      shim.start()
      await waitFor('the restarted ClickHouse endpoint to answer /ping', 60_000, async () => ((await get(`${chUrl}/ping`)).status === 200 ? true : 'not yet'))
      note('ClickHouse endpoint back')
      await nodeBack
      await sleep(5000)
    })()
      .catch((err: Error) => {
        faultError = err
      })
      .finally(() => {
        faultsDone = true
      })

    // The stream: a batch of new ids every BATCH_EVERY_MS, alternately to each ingest process; every third also to the other at once.
    for (let n = 0; !faultsDone && !clientError; n++) {
      const batch = batchOf(n)
      batches.push(batch)
      launch(batch, ingests[n % 2], 'first send')
      if (n % RESEND_EVERY === 0) launch(batch, ingests[(n + 1) % 2], 'resent to the other ingest')
      await sleep(BATCH_EVERY_MS)
    }
    await faults
    if (faultError) throw faultError
    // The first batches once more, to both ingest processes, after every fault.
    for (const batch of batches.slice(0, LATE_RESENDS)) for (const ingest of ingests) launch(batch, ingest, 'late resend')
    while (inFlight.size > 0 && !clientError) await Promise.race([...inFlight, sleep(1000)])
    if (clientError) throw clientError
    note(`sending done: ${batches.length} batches, ${sent.size} distinct ids sent, ${acked.size} acknowledged; requests ${JSON.stringify(stats)}`)
    expect(acked.size).toBe(sent.size)

    // Every acknowledged id stored, within a bounded wait (the aggregators catch up after ClickHouse is back): up to
    // 120 s, or until the count has not moved for 30 s (ids lost for good do not come).
    const expected = acked.size
    const counts = async () => (await ch<{ rows: string; ids: string }>(`SELECT count() AS rows, uniqExact(id) AS ids FROM events WHERE environment_id = '${environmentId}'`))[0]
    let stalled = ''
    {
      const deadline = Date.now() + 120_000
      let last = ''
      let movedAt = Date.now()
      for (;;) {
        const c = await counts().catch((err: Error) => ({ rows: '?', ids: '?', err: err.message }))
        const now = `${c.ids} distinct ids, ${c.rows} rows`
        if (Number(c.ids) >= expected) break
        if (now !== last) [last, movedAt] = [now, Date.now()]
        if (Date.now() > deadline || Date.now() - movedAt > 30_000) {
          stalled = `after ${((Date.now() - movedAt) / 1000).toFixed(0)}s without change ClickHouse holds ${now} of ${expected} acknowledged`
          break
        }
        await sleep(2000)
      }
    }
    // Nothing late: a replay after a rebalance would add rows after the count was reached.
    if (!stalled) await sleep(5000)
    const final = await counts()

    const rows = await ch<{ id: string; n: string; customer: string; inserted: string[] }>(
      `SELECT id, count() AS n, any(external_customer_id) AS customer, groupArray(toString(inserted_at)) AS inserted FROM events WHERE environment_id = '${environmentId}' GROUP BY id`,
    )
    const stored = new Map(rows.map((r) => [r.id, r]))
    const missing = [...acked.keys()].filter((id) => !stored.has(id))
    const doubled = rows.filter((r) => Number(r.n) > 1)
    const unsent = rows.filter((r) => !sent.has(r.id))
    /** Every check below runs; what fails is reported together at the end. */
    const problems: string[] = []
    if (stalled || missing.length || doubled.length || unsent.length || Number(final.rows) !== expected || Number(final.ids) !== expected) {
      const tenantId = (await ch<{ t: string }>(`SELECT any(tenant_id) AS t FROM events WHERE environment_id = '${environmentId}'`))[0]?.t ?? ''
      const customerOf = (id: string) => `mp-cust-${Number(id.slice(id.lastIndexOf('-') + 1)) % CUSTOMERS}`
      const partitionOf = (customer: string) => keyPartition(eventKey({ tenantId, environmentId, externalCustomerId: customer }), PARTITIONS)
      /** Ids in groups: by batch and partition (a lost produce request or a chunk stored twice shows as one line), with their customers. */
      const grouped = (ids: { id: string; customer: string; extra?: string }[]): string => {
        const groups = new Map<string, { ids: string[]; customers: Set<string> }>()
        for (const { id, customer, extra } of ids) {
          const k = Number(id.slice(id.lastIndexOf('-') + 1))
          const key = `batch ${Math.floor(k / EVENTS_PER_REQUEST)}, partition ${partitionOf(customer)}${extra ? `, ${extra}` : ''}`
          const g = groups.get(key) ?? { ids: [], customers: new Set<string>() }
          g.ids.push(id)
          g.customers.add(customer)
          groups.set(key, g)
        }
        return [...groups]
          .map(([key, g]) => `    ${key}: ${g.ids.length} ids of ${[...g.customers].join(', ')} (${g.ids.slice(0, 3).join(', ')}${g.ids.length > 3 ? ', …' : ''})`)
          .slice(0, 40)
          .join('\n')
      }
      const topicSays = missing.length ? await inTopic(cluster.brokers, new Set(missing)).catch((err: Error) => err) : undefined
      const whereInTopic = (id: string): string =>
        topicSays === undefined ? '' : topicSays instanceof Error ? '' : topicSays.found.has(id) ? 'in the topic' : `not in the topic${topicSays.complete ? '' : ' (read incomplete)'}`
      const acceptedAt = (id: string) => `202 at ${((acked.get(id)! - T0) / 1000).toFixed(1)}s, ${whereInTopic(id)}`
      const leadersNow = await leaders(cluster.brokers).catch((err: Error) => err.message)
      problems.push(
        `partition leaders now: ${leadersNow}\n${stalled ? `${stalled}. ` : ''}ClickHouse holds ${final.rows} rows, ${final.ids} distinct ids for ${expected} acknowledged:\n` +
          `  missing (answered 202, not stored) ${missing.length}:\n${grouped(missing.map((id) => ({ id, customer: customerOf(id), extra: acceptedAt(id) })))}\n` +
          `  counted more than once ${doubled.length}:\n${grouped(doubled.map((r) => ({ id: r.id, customer: r.customer, extra: `×${r.n} inserted ${[...new Set(r.inserted)].sort().join(' and ')}` })))}\n` +
          `  stored, never sent ${unsent.length}:\n${grouped(unsent.map((r) => ({ id: r.id, customer: r.customer })))}`,
      )
    }

    // The drops recorded are what the clients sent more than once: not the chunks the killed aggregator had stored and
    // not committed, which its successors read again (replays), nor anything a rebalance made them read twice.
    const [{ duplicates }] = await ch<{ duplicates: string }>(`SELECT count() AS duplicates FROM event_drops WHERE environment_id = '${environmentId}' AND kind = 'duplicate'`)
    const [least, most] = [copies.accepted - expected, copies.attempted - expected]
    if (Number(duplicates) < least || Number(duplicates) > most) problems.push(`duplicates recorded: ${duplicates}, where the clients sent ${least} extra copies answered 202 and ${most} in all`)

    // The API agrees: the raw events' total and the COUNT meter.
    const query = await apiCall('POST', '/v1/events/query', { page_size: 1 }).catch((err: Error) => ({ status: 0, body: err.message }))
    if (query.status !== 200 || query.body.total_count !== expected) problems.push(`POST /v1/events/query: ${query.status}, total_count ${query.body?.total_count} for ${expected} acknowledged (${JSON.stringify(query.body).slice(0, 200)})`)
    const usage = await apiCall('POST', '/v1/events/usage/meter', { meter_id: meterId, ...RANGE }).catch((err: Error) => ({ status: 0, body: err.message }))
    if (usage.status !== 200 || usage.body.value !== String(expected)) problems.push(`the COUNT meter (POST /v1/events/usage/meter): ${usage.status}, value ${usage.body?.value} for ${expected} acknowledged (${JSON.stringify(usage.body).slice(0, 200)})`)

    // Every process recovered by itself: alive (but the one killed) and healthy, every engine ok again.
    const unexpected = procs.filter((p) => !p.killedOnPurpose && !p.alive)
    if (unexpected.length) problems.push(`processes exited that the test did not kill: ${unexpected.map((p) => p.exits.join('; ')).join(' | ')}`)
    else {
      await waitFor('every process but the killed aggregator to report healthy', 60_000, () => allHealthy([api, ...ingests, ...aggregators.slice(1), worker]), 1000).catch((err: Error) =>
        problems.push(err.message.split('\n\ntimeline:')[0]),
      )
    }
    if (aggregators[0].alive) problems.push(`${aggregators[0].name} is alive after its SIGKILL`)
    if (problems.length) throw failure(problems.join('\n\n'), 40)
    note(`done: ${expected} ids stored once each, ${duplicates} duplicates recorded for ${least}–${most} extra copies sent`)
    console.log(`multi-process fault test: ${expected} ids, ${batches.length} batches, requests ${JSON.stringify(stats)}\n${timeline.join('\n')}`)
    passed = true
  }, 360_000)
})
