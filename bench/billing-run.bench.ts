// (4) A billing run over 10,000 subscriptions with usage lines: invoices per second of `runBilling`
// (the billing-run job) on the embedded engines. One subscription is made through the services, then
// cloned 9,999 times in SQL (customers, subscriptions, line items); 10 events per customer for March
// 2024 are generated in ClickHouse through the same event_batches views the batch writer uses. Each
// subscription owes two invoices (the March advance and the April cycle with March's usage), finalized
// at once (grace 0), so the run makes 20,000 invoices, each with its usage read from the usage service.
import { runBilling } from '../domains/invoicing/invoices/run.ts'
import { cpus, loadavg } from 'node:os'
import { fmt, report } from './common.ts'
import { billingWorld } from './billing-world.ts'

const N = Number(process.env.BENCH_SUBSCRIPTIONS ?? 10_000)
const EVENTS_PER_CUSTOMER = 10
const { running, setupSeconds } = await billingWorld('billing', N, EVENTS_PER_CUSTOMER)
const { deps } = running

const started = performance.now()
const summary = await runBilling(deps)
const seconds = (performance.now() - started) / 1000
const invoices = summary.invoices_created
const [check] = await deps.sql<{ n: number; total: string }[]>`SELECT count(*)::int AS n, sum(total)::text AS total FROM invoices WHERE invoice_status = 'FINALIZED'`
await running.stop()
// Each subscription: 10.00 in advance for March, then 10 calls × 0.01 = 0.10 + 10.00 for April.
const expected = (N * 20.1).toFixed(2)
if (summary.failed > 0 || check.n !== 2 * N || Number(check.total).toFixed(2) !== expected) throw new Error(`unexpected run: ${JSON.stringify({ summary, check, expected })}`)

const engine = deps.engines.postgres === 'server' ? 'a PostgreSQL server (DATABASE_URL) on the same machine' : 'embedded PGlite'
const why =
  deps.engines.postgres === 'server'
    ? 'Postgres works in its own process, on the second core.'
    : "PGlite runs in the run's own process (its WASM and the run's JS share one thread), so most of the time goes to its inserts (invoices, lines, outbox events)."
const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${new Date().toISOString().slice(0, 16)}Z, load average ${loadavg().map((l) => l.toFixed(1)).join(', ')} at the end`
report(`## Billing run (${deps.engines.postgres === 'server' ? 'PostgreSQL server' : 'PGlite'})

\`runBilling\` (the billing-run job) over ${fmt(N)} subscriptions, each owing two invoices (March in advance; April's cycle with
March's usage of ${EVENTS_PER_CUSTOMER} events read from the usage service), finalized at once (grace 0): ${fmt(invoices)} invoices
in ${fmt(seconds, 1)} s = **${fmt(invoices / seconds)} invoices/s** (target ≥ 500/s). Every invoice checked: ${fmt(check.n)}
finalized, totals add up to ${expected} USD. Setup (cloning subscriptions in SQL, events in ClickHouse) ${fmt(setupSeconds, 1)} s.
Postgres: ${engine}; chDB in process. ${why} Machine: ${machine}.`)
process.exit(0)
