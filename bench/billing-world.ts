// The billing benches' world: a plan with a fixed and a usage price, one subscription made through the
// services and cloned in SQL (customers, subscriptions, line items) to `n`, and `eventsPerCustomer` events
// per customer for March 2024 written to ClickHouse through the same event_batches views the batch writer
// uses. Each subscription then owes two invoices on 2024-04-01: March in advance, April's cycle with March's usage.
import { fixedClock } from '../core/clock.ts'
import { loadConfig } from '../core/config.ts'
import { createCustomer } from '../domains/customers/service.ts'
// Finalized invoices take prepaid credits through the wallet the credits domain plugs in when it loads.
import '../domains/credits/wallets/service.ts'
import { createMeter, getMeter } from '../domains/catalog/meters/service.ts'
import { createOffering } from '../domains/catalog/offerings/service.ts'
import { PLAN } from '../domains/catalog/offerings/kinds.ts'
import { createSubscription } from '../domains/subscriptions/service.ts'
import { startRoles, type Running } from '../roles.ts'
import { benchDataDir } from './common.ts'

export async function billingWorld(name: string, n: number, eventsPerCustomer: number): Promise<{ running: Running; setupSeconds: number }> {
  const clock = fixedClock('2024-04-01T00:00:10Z')
  const env = { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', DATA_DIR: benchDataDir(name), KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0', INVOICE_GRACE_PERIOD_MINUTES: '0' }
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
      FROM ${table} t, generate_series(1, ${n - 1}) n WHERE ${where}`)
  await clone('customers', `t.id = '${template.id}'`, `'id', 'cus_b' || lpad(n::text, 6, '0'), 'external_id', 'cust-' || n`)
  await clone('subscriptions', `t.id = '${sub.id}'`, `'id', 'sub_b' || lpad(n::text, 6, '0'), 'customer_id', 'cus_b' || lpad(n::text, 6, '0')`)
  await clone('subscription_line_items', `t.subscription_id = '${sub.id}'`, `'id', t.id || '_' || n, 'subscription_id', 'sub_b' || lpad(n::text, 6, '0'), 'customer_id', 'cus_b' || lpad(n::text, 6, '0')`)
  await deps.ch.client.command({
    query: `INSERT INTO event_batches (kind, tenant_id, environment_id, id, external_customer_id, customer_id, event_name, source,
        timestamp, received_at, properties, reason, expires_at, meter_ids, revisions, meter_values, group_values, unique_values)
      SELECT 'stored', {t:String}, {e:String}, concat('b', toString(number)), concat('cust-', toString(number % ${n})), '', 'api.call', '',
        fromUnixTimestamp64Milli(toInt64(1709251200000 + intDiv(number * 86400000 * 30, ${n * eventsPerCustomer})), 'UTC'), now64(3), '{}',
        '', now() + INTERVAL 35 DAY, [{m:String}], [toUInt32(1)], [toDecimal128(1, 12)], [''], ['']
      FROM numbers(${n * eventsPerCustomer})`,
    query_params: { t: scope.tenantId, e: scope.environmentId, m: meter.id },
  })
  return { running, setupSeconds: (performance.now() - setupStart) / 1000 }
}
