// A customer's id at a connected provider (Stripe's customer, QuickBooks' Customer) is kept in the
// customer's integrations, so later pushes reuse it.
import type { Scope } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import { updateCustomer, type CustomerView } from '../customers/service.ts'
import { systemActor } from '../records/service.ts'
import type { ProviderType } from './provider.ts'

/** Records the customer's id at the provider the first time it is made or found there. */
export async function linkCustomer(deps: Deps, scope: Scope, customer: CustomerView, provider: ProviderType, providerCustomerId: string): Promise<void> {
  if (customer.integrations.some((m) => m.provider_type === provider)) return
  const integrations = customer.integrations.map((m) => ({ provider_type: m.provider_type, provider_entity_id: m.provider_entity_id, metadata: m.metadata }))
  try {
    await updateCustomer(deps, systemActor(scope), customer.id, { integrations: [...integrations, { provider_type: provider, provider_entity_id: providerCustomerId }] })
  } catch (err) {
    // The push succeeded; the next one finds the same provider customer (idempotency key, or a match by name).
    deps.logger.warn({ err, customer_id: customer.id }, 'could not record the provider customer id')
  }
}
