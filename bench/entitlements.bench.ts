// (4) The entitlement lookup SDKs call per request: requests/s, p50/p99 latency and the server's CPU per request of
// GET /v1/customers/{id}/entitlements (every feature, and one feature) over keep-alive connections,
// against a server process seeded by entitlements-server.ts. Server and load generator share the machine, so
// requests/s moves with other load; CPU per request is the comparable number.
import { spawn } from 'node:child_process'
import { Agent, request } from 'node:http'
import { cpus, loadavg } from 'node:os'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { cpuSeconds, fmt, percentile, report } from './common.ts'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8)
const CONCURRENCY = 16

interface Seeded {
  port: number
  key: string
  customers: string[]
  features: string[]
}

const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./entitlements-server.ts', import.meta.url))], { stdio: ['ignore', 'pipe', 'inherit'] })
const seedStart = performance.now()
const seeded: Seeded = JSON.parse(
  await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve)
    child.once('exit', (code) => reject(new Error(`entitlement server exited with ${code}`)))
  }),
)
const seedSeconds = (performance.now() - seedStart) / 1000

/** GETs `path(i)` from `CONCURRENCY` connections for `seconds`; a response that is not 200 with `expect` features fails the run. */
async function load(path: (i: number) => string, expect: number, seconds: number) {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY })
  const latencies: number[] = []
  let stop = false
  let n = 0
  const get = (p: string) =>
    new Promise<void>((resolve, reject) => {
      const t = performance.now()
      const req = request({ agent, port: seeded.port, host: '127.0.0.1', path: p, headers: { 'x-api-key': seeded.key } }, (res) => {
        let body = ''
        res.on('data', (chunk) => (body += chunk))
        res.on('end', () => {
          const features = res.statusCode === 200 ? (JSON.parse(body) as { features: unknown[] }).features.length : -1
          if (features !== expect) return reject(new Error(`${p}: status ${res.statusCode}, ${features} features, expected ${expect}: ${body.slice(0, 200)}`))
          latencies.push(performance.now() - t)
          resolve()
        })
      })
      req.on('error', reject)
      req.end()
    })
  const started = performance.now()
  const cpu = cpuSeconds(child.pid!)
  setTimeout(() => (stop = true), seconds * 1000)
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (!stop) await get(path(n++))
  }))
  const elapsed = (performance.now() - started) / 1000
  const cpuPerRequest = ((cpuSeconds(child.pid!) - cpu) * 1e6) / latencies.length
  agent.destroy()
  latencies.sort((a, b) => a - b)
  return { requests: latencies.length, perSecond: latencies.length / elapsed, p50: percentile(latencies, 50), p99: percentile(latencies, 99), cpuPerRequest }
}

const customer = (i: number) => seeded.customers[i % seeded.customers.length]
const cases = [
  { label: 'every feature (12 features, 16 sources)', path: (i: number) => `/v1/customers/${customer(i)}/entitlements`, expect: 12 },
  { label: 'one feature (`feature_ids`, 2 sources)', path: (i: number) => `/v1/customers/${customer(i)}/entitlements?feature_ids=${seeded.features[0]}`, expect: 1 },
]
const rows: string[] = []
const loadAtStart = loadavg()[0]
try {
  for (const c of cases) {
    await load(c.path, c.expect, 1) // warm-up: JIT, connections, the key cache
    const r = await load(c.path, c.expect, SECONDS)
    rows.push(`| ${c.label} | ${fmt(r.perSecond)} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} | ${fmt(r.cpuPerRequest)} | ${fmt(r.requests)} |`)
  }
} finally {
  child.kill('SIGTERM')
  await new Promise((r) => child.once('exit', r))
}

report(`## 4. Entitlement lookup

\`GET /v1/customers/{id}/entitlements\` for ${fmt(seeded.customers.length)} customers, each on two plans and an addon held twice
(seeded in ${fmt(seedSeconds, 1)} s), ${CONCURRENCY} keep-alive connections for ${SECONDS} s after a 1 s warm-up, embedded PGlite in the
server process; ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${new Date().toISOString().slice(0, 16)}Z, load average
${loadAtStart.toFixed(1)} at the start and ${loadavg()[0].toFixed(1)} at the end. Server CPU: all threads of the server process over the
measured run ÷ requests answered.

| lookup | requests/s | p50 ms | p99 ms | server CPU µs/request | requests |
| --- | ---: | ---: | ---: | ---: | ---: |
${rows.join('\n')}`)
process.exit(0)
