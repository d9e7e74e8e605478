// GET /v1/customers/{id}/entitlements: what a customer may use now, feature by feature, merged across
// its live subscriptions and their addons (the merge is core/entitlements.ts). SDKs call it per request,
// so it is one query: the sources with their features.
import { mergeEntitlements, type EntitlementSource, type MergedEntitlement } from '../../core/entitlements.ts'
import { notFound } from '../../core/errors.ts'
import type { Actor } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import { ReadCache } from '../../infra/read-cache.ts'
import { decodeJson } from '../../infra/records.ts'
import { FEATURES, type FeatureRow } from '../catalog/features/service.ts'
import { entitlementSources, type SourceRow } from './entitlements-store.ts'

export interface CustomerEntitlements {
  customer_id: string
  features: { feature: FeatureRow; entitlement: MergedEntitlement; sources: EntitlementSource[] }[]
}

export interface EntitlementQuery {
  feature_ids?: string[]
  subscription_ids?: string[]
}

const sourceOf = (row: SourceRow): EntitlementSource => ({
  entitlement_id: row.entitlement_id,
  subscription_id: row.subscription_id!,
  entity_type: row.entity_type,
  entity_id: row.entity_id,
  entity_name: row.entity_name,
  quantity: Number(row.quantity),
  is_enabled: row.is_enabled,
  usage_limit: row.usage_limit === null ? null : Number(row.usage_limit),
  usage_reset_period: row.usage_reset_period,
  is_soft_limit: row.is_soft_limit,
  static_value: row.static_value,
})

const cache = new WeakMap<Deps, ReadCache<CustomerEntitlements>>()

/** SDKs call this on their own hot path: answered from memory for up to READ_CACHE_MS, never across a write of this process. */
export function customerEntitlements(deps: Deps, actor: Actor, customer: { id: string } | { external_id: string }, query: EntitlementQuery): Promise<CustomerEntitlements> {
  let mine = cache.get(deps)
  if (!mine) cache.set(deps, (mine = new ReadCache()))
  const key = JSON.stringify([actor.tenantId, actor.environmentId, customer, query.feature_ids ?? null, query.subscription_ids ?? null])
  return mine.read(key, deps.clock.now(), () => readEntitlements(deps, actor, customer, query))
}

async function readEntitlements(
  deps: Deps,
  actor: Actor,
  customer: { id: string } | { external_id: string },
  query: EntitlementQuery,
): Promise<CustomerEntitlements> {
  const rows = await entitlementSources(deps.sql, actor, { customer, featureIds: query.feature_ids, subscriptionIds: query.subscription_ids, at: deps.clock.now() })
  if (rows.length === 0) throw 'id' in customer ? notFound('customer', customer.id) : notFound('customer with external_id', customer.external_id)
  // Features in the order their first source comes: the plan's before the addons'.
  const byFeature = new Map<string, { feature: FeatureRow; sources: EntitlementSource[] }>()
  for (const row of rows) {
    if (row.subscription_id === null) continue
    let entry = byFeature.get(row.feature_id)
    if (!entry) byFeature.set(row.feature_id, (entry = { feature: decodeJson<FeatureRow>(FEATURES, row.feature), sources: [] }))
    entry.sources.push(sourceOf(row))
  }
  return {
    customer_id: rows[0].customer_id,
    features: [...byFeature.values()].map(({ feature, sources }) => ({ feature, entitlement: mergeEntitlements(feature.type, sources), sources })),
  }
}
