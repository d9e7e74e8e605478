// Shared by the benchmarks: percentiles, a keep-alive HTTP load generator, and the section each bench
// appends to BENCHMARKS.md (through BENCH_OUT, set by run.ts).
import { spawn, type ChildProcess } from 'node:child_process'
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { request, Agent } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { Kafka, logLevel } from 'kafkajs'

/** Every bench topic's name starts so: run.ts deletes them all after the last section. */
export const BENCH_TOPIC_PREFIX = 'usage-events-bench-'

/**
 * A bench's DATA_DIR, removed when its process exits. Under `npm run bench` they all go in one directory that
 * run.ts removes after the last section instead: on this machine's ext4 (no journal) creating a file scans past
 * the inodes deleted in the last minutes, and one section removing its thousands of files cost the next one 7–10%
 * of its CPU (BENCHMARKS.md, section 2).
 */
export function benchDataDir(name: string): string {
  const root = process.env.BENCH_DATA_ROOT
  const dir = mkdtempSync(join(root ?? tmpdir(), `meterbill-bench-${name}-`))
  if (!root) process.on('exit', () => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/**
 * Deletes a bench's topics (and their dead-letter topics) from the shared broker, which removes their log files a
 * minute later: under `npm run bench` that fell into the next section (a gigabyte of intake's log deleted while the
 * aggregator drained), so there run.ts deletes every bench topic after the last section instead.
 */
export async function removeBenchTopics(brokers: string, topics: string[]): Promise<void> {
  if (process.env.BENCH_DATA_ROOT && topics.every((t) => t.startsWith(BENCH_TOPIC_PREFIX))) return
  const admin = new Kafka({ brokers: brokers.split(','), logLevel: logLevel.NOTHING }).admin()
  await admin.connect()
  await admin.deleteTopics({ topics: topics.flatMap((t) => [t, `${t}-dlq`]) }).catch(() => {})
  await admin.disconnect()
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
}

export const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })

export interface LoadResult {
  requests: number
  events: number
  failed: number
  seconds: number
  eventsPerSecond: number
  p50: number
  p99: number
  /** CPU of this (load generator) process per accepted event, µs: body making plus the HTTP client. */
  clientCpuPerEvent: number
}

/** `concurrency` connections posting bodies of `eventsPerRequest` events for `seconds`; latency per request in ms. */
export async function blast(opts: {
  port: number
  path: string
  key: string
  eventsPerRequest: number
  /** The next body for connection \`slot\`; a Buffer may be reused once that connection's request is answered. */
  body: (n: number, slot: number) => string | Buffer
  concurrency: number
  seconds: number
}): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: opts.concurrency })
  const latencies: number[] = []
  let failed = 0
  let stop = false
  const post = (payload: string | Buffer): Promise<number> =>
    new Promise((resolve, reject) => {
      const req = request(
        { agent, port: opts.port, host: '127.0.0.1', method: 'POST', path: opts.path, headers: { 'x-api-key': opts.key, 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } },
        (res) => {
          res.resume()
          res.on('end', () => resolve(res.statusCode ?? 0))
        },
      )
      req.on('error', reject)
      req.end(payload)
    })
  const started = performance.now()
  const cpu = process.cpuUsage()
  setTimeout(() => (stop = true), opts.seconds * 1000)
  await Promise.all(
    Array.from({ length: opts.concurrency }, async (_, slot) => {
      while (!stop) {
        const payload = opts.body(opts.eventsPerRequest, slot)
        const t = performance.now()
        const status = await post(payload)
        if (status === 202) latencies.push(performance.now() - t)
        else failed++
      }
    }),
  )
  const seconds = (performance.now() - started) / 1000
  const used = process.cpuUsage(cpu)
  agent.destroy()
  latencies.sort((a, b) => a - b)
  const events = latencies.length * opts.eventsPerRequest
  return { requests: latencies.length, events, failed, seconds, eventsPerSecond: events / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99), clientCpuPerEvent: (used.user + used.system) / events }
}

let seq = 0
const run = `${process.pid}-${Date.now()}`
const SEQ_DIGITS = 12

