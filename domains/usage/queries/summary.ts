// GET /v1/customers/usage (Flexprice's customer usage summary): for each feature a customer is entitled to,
// what it used of its metered features in the current billing period of the subscription granting it, against
// the merged limit. Entitlements come from the subscriptions domain, usage from this one's meter queries.
import { D } from '../../../core/money.ts'
import type { Actor } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import { findCustomerByExternalId, requireCustomer } from '../../customers/service.ts'
import { customerEntitlements } from '../../subscriptions/entitlements.ts'
import { requireSubscription, type SubscriptionRow } from '../../subscriptions/read.ts'
import { meterUsage } from './service.ts'

export interface UsageSummaryQuery {
  customer_id?: string
  customer_lookup_key?: string
  feature_ids?: string[]
  feature_lookup_keys?: string[]
  subscription_ids?: string[]
}

export async function customerUsageSummary(deps: Deps, actor: Actor, q: UsageSummaryQuery) {
  const customer = q.customer_id ? await requireCustomer(deps, actor, q.customer_id) : await findCustomerByExternalId(deps, actor, q.customer_lookup_key!)
  const { features } = await customerEntitlements(deps, actor, { id: customer.id }, { feature_ids: q.feature_ids, subscription_ids: q.subscription_ids })
  const wanted = q.feature_lookup_keys ? features.filter((f) => f.feature.lookup_key !== null && q.feature_lookup_keys!.includes(f.feature.lookup_key)) : features
  const subscriptions = new Map<string, SubscriptionRow>()
  const subscriptionOf = async (id: string) => subscriptions.get(id) ?? subscriptions.set(id, await requireSubscription(deps.sql, actor, id)).get(id)!
  const summaries = []
  for (const { feature, entitlement, sources } of wanted) {
    const sub = await subscriptionOf(sources[0].subscription_id)
    const limit = entitlement.usage_limit
    let usage: string | null = null
    if (feature.type === 'metered' && feature.meter_id) {
      const read = await meterUsage(deps, actor, { meterId: feature.meter_id, customerId: customer.id, start: sub.current_period_start, end: sub.current_period_end, billed: true })
      usage = read.value.toFixed()
    }
    summaries.push({
      feature,
      current_usage: usage,
      total_limit: limit,
      is_unlimited: feature.type === 'metered' && limit === null,
      is_enabled: entitlement.is_enabled,
      is_soft_limit: entitlement.is_soft_limit,
      usage_percent: usage !== null && limit ? new D(usage).times(100).div(limit).toDecimalPlaces(2).toFixed() : null,
      next_usage_reset_at: feature.type === 'metered' ? sub.current_period_end : null,
      sources,
    })
  }
  const first = [...subscriptions.values()][0]
  return {
    customer_id: customer.id,
    features: summaries,
    period: first ? { start_time: first.current_period_start, end_time: first.current_period_end, period: first.billing_period } : null,
  }
}
