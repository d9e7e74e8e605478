import { describe, expect, it } from 'vitest'
import { mergeEntitlements, type EntitlementSource, type FeatureType, type MergedEntitlement } from './entitlements.ts'

let n = 0
const src = (over: Partial<EntitlementSource>): EntitlementSource => ({
  entitlement_id: `ent_${++n}`,
  subscription_id: 'sub_1',
  entity_type: 'plan',
  entity_id: 'plan_1',
  entity_name: 'Pro',
  quantity: 1,
  is_enabled: true,
  usage_limit: null,
  usage_reset_period: null,
  is_soft_limit: false,
  static_value: null,
  ...over,
})

const metered = (limit: number | null, over: Partial<EntitlementSource> = {}) => src({ usage_limit: limit, usage_reset_period: 'MONTHLY', ...over })

describe('mergeEntitlements', () => {
  it.each<[string, FeatureType, EntitlementSource[], Partial<MergedEntitlement>]>([
    ['no source: nothing allowed', 'metered', [], { is_enabled: false, usage_limit: 0, is_soft_limit: false, usage_reset_period: null }],
    ['one plan limit', 'metered', [metered(1000)], { is_enabled: true, usage_limit: 1000, usage_reset_period: 'MONTHLY' }],
    ['plan and addon limits add', 'metered', [metered(1000), metered(500, { entity_type: 'addon' })], { usage_limit: 1500 }],
    ['an addon limit counts once per unit held', 'metered', [metered(1000), metered(500, { entity_type: 'addon', quantity: 3 })], { usage_limit: 2500 }],
    ['two subscriptions add', 'metered', [metered(10), metered(20, { subscription_id: 'sub_2' })], { usage_limit: 30 }],
    ['unlimited wins over any limit', 'metered', [metered(1000), metered(null), metered(5)], { usage_limit: null, is_enabled: true }],
    ['a disabled source adds nothing, not even unlimited', 'metered', [metered(100), metered(null, { is_enabled: false })], { usage_limit: 100 }],
    ['only disabled sources: off with limit 0', 'metered', [metered(100, { is_enabled: false })], { is_enabled: false, usage_limit: 0 }],
    ['soft when every source is soft', 'metered', [metered(1, { is_soft_limit: true }), metered(2, { is_soft_limit: true })], { is_soft_limit: true }],
    ['one hard limit keeps it hard', 'metered', [metered(1, { is_soft_limit: true }), metered(2)], { is_soft_limit: false }],
    ['a disabled hard source does not harden', 'metered', [metered(1, { is_soft_limit: true }), metered(2, { is_enabled: false })], { is_soft_limit: true }],
    ['the first enabled source sets the reset period', 'metered', [metered(1, { usage_reset_period: 'DAILY', is_enabled: false }), metered(1, { usage_reset_period: 'WEEKLY' }), metered(1, { usage_reset_period: 'MONTHLY' })], { usage_reset_period: 'WEEKLY' }],
    ['boolean: enabled if any source enables', 'boolean', [src({ is_enabled: false }), src({})], { is_enabled: true, usage_limit: null, is_soft_limit: false }],
    ['boolean: off when every source disables', 'boolean', [src({ is_enabled: false }), src({ is_enabled: false })], { is_enabled: false, usage_limit: null }],
    ['static: values listed in source order, each once', 'static', [src({ static_value: 'email' }), src({ static_value: 'phone' }), src({ static_value: 'email' })], { static_values: ['email', 'phone'] }],
    ['static: a disabled source lists nothing', 'static', [src({ static_value: 'email', is_enabled: false }), src({ static_value: 'phone' })], { static_values: ['phone'] }],
  ])('%s', (_name, type, sources, expected) => {
    expect(mergeEntitlements(type, sources)).toMatchObject(expected)
  })

  it('never reports static values or soft limits for a boolean feature', () => {
    expect(mergeEntitlements('boolean', [src({ is_soft_limit: true })])).toEqual({
      is_enabled: true,
      usage_limit: null,
      is_soft_limit: false,
      usage_reset_period: null,
      static_values: [],
    })
  })
})
