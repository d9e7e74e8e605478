// The server process of the entitlement lookup benchmark: the api role on embedded engines, seeded with
// CUSTOMERS customers, each on two plans (one with an addon held twice): 12 features granted through
// 16 entitlements, so one lookup merges 16 sources. Prints {port, key, customers, features} as one JSON line.
import { createCustomer } from '../domains/customers/service.ts'
import { features as featureService } from '../domains/catalog/features/service.ts'
import { createMeter } from '../domains/catalog/meters/service.ts'
import { createOffering } from '../domains/catalog/offerings/service.ts'
import { ADDON, PLAN } from '../domains/catalog/offerings/kinds.ts'
import { createSubscription } from '../domains/subscriptions/service.ts'
import { loadConfig } from '../core/config.ts'
import { startRoles } from '../roles.ts'
import { benchDataDir } from './common.ts'

const CUSTOMERS = Number(process.env.BENCH_CUSTOMERS ?? 200)
const env = { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', DATA_DIR: benchDataDir('ent'), KAFKA_BROKERS: '', RATE_LIMIT_PER_SECOND: '1000000' }
const running = await startRoles(loadConfig(env), ['api'])
const { deps } = running
const tenant = running.bootstrap!
const actor = { tenantId: tenant.tenantId, environmentId: tenant.environments.production, keyId: 'bench', roles: ['admin' as const] }

const meter = await createMeter(deps, actor, { name: 'calls', event_name: 'api.call', aggregation: { type: 'COUNT' } })
const features: Awaited<ReturnType<typeof featureService.create>>[] = []
for (let i = 0; i < 4; i++) features.push(await featureService.create(deps, actor, { name: `metered ${i}`, type: 'metered', meter_id: meter.id }))
for (let i = 0; i < 4; i++) features.push(await featureService.create(deps, actor, { name: `flag ${i}`, type: 'boolean' }))
for (let i = 0; i < 4; i++) features.push(await featureService.create(deps, actor, { name: `sla ${i}`, type: 'static' }))

const grant = (f: (typeof features)[number], limit: number) =>
  f.type === 'metered' ? { feature_id: f.id, usage_limit: limit, usage_reset_period: 'MONTHLY' as const } : f.type === 'static' ? { feature_id: f.id, static_value: `tier ${limit}` } : { feature_id: f.id }
const price = { currency: 'USD', type: 'FIXED' as const, billing_model: 'FLAT_FEE' as const, billing_period: 'MONTHLY' as const, amount: '10' }
const base = await createOffering(deps, actor, PLAN, { name: 'Base', prices: [price], entitlements: features.slice(0, 6).map((f) => grant(f, 1000)) })
const pro = await createOffering(deps, actor, PLAN, { name: 'Pro', prices: [price], entitlements: features.slice(4, 10).map((f) => grant(f, 5000)) })
const boost = await createOffering(deps, actor, ADDON, { name: 'Boost', lookup_key: 'boost', prices: [price], entitlements: [...features.slice(0, 2), ...features.slice(10)].map((f) => grant(f, 500)) })

const customers: string[] = []
for (let i = 0; i < CUSTOMERS; i++) {
  const c = await createCustomer(deps, actor, { external_id: `bench-${i}` })
  await createSubscription(deps, actor, { customer_id: c.id, plan_id: base.id, currency: 'USD', billing_period: 'MONTHLY' })
  await createSubscription(deps, actor, { customer_id: c.id, plan_id: pro.id, currency: 'USD', billing_period: 'MONTHLY', addons: [{ addon_id: boost.id, quantity: 2 }] })
  customers.push(c.id)
}
process.stdout.write(`${JSON.stringify({ port: running.port, key: tenant.apiKey, customers, features: features.map((f) => f.id) })}\n`)
process.on('SIGTERM', () => {
  running.stop().then(() => process.exit(0), () => process.exit(1))
})
