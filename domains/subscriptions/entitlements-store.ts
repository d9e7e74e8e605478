// The entitlement lookup's queries: every entitlement a customer's live subscriptions grant through their plans
// and addons, in merge order (plans before addons, oldest subscription first); and the features they name, apart,
// since customers on the same plans share them (domains/subscriptions/entitlements.ts caches them so).
import type { Scope } from '../../core/scope.ts'
import type { Db } from '../../infra/postgres.ts'

export interface SourceRow {
  customer_id: string
  /** The rest is null when the customer has no live subscription with entitlements. */
  subscription_id: string | null
  entity_type: 'plan' | 'addon'
  entity_id: string
  entity_name: string
  quantity: number
  entitlement_id: string
  feature_id: string
  feature_type: 'metered' | 'boolean' | 'static'
  is_enabled: boolean
  usage_limit: string | null
  usage_reset_period: string | null
  is_soft_limit: boolean
  static_value: string | null
}

export interface SourceFilter {
  customer: { id: string } | { external_id: string }
  featureIds?: string[]
  subscriptionIds?: string[]
  at: Date
}

/**
 * Zero rows: no such customer. One row without subscription_id: a customer granted nothing. A live
 * subscription has started, is not cancelled nor past its end or cancel_at (checked here, so the
 * lookup is right even before the lifecycle job has run), is not waiting for a first payment, and has not had its
 * entitlements suspended by dunning until an invoice is paid (suspension.ts).
 */
export async function entitlementSources(db: Db, scope: Scope, f: SourceFilter): Promise<SourceRow[]> {
  const customer = 'id' in f.customer ? db`c.id = ${f.customer.id}` : db`c.external_id = ${f.customer.external_id}`
  const subs = f.subscriptionIds ? db`AND s.id = ANY(${f.subscriptionIds}::text[])` : db``
  const features = f.featureIds ? db`AND e.feature_id = ANY(${f.featureIds}::text[])` : db``
  const live = db`s.customer_id = c.id AND s.tenant_id = c.tenant_id AND s.environment_id = c.environment_id AND s.status = 'published'
    AND s.subscription_status IN ('not_started', 'trialing', 'active') AND s.start_date <= ${f.at}
    AND (s.end_date IS NULL OR s.end_date > ${f.at}) AND (s.cancel_at IS NULL OR s.cancel_at > ${f.at})
    AND s.entitlements_suspended_by IS NULL ${subs}`
  // An entitlement with a window grants only within it.
  const granted = db`e.tenant_id = c.tenant_id AND e.environment_id = c.environment_id AND e.status = 'published' ${features}
    AND (e.start_date IS NULL OR e.start_date <= ${f.at}) AND (e.end_date IS NULL OR e.end_date > ${f.at})`
  return db<SourceRow[]>`SELECT c.id AS customer_id, src.*
    FROM customers c
    LEFT JOIN LATERAL (
      SELECT s.id AS subscription_id, s.start_date AS started, 0 AS kind, 'plan' AS entity_type, p.id AS entity_id, p.name AS entity_name,
             1 AS quantity, e.id AS entitlement_id, e.feature_id, e.feature_type, e.is_enabled, e.usage_limit, e.usage_reset_period,
             e.is_soft_limit, e.static_value, e.display_order
        FROM subscriptions s
        JOIN plans p ON p.id = s.plan_id
        JOIN entitlements e ON e.entity_type = 'PLAN' AND e.entity_id = p.id AND ${granted}
       WHERE ${live}
      UNION ALL
      SELECT s.id, s.start_date, 1, 'addon', a.id, a.name, sa.quantity, e.id, e.feature_id, e.feature_type, e.is_enabled, e.usage_limit,
             e.usage_reset_period, e.is_soft_limit, e.static_value, e.display_order
        FROM subscriptions s
        JOIN subscription_addons sa ON sa.subscription_id = s.id AND sa.status = 'published'
             AND sa.start_date <= ${f.at} AND (sa.end_date IS NULL OR sa.end_date > ${f.at})
        JOIN addons a ON a.id = sa.addon_id
        JOIN entitlements e ON e.entity_type = 'ADDON' AND e.entity_id = a.id AND ${granted}
       WHERE ${live}
    ) src ON true
    WHERE c.tenant_id = ${scope.tenantId} AND c.environment_id = ${scope.environmentId} AND ${customer} AND c.status = 'published'
    ORDER BY src.kind, src.started, src.subscription_id, src.display_order, src.entitlement_id`
}

/** The features of `ids` as JSON (to_jsonb, whose key order the answer keeps), whatever their status: an entitlement names them. */
export async function featuresById(db: Db, scope: Scope, ids: string[]): Promise<{ id: string; feature: Record<string, unknown> }[]> {
  return db`SELECT f.id, to_jsonb(f) AS feature FROM features f
    WHERE f.id = ANY(${ids}::text[]) AND f.tenant_id = ${scope.tenantId} AND f.environment_id = ${scope.environmentId}`
}
