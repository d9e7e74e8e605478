// (4) A billing run over 10,000 subscriptions with usage lines: invoices per second of `runBilling`
// (the billing-run job) on the embedded engines. One subscription is made through the services, then
// cloned 9,999 times in SQL (customers, subscriptions, line items); 10 events per customer for March
// 2024 are generated in ClickHouse through the same event_batches views the batch writer uses. Each
// subscription owes two invoices (the March advance and the April cycle with March's usage), finalized
// at once (grace 0), so the run makes 20,000 invoices, each with its usage read from the usage service.
import { fixedClock } from '../core/clock.ts'
import { loadConfig } from '../core/config.ts'
import { createCustomer } from '../domains/customers/service.ts'
import { runBilling } from '../domains/invoicing/invoices/run.ts'
// Finalized invoices take prepaid credits through the wallet the credits domain plugs in when it loads.
import '../domains/credits/wallets/service.ts'
import { createMeter, getMeter } from '../domains/catalog/meters/service.ts'
import { createOffering } from '../domains/catalog/offerings/service.ts'
import { PLAN } from '../domains/catalog/offerings/kinds.ts'
import { createSubscription } from '../domains/subscriptions/service.ts'
import { startRoles } from '../roles.ts'
import { cpus, loadavg } from 'node:os'
import { benchDataDir, fmt, report } from './common.ts'

const N = Number(process.env.BENCH_SUBSCRIPTIONS ?? 10_000)
const EVENTS_PER_CUSTOMER = 10
const clock = fixedClock('2024-04-01T00:00:10Z')
const env = { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', DATA_DIR: benchDataDir('billing'), KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0', INVOICE_GRACE_PERIOD_MINUTES: '0' }
const running = await startRoles(loadConfig(env), ['api'], { clock })
const { deps } = running
const tenant = running.bootstrap!
const scope = { tenantId: tenant.tenantId, environmentId: tenant.environments.production }
const actor = { ...scope, keyId: 'bench', roles: ['admin' as const] }

const meter = await createMeter(deps, actor, { name: 'calls', event_name: 'api.call', aggregation: { type: 'COUNT' } })
while ((await getMeter(deps, scope, meter.id)).ready_revision === 0) await new Promise((r) => setTimeout(r, 200))
const plan = await createOffering(deps, actor, PLAN, {
  name: 'Bench plan',
  prices: [
    { currency: 'USD', type: 'FIXED', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', amount: '10.00', display_name: 'Platform' },
    { currency: 'USD', type: 'USAGE', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', amount: '0.01', meter_id: meter.id, display_name: 'Calls' },
  ],
} as never)
const template = await createCustomer(deps, actor, { external_id: 'cust-0', name: 'Customer 0' })
const sub = await createSubscription(deps, actor, { customer_id: template.id, plan_id: plan.id, currency: 'USD', billing_period: 'MONTHLY', start_date: '2024-03-01T00:00:00Z' })

const setupStart = performance.now()
// Clones of the template: every column copied, ids and customers replaced.
const clone = (table: string, where: string, fields: string) =>
  deps.sql.unsafe(`INSERT INTO ${table} SELECT (jsonb_populate_record(NULL::${table}, to_jsonb(t) || jsonb_build_object(${fields}))).*
    FROM ${table} t, generate_series(1, ${N - 1}) n WHERE ${where}`)
await clone('customers', `t.id = '${template.id}'`, `'id', 'cus_b' || lpad(n::text, 6, '0'), 'external_id', 'cust-' || n`)
await clone('subscriptions', `t.id = '${sub.id}'`, `'id', 'sub_b' || lpad(n::text, 6, '0'), 'customer_id', 'cus_b' || lpad(n::text, 6, '0')`)
await clone('subscription_line_items', `t.subscription_id = '${sub.id}'`, `'id', t.id || '_' || n, 'subscription_id', 'sub_b' || lpad(n::text, 6, '0'), 'customer_id', 'cus_b' || lpad(n::text, 6, '0')`)
await deps.ch.client.command({
  query: `INSERT INTO event_batches (kind, tenant_id, environment_id, id, external_customer_id, customer_id, event_name, source,
      timestamp, received_at, properties, reason, expires_at, meter_ids, revisions, meter_values, group_values, unique_values)
    SELECT 'stored', {t:String}, {e:String}, concat('b', toString(number)), concat('cust-', toString(number % ${N})), '', 'api.call', '',
      fromUnixTimestamp64Milli(toInt64(1709251200000 + intDiv(number * 86400000 * 30, ${N * EVENTS_PER_CUSTOMER})), 'UTC'), now64(3), '{}',
      '', now() + INTERVAL 35 DAY, [{m:String}], [toUInt32(1)], [toDecimal128(1, 12)], [''], ['']
    FROM numbers(${N * EVENTS_PER_CUSTOMER})`,
  query_params: { t: scope.tenantId, e: scope.environmentId, m: meter.id },
})
const setupSeconds = (performance.now() - setupStart) / 1000

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
