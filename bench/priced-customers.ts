// A bench fixture: customers `cust-0`… (the external ids march-events.ts generates usage for) subscribed from 1 March
// 2024 to a monthly USD plan that prices one meter per unit.
import type { Actor } from '../core/scope.ts'
import type { Deps } from '../infra/deps.ts'
import { PLAN } from '../domains/catalog/offerings/kinds.ts'
import { createOffering } from '../domains/catalog/offerings/service.ts'
import { createCustomer } from '../domains/customers/service.ts'
import { createSubscription } from '../domains/subscriptions/service.ts'

export async function pricedCustomers(deps: Deps, actor: Actor, p: { meterId: string; displayName: string; amount: string; customers: number }): Promise<void> {
  const plan = await createOffering(deps, actor, PLAN, {
    name: 'Bench plan',
    prices: [{ currency: 'USD', type: 'USAGE', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', amount: p.amount, meter_id: p.meterId, display_name: p.displayName }],
  } as never)
  for (let i = 0; i < p.customers; i++) {
    const c = await createCustomer(deps, actor, { external_id: `cust-${i}`, name: `Customer ${i}` })
    await createSubscription(deps, actor, { customer_id: c.id, plan_id: plan.id, currency: 'USD', billing_period: 'MONTHLY', start_date: '2024-03-01T00:00:00Z' })
  }
}
