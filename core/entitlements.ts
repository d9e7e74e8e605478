// What a customer may use of one feature when several subscriptions and addons grant it. Pure: the
// caller gathers the sources (plans before addons, oldest subscription first) and this merges them.
//
// The merge, feature by feature:
// - is_enabled: true when any source enables the feature.
// - usage_limit (metered): the sum over enabled sources of limit × quantity; one unlimited (null) source
//   makes the whole unlimited; with no enabled source it is 0. Not metered: null.
// - is_soft_limit: true only when every enabled metered source is soft; one hard limit keeps it hard.
// - usage_reset_period: the first enabled source's (the plan's, ahead of addons).
// - static_values: the enabled sources' static values, in source order, each once.
// A disabled source is listed among the sources but adds nothing. Also here: which entitlement fields
// each feature type takes (entitlementTerms).
import { validationError } from './errors.ts'

export type FeatureType = 'metered' | 'boolean' | 'static'

export interface EntitlementSource {
  entitlement_id: string
  subscription_id: string
  entity_type: 'plan' | 'addon'
  entity_id: string
  entity_name: string
  /** How many of the plan or addon the subscription holds; a limit counts once per unit. */
  quantity: number
  is_enabled: boolean
  /** Per unit; null is unlimited. */
  usage_limit: number | null
  usage_reset_period: string | null
  is_soft_limit: boolean
  static_value: string | null
}

export interface MergedEntitlement {
  is_enabled: boolean
  usage_limit: number | null
  is_soft_limit: boolean
  usage_reset_period: string | null
  static_values: string[]
}

export type ResetPeriod = 'DAILY' | 'WEEKLY' | 'MONTHLY' | 'QUARTERLY' | 'HALF_YEARLY' | 'ANNUAL' | 'NEVER'

/** What an entitlement request may set; which fields apply depends on the feature's type. */
export interface EntitlementTermsInput {
  /** Flexprice's clients send the feature's type along; when given it must be the feature's. */
  feature_type?: FeatureType
  is_enabled?: boolean
  usage_limit?: number | null
  usage_reset_period?: ResetPeriod | null
  is_soft_limit?: boolean
  static_value?: string | null
}

export interface EntitlementTerms {
  feature_type: FeatureType
  is_enabled: boolean
  usage_limit: number | null
  usage_reset_period: ResetPeriod | null
  is_soft_limit: boolean
  static_value: string | null
}

/**
 * The fields the feature's type uses: boolean → is_enabled; metered → usage_limit (null: unlimited) with a
 * required usage_reset_period and is_soft_limit; static → a required static_value. A field another type uses
 * is refused, not silently dropped.
 */
export function entitlementTerms(type: FeatureType, input: EntitlementTermsInput): EntitlementTerms {
  const refuse = (fields: (keyof EntitlementTermsInput)[]) => {
    for (const f of fields) if (input[f] != null && input[f] !== false) throw validationError(f, `is not used by ${type} features`)
  }
  if (input.feature_type && input.feature_type !== type) throw validationError('feature_type', `is ${input.feature_type}, but the feature is ${type}`)
  const base = { feature_type: type, is_enabled: input.is_enabled ?? true, usage_limit: null, usage_reset_period: null, is_soft_limit: false, static_value: null }
  if (type === 'boolean') {
    refuse(['usage_limit', 'usage_reset_period', 'is_soft_limit', 'static_value'])
    return base
  }
  if (type === 'static') {
    refuse(['usage_limit', 'usage_reset_period', 'is_soft_limit'])
    if (!input.static_value) throw validationError('static_value', 'is required for static features')
    return { ...base, static_value: input.static_value }
  }
  refuse(['static_value'])
  if (!input.usage_reset_period) throw validationError('usage_reset_period', 'is required for metered features')
  return { ...base, usage_limit: input.usage_limit ?? null, usage_reset_period: input.usage_reset_period, is_soft_limit: input.is_soft_limit ?? false }
}

export function mergeEntitlements(featureType: FeatureType, sources: readonly EntitlementSource[]): MergedEntitlement {
  const enabled = sources.filter((s) => s.is_enabled)
  const metered = featureType === 'metered'
  let usageLimit: number | null = null
  if (metered) {
    usageLimit = enabled.some((s) => s.usage_limit === null) ? null : enabled.reduce((sum, s) => sum + s.usage_limit! * s.quantity, 0)
  }
  const statics = enabled.map((s) => s.static_value).filter((v): v is string => v !== null && v !== '')
  return {
    is_enabled: enabled.length > 0,
    usage_limit: usageLimit,
    is_soft_limit: metered && enabled.length > 0 && enabled.every((s) => s.is_soft_limit),
    usage_reset_period: metered ? (enabled[0]?.usage_reset_period ?? null) : null,
    static_values: [...new Set(statics)],
  }
}
