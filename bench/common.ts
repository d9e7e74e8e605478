// Shared by the benchmarks: percentiles, a keep-alive HTTP load generator, and the section each bench
// appends to BENCHMARKS.md (through BENCH_OUT, set by run.ts).
import { appendFileSync } from 'node:fs'
import { request, Agent } from 'node:http'

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
}

/** `concurrency` connections posting bodies of `eventsPerRequest` events for `seconds`; latency per request in ms. */
export async function blast(opts: {
  port: number
  path: string
  key: string
  eventsPerRequest: number
  body: (n: number) => string
  concurrency: number
  seconds: number
}): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: opts.concurrency })
  const latencies: number[] = []
  let failed = 0
  let stop = false
  const post = (payload: string): Promise<number> =>
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
  setTimeout(() => (stop = true), opts.seconds * 1000)
  await Promise.all(
    Array.from({ length: opts.concurrency }, async () => {
      while (!stop) {
        const payload = opts.body(opts.eventsPerRequest)
        const t = performance.now()
        const status = await post(payload)
        if (status === 202) latencies.push(performance.now() - t)
        else failed++
      }
    }),
  )
  const seconds = (performance.now() - started) / 1000
  agent.destroy()
  latencies.sort((a, b) => a - b)
  const events = latencies.length * opts.eventsPerRequest
  return { requests: latencies.length, events, failed, seconds, eventsPerSecond: events / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) }
}

let seq = 0
const run = `${process.pid}-${Date.now()}`

/** A bulk body of n distinct events (ids never repeat within a run), spread over 1000 customers. */
export function bulkBody(n: number): string {
  const parts: string[] = []
  const now = new Date().toISOString()
  for (let i = 0; i < n; i++) {
    const k = seq++
    parts.push(`{"event_id":"b${run}-${k}","event_name":"api.call","external_customer_id":"cust-${k % 1000}","timestamp":"${now}","properties":{"tokens":${k % 5000},"model":"m${k % 3}"}}`)
  }
  return `{"events":[${parts.join(',')}]}`
}

/** Adds a section to BENCHMARKS.md (or prints it when run alone). */
export function report(markdown: string): void {
  const out = process.env.BENCH_OUT
  if (out) appendFileSync(out, `${markdown.trim()}\n\n`)
  else process.stdout.write(`${markdown.trim()}\n`)
}
