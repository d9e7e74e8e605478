// The wallet balances a dashboard polls: GET /v1/wallets/{id} (balance from the ledger) and
// GET /v1/wallets/{id}/balance/real-time (balance − current-period usage charges − unpaid invoices), p50/p99
// over HTTP on the embedded engines. The wallet has a long ledger (top-ups with mixed priorities and expiries,
// debits consuming them), its customer a subscription with two usage lines over 200,000 events this period,
// and three unpaid invoices.
import { cpus, loadavg, totalmem } from 'node:os'
import { fixedClock } from '../core/clock.ts'
import { loadConfig } from '../core/config.ts'
import { createCustomer } from '../domains/customers/service.ts'
import { createInvoice } from '../domains/invoicing/invoices/service.ts'
import { finalizeInvoice } from '../domains/invoicing/invoices/finalize.ts'
import { createMeter, getMeter } from '../domains/catalog/meters/service.ts'
import { createOffering } from '../domains/catalog/offerings/service.ts'
import { PLAN } from '../domains/catalog/offerings/kinds.ts'
import { createSubscription } from '../domains/subscriptions/service.ts'
import { requireRecord } from '../infra/records.ts'
import { unbilledUsage, unpaidInvoices } from '../domains/credits/wallets/realtime.ts'
import { createWallet, debitWallet, topUpWallet } from '../domains/credits/wallets/service.ts'
import { WALLETS, type WalletRow } from '../domains/credits/wallets/store.ts'
import { ingestEvents } from '../ingest/service.ts'
import { startRoles } from '../roles.ts'
import { benchDataDir, fmt, percentile, report } from './common.ts'

// Stated in the section itself: it is also appended on its own (BENCH_OUT=BENCHMARKS.md), without run.ts's header.
const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB RAM, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}, load average ${loadavg()[0].toFixed(1)} at the start (the cores are shared)`
const EVENTS = Number(process.env.BENCH_WALLET_EVENTS ?? 200_000)
const TOPUPS = 1000
const DEBITS = 600
const RUNS = 200
const clock = fixedClock('2024-03-20T12:00:00Z')
const env = { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', DATA_DIR: benchDataDir('wallet'), KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0' }
const running = await startRoles(loadConfig(env), ['api', 'ingest'], { clock })
const { deps } = running
const tenant = running.bootstrap!
const actor = { tenantId: tenant.tenantId, environmentId: tenant.environments.production, keyId: 'bench', roles: ['admin' as const] }

const setupStart = performance.now()
const meters = [await createMeter(deps, actor, { name: 'calls', event_name: 'api.call', aggregation: { type: 'COUNT' } })]
meters.push(await createMeter(deps, actor, { name: 'tokens', event_name: 'api.call', aggregation: { type: 'SUM', field: 'tokens' } }))
for (const m of meters) while ((await getMeter(deps, actor, m.id)).ready_revision === 0) await new Promise((r) => setTimeout(r, 200))
const usage = (meterId: string, amount: string) => ({ currency: 'USD', type: 'USAGE', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', amount, meter_id: meterId })
const plan = await createOffering(deps, actor, PLAN, { name: 'Bench plan', prices: [usage(meters[0].id, '0.001'), usage(meters[1].id, '0.00001')] } as never)
const customer = await createCustomer(deps, actor, { external_id: 'wallet-bench', name: 'Wallet bench' })
await createSubscription(deps, actor, { customer_id: customer.id, plan_id: plan.id, currency: 'USD', billing_period: 'MONTHLY', start_date: '2024-03-01T00:00:00Z' })

const wallet = await createWallet(deps, actor, { customer_id: customer.id, currency: 'USD', config: { allowed_price_types: ['USAGE'] } })
for (let i = 0; i < TOPUPS; i++) {
  const expiry = i % 3 === 0 ? { expiry_date_utc: new Date(Date.UTC(2024, 3 + (i % 9), 1)).toISOString() } : {}
  await topUpWallet(deps, actor, wallet.id, { credits_to_add: '10', transaction_reason: i % 2 ? 'FREE_CREDIT_GRANT' : 'PURCHASED_CREDIT_DIRECT', priority: i % 4, ...expiry })
}
for (let i = 0; i < DEBITS; i++) await debitWallet(deps, actor, wallet.id, { credits: '7.5' })
for (let i = 0; i < 3; i++) {
  const line = { amount: '20.00', quantity: '1', price_type: 'FIXED' as const, display_name: 'Support' }
  const draft = await createInvoice(deps, actor, { customer_id: customer.id, currency: 'USD', subtotal: '20.00', total: '20.00', amount_due: '20.00', line_items: [line] })
  await finalizeInvoice(deps, actor, draft.id)
}
for (let from = 0; from < EVENTS; from += 5000) {
  const batch = Array.from({ length: Math.min(5000, EVENTS - from) }, (_, k) => ({
    event_id: `wb-${from + k}`,
    event_name: 'api.call',
    external_customer_id: 'wallet-bench',
    timestamp: new Date(Date.UTC(2024, 2, 1) + ((from + k) % (19 * 86_400)) * 1000).toISOString(),
    properties: { tokens: (from + k) % 1000 },
  }))
  await ingestEvents(deps, actor, batch, JSON.stringify(batch).length)
}
const setupSeconds = (performance.now() - setupStart) / 1000

async function time(path: string): Promise<{ p50: number; p99: number; body: Record<string, string> }> {
  const times: number[] = []
  let body: Record<string, string> = {}
  for (let i = 0; i < RUNS + 5; i++) {
    const t = performance.now()
    const res = await fetch(`http://127.0.0.1:${running.port}${path}`, { headers: { 'x-api-key': tenant.apiKey } })
    body = (await res.json()) as Record<string, string>
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(body)}`)
    if (i >= 5) times.push(performance.now() - t) // the first runs warm caches
  }
  times.sort((a, b) => a - b)
  return { p50: percentile(times, 50), p99: percentile(times, 99), body }
}

const plain = await time(`/v1/wallets/${wallet.id}`)
const realtime = await time(`/v1/wallets/${wallet.id}/balance/real-time`)

/** The parts of the real-time balance on their own, through the same service functions. */
async function timePart(run: () => Promise<unknown>): Promise<{ p50: number; p99: number }> {
  const times: number[] = []
  for (let i = 0; i < RUNS + 5; i++) {
    const t = performance.now()
    await run()
    if (i >= 5) times.push(performance.now() - t)
  }
  times.sort((a, b) => a - b)
  return { p50: percentile(times, 50), p99: percentile(times, 99) }
}
const row = await requireRecord<WalletRow>(deps.sql, WALLETS, actor, wallet.id)
const usagePart = await timePart(() => unbilledUsage(deps, actor, row, clock.now()))
const unpaidPart = await timePart(() => unpaidInvoices(deps, actor, row))
const [{ n }] = await deps.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM wallet_transactions WHERE wallet_id = ${wallet.id}`
await running.stop()
// 1000 × 10 − 600 × 7.5 = 5500 credits; usage 200,000 × 0.001 + Σ tokens × 0.00001; 3 × 20.00 unpaid.
if (realtime.body.balance !== '5500.00' || realtime.body.unpaid_invoices_amount !== '60.00') throw new Error(`unexpected balance: ${JSON.stringify(realtime.body)}`)

