// The server process of the spend-control benchmark: the api role on embedded engines, seeded with CUSTOMERS
// customers on one plan whose metered feature has a hard limit and a usage price, and one wallet of a billion
// credits. Prints {port, key, customers, feature, wallet} as one JSON line.
import { createCustomer } from '../domains/customers/service.ts'
import { features as featureService } from '../domains/catalog/features/service.ts'
import { createMeter, getMeter } from '../domains/catalog/meters/service.ts'
import { createOffering } from '../domains/catalog/offerings/service.ts'
import { PLAN } from '../domains/catalog/offerings/kinds.ts'
import { createSubscription } from '../domains/subscriptions/service.ts'
import { createWallet } from '../domains/credits/wallets/service.ts'
import { loadConfig } from '../core/config.ts'
import { startRoles } from '../roles.ts'
import { benchDataDir } from './common.ts'

const CUSTOMERS = Number(process.env.BENCH_CUSTOMERS ?? 200)
const env = { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', DATA_DIR: benchDataDir('spend'), KAFKA_BROKERS: '', METRICS_PORT: '0', RATE_LIMIT_PER_SECOND: '1000000', METER_BACKFILL_SETTLE_SECONDS: '0' }
const running = await startRoles(loadConfig(env), ['api', 'ingest'])
const { deps } = running
const tenant = running.bootstrap!
const actor = { tenantId: tenant.tenantId, environmentId: tenant.environments.production, keyId: 'bench', roles: ['admin' as const] }

const meter = await createMeter(deps, actor, { name: 'tokens', event_name: 'llm.tokens', aggregation: { type: 'SUM', field: 'tokens' } })
while ((await getMeter(deps, actor, meter.id)).ready_revision === 0) await new Promise((r) => setTimeout(r, 200))
const feature = await featureService.create(deps, actor, { name: 'tokens', type: 'metered', meter_id: meter.id })
const plan = await createOffering(deps, actor, PLAN, {
  name: 'AI',
  prices: [{ currency: 'USD', type: 'USAGE', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', amount: '0.00001', meter_id: meter.id }],
  entitlements: [{ feature_id: feature.id, usage_limit: 1_000_000, usage_reset_period: 'MONTHLY', is_soft_limit: false }],
} as never)
const customers: string[] = []
for (let i = 0; i < CUSTOMERS; i++) {
  const c = await createCustomer(deps, actor, { external_id: `spend-${i}` })
  await createSubscription(deps, actor, { customer_id: c.id, plan_id: plan.id, currency: 'USD', billing_period: 'MONTHLY' })
  customers.push(c.id)
}
const wallet = await createWallet(deps, actor, { customer_id: customers[0], currency: 'USD', initial_credits_to_load: '1000000000' })
process.stdout.write(`${JSON.stringify({ port: running.port, key: tenant.apiKey, customers, feature: feature.id, wallet: wallet.id })}\n`)
process.on('SIGTERM', () => {
  running.stop().then(() => process.exit(0), () => process.exit(1))
})
