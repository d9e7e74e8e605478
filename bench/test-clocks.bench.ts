// A year of monthly billing on a test clock: 100 customers, each with a subscription (a fixed line and a
// usage line over 120 events), the plan's monthly credit grant (expiring at the cycle's end) and a wallet;
// one advance of twelve months, timed from the call to `ready`. Aim: ≤ 10 s (issue 38).
import { cpus, loadavg, totalmem } from 'node:os'
import { loadConfig } from '../core/config.ts'
import { createCustomer } from '../domains/customers/service.ts'
import { createMeter, getMeter } from '../domains/catalog/meters/service.ts'
import { createOffering } from '../domains/catalog/offerings/service.ts'
import { PLAN } from '../domains/catalog/offerings/kinds.ts'
import { createSubscription } from '../domains/subscriptions/service.ts'
import { createCreditGrant } from '../domains/credits/grants/service.ts'
import { createWallet } from '../domains/credits/wallets/service.ts'
import { advanceClock, createClock, getClock } from '../domains/clocks/service.ts'
import { ingestEvents } from '../ingest/service.ts'
import { eventLogOf } from '../infra/event-log.ts'
import { startRoles } from '../roles.ts'
import { jobs } from '../worker/jobs.ts'
import { benchDataDir, fmt, report } from './common.ts'

const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB RAM, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}, load average ${loadavg()[0].toFixed(1)} at the start (the cores are shared)`
const CUSTOMERS = Number(process.env.BENCH_CLOCK_CUSTOMERS ?? 100)
const EVENTS_PER_MONTH = 10
const T0 = Date.UTC(2025, 0, 1)
const TARGET = new Date(Date.UTC(2026, 0, 1, 1))
const env = { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', DATA_DIR: benchDataDir('clocks'), KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0', METRICS_PORT: '0' }
const running = await startRoles(loadConfig(env), ['api', 'ingest'])
const { deps } = running
const tenant = running.bootstrap!
const actor = { tenantId: tenant.tenantId, environmentId: tenant.environments.sandbox, keyId: 'bench', roles: ['admin' as const] }

const setupStart = performance.now()
const meter = await createMeter(deps, actor, { name: 'calls', event_name: 'api.call', aggregation: { type: 'SUM', field: 'n' } })
while ((await getMeter(deps, actor, meter.id)).ready_revision === 0) await new Promise((r) => setTimeout(r, 200))
const plan = await createOffering(deps, actor, PLAN, {
  name: 'Clock plan',
  prices: [
    { currency: 'USD', type: 'FIXED', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', invoice_cadence: 'ARREAR', amount: '20' },
    { currency: 'USD', type: 'USAGE', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', invoice_cadence: 'ARREAR', amount: '0.01', meter_id: meter.id },
  ],
} as never)
await createCreditGrant(deps, actor, { name: 'Monthly credits', scope: 'PLAN', plan_id: plan.id, credits: '5', cadence: 'RECURRING', period: 'MONTHLY', period_count: 1, expiration_type: 'BILLING_CYCLE' } as never)
// The year's events go in before the customers exist: once on the clock, a customer's events may not be later than its time.
const externalId = (i: number) => `clock-bench-${i}`
for (let i = 0; i < CUSTOMERS; i++) {
  const batch = Array.from({ length: 12 * EVENTS_PER_MONTH }, (_, k) => ({
    event_name: 'api.call',
    external_customer_id: externalId(i),
    timestamp: new Date(T0 + Math.floor(k / EVENTS_PER_MONTH) * 30.4 * 86_400_000 + (k % EVENTS_PER_MONTH) * 86_400_000).toISOString(),
    properties: { n: 100 + k },
  }))
  await ingestEvents(deps, actor, batch, JSON.stringify(batch).length)
}
await eventLogOf(deps)?.settled(120_000)
process.stderr.write(`test clocks bench: events stored (${fmt((performance.now() - setupStart) / 1000, 1)} s)\n`)
const clock = await createClock(deps, actor, { name: 'bench', frozen_time: new Date(T0).toISOString() })
for (let i = 0; i < CUSTOMERS; i++) {
  const customer = await createCustomer(deps, actor, { external_id: externalId(i), test_clock_id: clock.id })
  await createWallet(deps, actor, { customer_id: customer.id, currency: 'USD' })
  await createSubscription(deps, actor, { customer_id: customer.id, plan_id: plan.id, currency: 'USD', billing_period: 'MONTHLY', start_date: new Date(T0).toISOString() })
}
const setupSeconds = (performance.now() - setupStart) / 1000

// Each job's time over the advance: where the seconds go (BENCHMARKS.md §17 names what bounds it from these).
const jobSeconds = new Map<string, number>()
const clockJobs = jobs
  .filter((j) => j.onTestClocks)
  .map((j) => ({
    name: j.name,
    run: async (...args: Parameters<typeof j.run>) => {
      const start = performance.now()
      try {
        return await j.run(...args)
      } finally {
        jobSeconds.set(j.name, (jobSeconds.get(j.name) ?? 0) + (performance.now() - start) / 1000)
      }
    },
  }))
const t = performance.now()
await advanceClock(deps, actor, clock.id, { frozen_time: TARGET.toISOString() }, clockJobs)
let done = await getClock(deps, actor, clock.id)
while (done.status === 'advancing') {
  await new Promise((r) => setTimeout(r, 20))
  done = await getClock(deps, actor, clock.id)
  if (done.status_details.advancing) process.stderr.write(`\rtest clocks bench: ${done.frozen_time.toISOString()} ${done.status_details.advancing.progress_percent}%`)
}
const seconds = (performance.now() - t) / 1000
const jobTotals = [...jobSeconds].sort((a, b) => b[1] - a[1]).map(([name, s]) => `${name} ${fmt(s, 1)} s (${fmt((100 * s) / seconds)} %)`).join(', ')
process.stderr.write(`\ntest clocks bench: ${fmt(seconds, 1)} s; jobs: ${jobTotals}\n`)
if (done.status !== 'ready') throw new Error(`advance ended ${done.status}: ${JSON.stringify(done.status_details)}`)

const [counts] = await deps.sql<{ invoices: number; finalized: number; applications: number; expiries: number; steps: number }[]>`SELECT
  (SELECT count(*)::int FROM invoices i JOIN customers c ON c.id = i.customer_id WHERE c.test_clock_id = ${clock.id} AND i.total > 0) AS invoices,
  (SELECT count(*)::int FROM invoices i JOIN customers c ON c.id = i.customer_id WHERE c.test_clock_id = ${clock.id} AND i.invoice_status = 'FINALIZED') AS finalized,
  (SELECT count(*)::int FROM credit_grant_applications WHERE application_status = 'applied') AS applications,
  (SELECT count(*)::int FROM wallet_transactions WHERE transaction_reason = 'CREDIT_EXPIRED') AS expiries,
  (SELECT advance_steps FROM test_clocks WHERE id = ${clock.id}) AS steps`
if (counts.invoices < 12 * CUSTOMERS) throw new Error(`expected ${12 * CUSTOMERS} invoices, got ${JSON.stringify(counts)}`)

report(`## Test clocks: a year of monthly billing in one advance

