// GET /v1/customers/{id}/entitlements: what a customer may use now, feature by feature, merged across
// its live subscriptions and their addons (the merge is core/entitlements.ts). SDKs call it per request,
// so it is answered from the read cache, reloaded with one query for the customer's sources; their features
// come from a read cache of their own, keyed by the set of ids, which customers on the same plans share (a reload
// of the sources alone costs ~60% of one that embedded each row's feature as JSON).
import { mergeEntitlements, type EntitlementSource, type MergedEntitlement } from '../../core/entitlements.ts'
import { notFound } from '../../core/errors.ts'
import type { Actor } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import { ReadCache } from '../../infra/read-cache.ts'
import { decodeJson } from '../../infra/records.ts'
import { FEATURES, type FeatureRow } from '../catalog/features/service.ts'
import { entitlementSources, featuresById, type SourceRow } from './entitlements-store.ts'

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
const featureCache = new WeakMap<Deps, ReadCache<Map<string, FeatureRow>>>()

/** The features of `ids`, under the read cache's contract (READ_CACHE_MS, never across a write of this process). */
function featuresOf(deps: Deps, actor: Actor, ids: string[]): Promise<Map<string, FeatureRow>> {
  let mine = featureCache.get(deps)
  if (!mine) featureCache.set(deps, (mine = new ReadCache()))
  const sorted = [...ids].sort()
  return mine.read(JSON.stringify([actor.tenantId, actor.environmentId, sorted]), deps.clock.now(), async () => {
    const rows = await featuresById(deps.sql, actor, sorted)
    return new Map(rows.map((r) => [r.id, decodeJson<FeatureRow>(FEATURES, r.feature)]))
  })
}

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
  const byFeature = new Map<string, EntitlementSource[]>()
  for (const row of rows) {
    if (row.subscription_id === null) continue
    let sources = byFeature.get(row.feature_id)
    if (!sources) byFeature.set(row.feature_id, (sources = []))
    sources.push(sourceOf(row))
  }
  const features = byFeature.size === 0 ? new Map<string, FeatureRow>() : await featuresOf(deps, actor, [...byFeature.keys()])
  return {
    customer_id: rows[0].customer_id,
    features: [...byFeature].map(([id, sources]) => {
      const feature = features.get(id)!
      return { feature, entitlement: mergeEntitlements(feature.type, sources), sources }
    }),
  }
}