/** Writes `value` as `width` characters ending before `end`: digits, left-filled with `pad` ('0' or ' '). */
function writeNumber(buf: Buffer, end: number, value: number, width: number, pad: number): void {
  let v = value
  for (let i = end - 1; i >= end - width; i--) {
    buf[i] = v === 0 && i < end - 1 ? pad : 48 + (v % 10)
    v = Math.floor(v / 10)
  }
}

/**
 * Bulk bodies of n distinct events (ids never repeat within a run), spread over 1000 customers, each stamped with
 * the current time. Building JSON per request cost the load generator about as much CPU as the server's parse, on
 * the same cores; so each connection keeps one body of fixed-width fields and only the numbers (event sequence,
 * customer, tokens, model) and timestamps are written into it per request. Numbers are padded with spaces (JSON
 * whitespace), the sequence and customer with zeros (they are inside strings).
 */
export function bulkBodies(): (n: number, slot: number) => Buffer {
  const template = `{"event_id":"b${run}-${'0'.repeat(SEQ_DIGITS)}","event_name":"api.call","external_customer_id":"cust-000","timestamp":"${new Date(0).toISOString()}","properties":{"tokens":0000,"model":"m0"}}`
  const at = (marker: string) => template.indexOf(marker) + marker.length
  // Offsets (of each field's end, or start for the timestamp) within one event.
  const seqEnd = at(`-${'0'.repeat(SEQ_DIGITS)}`)
  const customerEnd = at('cust-000')
  const timestampAt = at('"timestamp":"')
  const tokensEnd = at('"tokens":0000')
  const modelEnd = at('"model":"m0')
  const bodies = new Map<string, Buffer>()
  return (n, slot) => {
    let body = bodies.get(`${n}/${slot}`)
    if (!body) bodies.set(`${n}/${slot}`, (body = Buffer.from(`{"events":[${Array.from({ length: n }, () => template).join(',')}]}`)))
    const now = Buffer.from(new Date().toISOString(), 'latin1')
    for (let i = 0, start = '{"events":['.length; i < n; i++, start += template.length + 1) {
      const k = seq++
      writeNumber(body, start + seqEnd, k, SEQ_DIGITS, 48)
      writeNumber(body, start + customerEnd, k % 1000, 3, 48)
      for (let j = 0; j < now.length; j++) body[start + timestampAt + j] = now[j]
      writeNumber(body, start + tokensEnd, k % 5000, 4, 32)
      writeNumber(body, start + modelEnd, k % 3, 1, 48)
    }
    return body
  }
}

/**
 * The young-generation size docs/usage.md recommends for intake and the aggregator (NODE_OPTIONS): batches in flight hold thousands
 * of events, which a small young generation copies over and over.
 */
export const YOUNG_GENERATION = '--max-semi-space-size=64'

/**
 * An intake server of bench/intake-server.ts (`ceiling`, `direct` or `kafka`) in a process of its own.
 * INTAKE_NODE_FLAGS: more flags for the server (e.g. --cpu-prof, which NODE_OPTIONS does not take).
 */
export async function intakeServer(mode: string): Promise<{ port: number; key: string; child: ChildProcess }> {
  const flags = process.env.INTAKE_NODE_FLAGS?.split(' ').filter(Boolean) ?? []
  const child = spawn(process.execPath, [YOUNG_GENERATION, ...flags, '--import', 'tsx', fileURLToPath(new URL('./intake-server.ts', import.meta.url)), mode], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve)
    child.once('exit', (code) => reject(new Error(`${mode} server exited with ${code}`)))
  })
  return { ...(JSON.parse(line) as { port: number; key: string }), child }
}

/** CPU seconds the process has used, all its threads (Linux /proc; NaN elsewhere). */
export function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return Number.NaN
  }
}

/** Adds a section to BENCHMARKS.md (or prints it when run alone). */
export function report(markdown: string): void {
  const out = process.env.BENCH_OUT
  if (out) appendFileSync(out, `${markdown.trim()}\n\n`)
  else process.stdout.write(`${markdown.trim()}\n`)
}
