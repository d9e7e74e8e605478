// (15) A pricing simulation over stored usage: POST /v1/pricing/simulations' run (domains/invoicing/simulations) over
// the billing benches' world (bench/billing-world.ts): N subscriptions (default 10,000) with a 10.00 fee and 0.01 a
// call, cloned in SQL, EVENTS_PER_CUSTOMER events each in March 2024 (default 1,000: 10M stored events). The billing
// run bills them first (the same-run baseline: two invoices a subscription, the March advance and April's cycle with
// March's usage), then the simulation bills the same points again twice — as today and with the usage price doubled —
// without storing invoices, a page of subscriptions at a time. Checked: current equals what the stored invoices
// billed, candidate adds March's usage once more. Two more passes, on a tenth of the customers and on all, sample the
// live heap: it does not grow with the customers.
import { cpus, loadavg } from 'node:os'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { runBilling } from '../domains/invoicing/invoices/run.ts'
import { createSimulation, getSimulation } from '../domains/invoicing/simulations/service.ts'
import { fmt, report } from './common.ts'
import { billingWorld } from './billing-world.ts'

const N = Number(process.env.BENCH_SUBSCRIPTIONS ?? 10_000)
const EVENTS_PER_CUSTOMER = Number(process.env.BENCH_EVENTS_PER_CUSTOMER ?? 1000)
const { running, setupSeconds } = await billingWorld('simulation', N, EVENTS_PER_CUSTOMER)
const { deps } = running
const tenant = running.bootstrap!
const actor = { tenantId: tenant.tenantId, environmentId: tenant.environments.production, keyId: 'bench', roles: ['admin' as const] }

// A full collection on demand, for the memory passes only (each collection pauses the run).
setFlagsFromString('--expose-gc')
const collect = runInNewContext('gc') as () => void

/** Wall time of `work`; with `heap`, the peak of the live heap (collected every 250 ms) above the heap before it, MB. */
async function measured<T>(work: () => Promise<T>, heap = false): Promise<{ result: T; seconds: number; heapMb: number }> {
  collect()
  const base = process.memoryUsage().heapUsed
  let peak = base
  const timer = heap ? setInterval(() => (collect(), (peak = Math.max(peak, process.memoryUsage().heapUsed))), 250) : undefined
  const started = performance.now()
  const result = await work()
  const seconds = (performance.now() - started) / 1000
  clearInterval(timer)
  return { result, seconds, heapMb: (peak - base) / 2 ** 20 }
}

const step = (what: string) => process.stderr.write(`simulation bench: ${what} (${new Date().toISOString()})\n`)
const [usagePrice] = await deps.sql<{ id: string }[]>`SELECT id FROM prices WHERE type = 'USAGE' AND status = 'published'`
async function simulate(customerIds?: string[]) {
  const sim = await createSimulation(deps, actor, {
    name: 'double the usage price',
    start_time: new Date('2024-03-01T00:00:00Z'),
    end_time: new Date('2024-04-02T00:00:00Z'),
    customer_ids: customerIds,
    candidate: { price_overrides: [{ price_id: usagePrice.id, amount: '0.02' }] },
  })
  for (;;) {
    const got = await getSimulation(deps, actor, sim.id)
    if (got.status === 'completed' || got.status === 'failed') return got
    await new Promise((r) => setTimeout(r, 50))
  }
}

step('billing run')
const billing = await measured(() => runBilling(deps))
const [invoiced] = await deps.sql<{ n: number; billed: string }[]>`SELECT count(*)::int AS n, sum(subtotal - total_discount)::text AS billed FROM invoices`
step('simulation')
const full = await measured(() => simulate())
// Memory: the same simulation on a tenth of the customers and on all of them, the live heap sampled.
const tenth = (await deps.sql<{ id: string }[]>`SELECT id FROM customers ORDER BY id LIMIT ${Math.max(1, Math.floor(N / 10))}`).map((r) => r.id)
step('memory passes')
const smallHeap = await measured(() => simulate(tenth), true)
const fullHeap = await measured(() => simulate(), true)
await running.stop()

const totals = full.result.totals as { current: string; candidate: string; customers: number; invoices: number }
// Each subscription: 10.00 for March, 10.00 for April and March's calls at 0.01 (candidate 0.02).
const current = N * (20 + EVENTS_PER_CUSTOMER * 0.01)
const candidate = N * (20 + EVENTS_PER_CUSTOMER * 0.02)
const ok =
  full.result.status === 'completed' &&
  billing.result.failed === 0 &&
  totals.customers === N &&
  totals.invoices === 2 * N &&
  Number(totals.current).toFixed(2) === current.toFixed(2) &&
  Number(invoiced.billed).toFixed(2) === current.toFixed(2) &&
  Number(totals.candidate).toFixed(2) === candidate.toFixed(2)
if (!ok) throw new Error(`unexpected simulation: ${JSON.stringify({ sim: full.result, billing: billing.result, invoiced, current, candidate })}`)

const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${new Date().toISOString().slice(0, 16)}Z, load average ${loadavg().map((l) => l.toFixed(1)).join(', ')} at the end`
report(`## Pricing simulation (${deps.engines.postgres === 'server' ? 'PostgreSQL server' : 'PGlite'})

${fmt(N)} customers × 1 month of usage (${fmt(N * EVENTS_PER_CUSTOMER)} stored events), two billing points each (${fmt(2 * N)} invoices),
the usage price doubled. Billing run (baseline, stores the invoices): ${fmt(billing.seconds, 1)} s. Simulation: ${fmt(full.seconds, 1)} s
= **${fmt(full.seconds / billing.seconds, 2)} × the billing run**, ${fmt(N / full.seconds)} customer-months/s. Live heap at its peak
(collected every 250 ms, a separate pass): +${fmt(smallHeap.heapMb)} MB for ${fmt(tenth.length)} customers, +${fmt(fullHeap.heapMb)} MB for
${fmt(N)}. Checked: current ${totals.current} = the stored invoices' subtotals less discounts (${invoiced.billed}), candidate
${totals.candidate}. Setup ${fmt(setupSeconds, 1)} s. Machine: ${machine}.`)
process.exit(0)
