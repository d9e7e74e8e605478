import type { Scope } from '../../../core/scope.ts'
import type { Db } from '../../../infra/postgres.ts'
import { type FilterSpec, filterSpec, type RecordRow, type RecordTable } from '../../../infra/records.ts'

export const ENTITLEMENTS: RecordTable = { name: 'entitlements', noun: 'entitlement', prefix: 'ent', counts: ['usage_limit'] }
export const FEATURE_INDEX = 'entitlements_feature'

export const FILTERS: FilterSpec = filterSpec({
  in: { entitlement_ids: 'id', feature_ids: 'feature_id', entity_ids: 'entity_id', plan_ids: 'entity_id', parent_entitlement_ids: 'parent_entitlement_id' },
  eq: { feature_type: 'feature_type', entity_type: 'entity_type' },
})

export type EntityType = 'PLAN' | 'ADDON'
export type ResetPeriod = 'DAILY' | 'WEEKLY' | 'MONTHLY' | 'QUARTERLY' | 'HALF_YEARLY' | 'ANNUAL' | 'NEVER'

export interface EntitlementRow extends RecordRow {
  entity_type: EntityType
  entity_id: string
  feature_id: string
  feature_type: 'metered' | 'boolean' | 'static'
  is_enabled: boolean
  usage_limit: number | null
  usage_reset_period: ResetPeriod | null
  is_soft_limit: boolean
  static_value: string | null
  display_order: number
  /** The entitlement this one stands in for (e.g. an addon's over its plan's), of the same feature. */
  parent_entitlement_id: string | null
  /** When the entitlement is in force; null: from always, until always. */
  start_date: Date | null
  end_date: Date | null
}

export async function countOfFeature(db: Db, scope: Scope, featureId: string): Promise<number> {
  const [{ n }] = await db<{ n: number }[]>`SELECT count(*)::int AS n FROM entitlements
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND feature_id = ${featureId} AND status = 'published'`
  return n
}