${machine}. ${fmt(CUSTOMERS)} customers on one sandbox test clock, each with a subscription (a fixed monthly line in arrears and
a usage line over ${12 * EVENTS_PER_MONTH} events), the plan's monthly credit grant (credits expiring at the cycle's end) and a wallet.
One advance from ${new Date(T0).toISOString().slice(0, 10)} to ${TARGET.toISOString().slice(0, 16)}Z, timed from the call to the clock's
\`ready\`, Postgres ${deps.engines.postgres === 'pglite' ? 'embedded (PGlite)' : 'a server on the same machine'}, chDB. Setup ${fmt(setupSeconds, 1)} s.

| advance | steps | invoices (total > 0) | finalized | grant applications | credit expiries | seconds | aim |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |
| 12 months, ${fmt(CUSTOMERS)} customers | ${fmt(counts.steps)} | ${fmt(counts.invoices)} | ${fmt(counts.finalized)} | ${fmt(counts.applications)} | ${fmt(counts.expiries)} | ${fmt(seconds, 1)} | ≤ 10 s ${seconds <= 10 ? 'met' : 'missed'} |

Each step is one instant at which something is due for the clock's customers (period ends, grace-period finalizations,
grant applications, credit expiries, overdue dates); at each, the ${clockJobs.length} jobs marked onTestClocks
(${clockJobs.map((j) => j.name).join(', ')}) run for the clock's customers only. Job totals: ${jobTotals}.`)
process.exit(0)
