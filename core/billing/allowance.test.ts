import { describe, expect, it } from 'vitest'
import { D } from '../money.ts'
import { allowanceWindows, applyAllowance, applyAllowancePerWindow, type Allowance } from './allowance.ts'

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

describe('allowances that reset inside the billing period', () => {
  const d = (s: string) => new Date(s)
  const march = { start: d('2024-03-01T00:00:00Z'), end: d('2024-04-01T00:00:00Z') }
  const monthly = { period: 'MONTHLY' as const, count: 1 }

  it('a DAILY reset on a monthly plan: one window per calendar day, 31 in March', () => {
    const days = allowanceWindows(march, 'DAILY', monthly)
    expect(days).toHaveLength(31)
    expect(days[0]).toEqual({ start: d('2024-03-01T00:00:00Z'), end: d('2024-03-02T00:00:00Z') })
    expect(days[30]).toEqual({ start: d('2024-03-31T00:00:00Z'), end: d('2024-04-01T00:00:00Z') })
  })

  it('days in the customer time zone, the first and last cut to the usage window', () => {
    // 10:00 UTC on March 5 to 12:00 UTC on March 7; Tokyo days start at 15:00 UTC.
    const days = allowanceWindows({ start: d('2024-03-05T10:00:00Z'), end: d('2024-03-07T12:00:00Z') }, 'DAILY', monthly, 'Asia/Tokyo')
    expect(days.map((w) => [w.start.toISOString(), w.end.toISOString()])).toEqual([
      ['2024-03-05T10:00:00.000Z', '2024-03-05T15:00:00.000Z'],
      ['2024-03-05T15:00:00.000Z', '2024-03-06T15:00:00.000Z'],
      ['2024-03-06T15:00:00.000Z', '2024-03-07T12:00:00.000Z'],
    ])
  })

  it('a reset as long as the billing period or longer (or NEVER): the whole window, once', () => {
    for (const reset of ['MONTHLY', 'ANNUAL', 'NEVER', null]) expect(allowanceWindows(march, reset, monthly)).toEqual([march])
    expect(allowanceWindows(march, 'MONTHLY', { period: 'QUARTERLY', count: 1 })).toEqual([march])
    expect(allowanceWindows({ start: d('2024-01-01T00:00:00Z'), end: d('2024-04-01T00:00:00Z') }, 'MONTHLY', { period: 'MONTHLY', count: 3 })).toHaveLength(3)
  })

  it('100 a day, soft: 130, 90 and 250 bill 30 + 0 + 150 = 180, not 470 − 100 = 370', () => {
    const soft: Allowance = { usage_limit: 100, is_soft_limit: true }
    const r = applyAllowancePerWindow([new D(130), new D(90), new D(250)], soft)
    expect([r.included.toString(), r.billable.toString(), r.unbilled_over_limit.toString()]).toEqual(['290', '180', '0'])
    const hard = applyAllowancePerWindow([new D(130), new D(90), new D(250)], { usage_limit: 100 })
    expect([hard.included.toString(), hard.billable.toString(), hard.unbilled_over_limit.toString()]).toEqual(['290', '0', '180'])
  })
})
