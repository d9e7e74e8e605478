import { describe, expect, it } from 'vitest'
import { D } from '../money.ts'
import { checkEntitlement, type CheckInput } from './spend.ts'

const metered = (usage_limit: number | null, is_soft_limit = false) => ({ feature_type: 'metered' as const, is_enabled: true, usage_limit, is_soft_limit })
const input = (over: Partial<CheckInput>): CheckInput => ({
  entitlement: metered(1000),
  quantity: new D(1),
  stored: new D(0),
  in_flight: new D(0),
  reserved: new D(0),
  spending: null,
  ...over,
})
const verdict = (over: Partial<CheckInput>) => {
  const v = checkEntitlement(input(over))
  return [v.allowed, v.remaining?.toFixed() ?? null, v.reason]
}

describe('checkEntitlement: hard limits', () => {
  it('counts stored, in-flight and reserved usage: 600 + 150 + 200 = 950 used of 1,000', () => {
    const parts = { stored: new D(600), in_flight: new D(150), reserved: new D(200) }
    expect(verdict({ ...parts, quantity: new D(50) })).toEqual([true, '50', null])
    expect(verdict({ ...parts, quantity: new D(51) })).toEqual([false, '50', 'usage_limit_exceeded'])
  })
  it('lets a soft limit pass, remaining floored at 0', () => {
    expect(verdict({ entitlement: metered(10, true), stored: new D(12) })).toEqual([true, '0', null])
  })
  it('never limits an unlimited feature', () => {
    expect(verdict({ entitlement: metered(null), stored: new D('1e12') })).toEqual([true, null, null])
  })
  it('refuses a feature not granted or disabled', () => {
    expect(verdict({ entitlement: null })).toEqual([false, null, 'feature_not_entitled'])
    expect(verdict({ entitlement: { ...metered(10), is_enabled: false } })).toEqual([false, '10', 'feature_disabled'])
  })
  it('allows a boolean feature whatever the quantity', () => {
    expect(verdict({ entitlement: { feature_type: 'boolean', is_enabled: true, usage_limit: null, is_soft_limit: false }, quantity: new D(5) })).toEqual([true, null, null])
  })
})

describe('checkEntitlement: spending limit', () => {
  it('denies once accrued charges plus holds reach the limit: 40 + 9.99 < 50 allowed, 40 + 10 = 50 refused', () => {
    expect(verdict({ spending: { limit: new D(50), accrued: new D(40), held: new D('9.99') } })).toEqual([true, '1000', null])
    expect(verdict({ spending: { limit: new D(50), accrued: new D(40), held: new D(10) } })).toEqual([false, '1000', 'spending_limit_reached'])
  })
  it('reports the usage limit first when both refuse', () => {
    expect(verdict({ stored: new D(1000), spending: { limit: new D(1), accrued: new D(2), held: new D(0) } })[2]).toBe('usage_limit_exceeded')
  })
})
