// (Spend control) The entitlement check and credit holds over HTTP against a server process seeded by
// spend-server.ts (embedded engines), the same method as the entitlement lookup bench: keep-alive connections,
// a 1 s warm-up, requests/s, p50/p99 and the server's CPU a request. Each row has a baseline measured in the
// same run: the check against the entitlement lookup of one feature it starts from, hold + settle pairs on one
// wallet against single manual debits of the same wallet (one ledger change each).
import { spawn } from 'node:child_process'
import { Agent, request } from 'node:http'
import { cpus, loadavg } from 'node:os'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { cpuSeconds, fmt, percentile, report } from './common.ts'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8)
/** Seconds each row runs before it is measured (§4: 1). */
const WARMUP = Number(process.env.BENCH_WARMUP ?? 1)
const CONCURRENCY = 16
/** The hold + settle row again with more callers at once: a wallet's batches grow with the requests in flight. */
const MANY = 64

interface Seeded {
  port: number
  key: string
  customers: string[]
  feature: string
  wallet: string
}

// BENCH_PROFILE=<dir>: the server writes a V8 CPU profile there when it stops.
const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : []
const child = spawn(process.execPath, [...profile, '--import', 'tsx', fileURLToPath(new URL('./spend-server.ts', import.meta.url))], { stdio: ['ignore', 'pipe', 'inherit'] })
const seeded: Seeded = JSON.parse(
  await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve)
    child.once('exit', (code) => reject(new Error(`spend server exited with ${code}`)))
  }),
)
const agent = new Agent({ keepAlive: true, maxSockets: MANY })

/** One request; rejects unless the status is `expect`. Resolves with the parsed body. */
const send = (method: string, path: string, body: unknown, expect: number) =>
  new Promise<any>((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body)
    const headers: Record<string, string> = { 'x-api-key': seeded.key }
    if (payload) headers['content-type'] = 'application/json'
    const req = request({ agent, port: seeded.port, host: '127.0.0.1', method, path, headers }, (res) => {
      let text = ''
      res.on('data', (chunk) => (text += chunk))
      res.on('end', () => (res.statusCode === expect ? resolve(JSON.parse(text)) : reject(new Error(`${method} ${path}: ${res.statusCode} ${text.slice(0, 300)}`))))
    })
    req.on('error', reject)
    req.end(payload)
  })

/** Runs `op(i)` from `callers` loops for `seconds`; each op is one unit (a request, or a hold + settle pair). */
async function load(op: (i: number) => Promise<unknown>, seconds: number, callers = CONCURRENCY) {
  const latencies: number[] = []
  let stop = false
  let n = 0
  const cpu = cpuSeconds(child.pid!)
  const started = performance.now()
  setTimeout(() => (stop = true), seconds * 1000)
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (!stop) {
        const t = performance.now()
        await op(n++)
        latencies.push(performance.now() - t)
      }
    }),
  )
  const elapsed = (performance.now() - started) / 1000
  const cpuPer = ((cpuSeconds(child.pid!) - cpu) * 1e6) / latencies.length
  latencies.sort((a, b) => a - b)
  return { units: latencies.length, perSecond: latencies.length / elapsed, p50: percentile(latencies, 50), p99: percentile(latencies, 99), cpuPer }
}

const customer = (i: number) => seeded.customers[i % seeded.customers.length]
// What the wallet's debits and settlements took, warm-ups included: the wallet must end at exactly its start less this.
let taken = 0n
const cents = (amount: string) => BigInt(amount.replace('.', '').padEnd(amount.includes('.') ? amount.indexOf('.') + 2 : amount.length + 2, '0'))
const pair = async () => {
  const hold = await send('POST', `/v1/wallets/${seeded.wallet}/holds`, { amount: '20' }, 201)
  const settled = await send('POST', `/v1/wallets/holds/${hold.id}/settle`, { amount: '17.34' }, 200)
  taken += cents(settled.settled_amount)
}
const cases: { label: string; op: (i: number) => Promise<unknown>; callers?: number }[] = [
  { label: 'baseline: entitlement lookup, one feature (`GET …/entitlements?feature_ids=`)', op: (i) => send('GET', `/v1/customers/${customer(i)}/entitlements?feature_ids=${seeded.feature}`, undefined, 200) },
  { label: 'check (`POST …/entitlements/check`, hard limit, quantity 2,000)', op: (i) => send('POST', `/v1/customers/${customer(i)}/entitlements/check`, { feature_id: seeded.feature, quantity: 2000 }, 200) },
  { label: 'baseline: entitlement lookup, one customer (caches warm)', op: () => send('GET', `/v1/customers/${customer(0)}/entitlements?feature_ids=${seeded.feature}`, undefined, 200) },
  { label: 'check, one customer (caches warm)', op: () => send('POST', `/v1/customers/${customer(0)}/entitlements/check`, { feature_id: seeded.feature, quantity: 2000 }, 200) },
  {
    label: 'baseline: manual debit of 1 credit, one wallet',
    op: async () => {
      await send('POST', `/v1/wallets/${seeded.wallet}/debit`, { credits: '1' }, 200)
      taken += 100n
    },
  },
  { label: 'hold of 20 credits + settle of 17.34, one wallet (a pair)', op: pair },
  { label: `the same pairs from ${MANY} callers at once`, op: pair, callers: MANY },
]
// BENCH_CASES=check or holds runs only those rows (each with its baseline).
const only = process.env.BENCH_CASES
const chosen = cases.filter((c, i) => !only || (only === 'check' ? i < 4 : i >= 4))
const rows: string[] = []
const loadAtStart = loadavg()[0]
try {
  for (const c of chosen) {
    await load(c.op, WARMUP, c.callers)
    const r = await load(c.op, SECONDS, c.callers)
    rows.push(`| ${c.label} | ${fmt(r.perSecond)} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} | ${fmt(r.cpuPer)} | ${fmt(r.units)} |`)
    process.stderr.write(`${rows.at(-1)}\n`)
  }
  // No overdraw: what the wallet lost is exactly what was debited and settled.
  const wallet = await send('GET', `/v1/wallets/${seeded.wallet}`, undefined, 200)
  const expected = 100_000_000_000n - taken
  const exact = cents(wallet.credit_balance) === expected && wallet.held_balance === '0'
  rows.push(
    `\nWallet after the run: credit_balance ${wallet.credit_balance}, held_balance ${wallet.held_balance}, available_balance ${wallet.available_balance}; ` +
      `start less what was debited and settled: ${expected / 100n}.${String(expected % 100n).padStart(2, '0')} (${exact ? 'exact' : 'NOT EXACT'}).`,
  )
} finally {
  agent.destroy()
  child.kill('SIGTERM')
  await new Promise((r) => child.once('exit', r))
}

report(`## Spend control: the entitlement check and credit holds

${fmt(seeded.customers.length)} customers on a plan with a hard-limited metered feature, ${CONCURRENCY} keep-alive connections for ${SECONDS} s
after a ${WARMUP} s warm-up, embedded PGlite and chDB in the server process; ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'},
${new Date().toISOString().slice(0, 16)}Z, load average ${loadAtStart.toFixed(1)} at the start and ${loadavg()[0].toFixed(1)} at the end. Server CPU:
all threads of the server process over the measured run ÷ units (requests, or hold + settle pairs).

| operation | per second | p50 ms | p99 ms | server CPU µs/unit | units |
| --- | ---: | ---: | ---: | ---: | ---: |
${rows.join('\n')}`)
process.exit(0)