report(`## Wallet balances

${machine}. One wallet with ${fmt(n)} ledger rows (${fmt(TOPUPS)} top-ups with mixed priorities and
expiries, ${fmt(DEBITS)} debits consuming them); its customer has a subscription with two usage lines (COUNT and SUM meters) over
${fmt(EVENTS)} events this period, and three unpaid invoices. ${RUNS} sequential requests over HTTP after 5 warm-up requests, embedded
engines (PGlite, chDB). Setup ${fmt(setupSeconds, 1)} s.

| request | p50 ms | p99 ms | result |
| --- | ---: | ---: | --- |
| GET /v1/wallets/{id} | ${fmt(plain.p50, 1)} | ${fmt(plain.p99, 1)} | balance ${plain.body.balance} |
| GET /v1/wallets/{id}/balance/real-time | ${fmt(realtime.p50, 1)} | ${fmt(realtime.p99, 1)} | real_time_balance ${realtime.body.real_time_balance} (usage ${realtime.body.current_period_usage}, unpaid ${realtime.body.unpaid_invoices_amount}) |
| of which: unbilled usage (2 lines), alone | ${fmt(usagePart.p50, 1)} | ${fmt(usagePart.p99, 1)} | subscriptions, line items, one usage query per line |
| of which: unpaid invoices, alone | ${fmt(unpaidPart.p50, 1)} | ${fmt(unpaidPart.p99, 1)} | the invoicing service's list |

The balance reads only the wallet's open credits (a partial index), not the whole ledger; the real-time balance adds one
usage query per usage line (per-minute views in ClickHouse) and the unpaid invoices, read concurrently.`)
process.exit(0)
