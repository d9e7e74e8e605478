import { describe, expect, it } from 'vitest'
import { D } from '../money.ts'
import { applyAllowance, type Allowance } from './allowance.ts'

const SOFT: Allowance = { usage_limit: 1000, is_soft_limit: true, is_enabled: true }
const HARD: Allowance = { usage_limit: 1000, is_soft_limit: false, is_enabled: true }

describe('applyAllowance: only usage above usage_limit is billable', () => {
  // Columns: usage, allowance -> included, billable, unbilled over a hard limit.
  it.each([
    ['no usage, soft', '0', SOFT, '0', '0', '0'],
    ['under the soft limit: all included', '999.5', SOFT, '999.5', '0', '0'],
    ['exactly at the soft limit', '1000', SOFT, '1000', '0', '0'],
    ['soft limit: 1500.25 − 1000 = 500.25 billed', '1500.25', SOFT, '1000', '500.25', '0'],
    ['hard limit: the 500 units past it are reported, not billed', '1500', HARD, '1000', '0', '500'],
    ['hard limit, under it', '10', HARD, '10', '0', '0'],
    ['limit 0, soft: everything is overage', '42', { usage_limit: 0, is_soft_limit: true }, '0', '42', '0'],
    ['usage_limit null: no allowance, all billed', '1500', { usage_limit: null, is_soft_limit: true }, '0', '1500', '0'],
    ['disabled entitlement: no allowance, all billed', '1500', { ...SOFT, is_enabled: false }, '0', '1500', '0'],
    ['no entitlement: all billed', '7', null, '0', '7', '0'],
  ] as const)('%s', (_, usage, allowance, included, billable, over) => {
    const r = applyAllowance(new D(usage), allowance)
    expect([r.included.toFixed(), r.billable.toFixed(), r.unbilled_over_limit.toFixed()]).toEqual([included, billable, over])
  })

  it.each([[-1], [1.5], [Number.NaN]])('rejects usage_limit %s', (limit) =>
    expect(() => applyAllowance(new D(1), { usage_limit: limit, is_soft_limit: true })).toThrow(/usage_limit/),
  )
  it('rejects negative usage', () => expect(() => applyAllowance(new D(-1), SOFT)).toThrow(RangeError))
})
