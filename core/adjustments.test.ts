// The worked examples of issue 34 (part 2), by hand.
import { describe, expect, it } from 'vitest'
import { D } from './money.ts'
import { adjustmentKey, usageAdjustment, type SettledLine } from './adjustments.ts'

const tiered: SettledLine = {
  price: { billing_model: 'TIERED', amount: '0', tier_mode: 'SLAB', tiers: [{ up_to: 100, unit_amount: '1.00' }, { up_to: null, unit_amount: '0.50' }] },
  settledUsage: new D(100),
}

describe('usage adjustments', () => {
  it('100 units billed on tiers 0-100 at 1.00 and above at 0.50, then 20 late units: 10.00', () => {
    // billed: 100 × 1.00 = 100.00; now 120: 100.00 + 20 × 0.50 = 110.00; difference 10.00.
    const a = usageAdjustment(tiered, new D(120), 'USD')
    expect(a).toMatchObject({ kind: 'charge', deferred: false })
    expect([a.usageDelta.toFixed(), a.amount.toFixed(2), a.total.toFixed(2)]).toEqual(['20', '10.00', '10.00'])
  })

  it('a cancelled event of a paid invoice: a credit of its amount', () => {
    // 40 calls at 0.25 = 10.00 billed; one event of 4 calls cancelled: 36 × 0.25 = 9.00, a credit of 1.00.
    const a = usageAdjustment({ price: { billing_model: 'FLAT_FEE', amount: '0.25' }, settledUsage: new D(40) }, new D(36), 'USD')
    expect(a.kind).toBe('credit')
    expect([a.usageDelta.toFixed(), a.amount.toFixed(2)]).toEqual(['-4', '-1.00'])
  })

  it('a late event inside an allowance: nothing', () => {
    // 1,000 units included (soft limit), 500 billed (0.00), 50 late: 550 still inside, 0.00 both ways.
    const line: SettledLine = { price: { billing_model: 'FLAT_FEE', amount: '0.10' }, allowance: { usage_limit: 1000, is_soft_limit: true }, settledUsage: new D(500) }
    expect(usageAdjustment(line, new D(550), 'USD')).toMatchObject({ kind: 'none' })
    expect(usageAdjustment(line, new D(550), 'USD').amount.toFixed(2)).toBe('0.00')
  })

  it('a repeated run: nothing more once the adjustment settled the usage, and the same key', () => {
    expect(usageAdjustment({ ...tiered, settledUsage: new D(120) }, new D(120), 'USD').kind).toBe('none')
    expect(adjustmentKey('li_1', new D('120'))).toBe(adjustmentKey('li_1', new D('120.000')))
    expect(adjustmentKey('li_1', new D(121))).not.toBe(adjustmentKey('li_1', new D(120)))
  })

  it('tax at the original rate: 18% of 10.00 is 1.80, 11.80 in all; a credit gets its tax back', () => {
    const rate = { id: 'tax_1', tax_rate_type: 'percentage' as const, percentage_value: '18' }
    const charge = usageAdjustment({ ...tiered, taxRates: [rate] }, new D(120), 'USD')
    expect([charge.tax.toFixed(2), charge.total.toFixed(2)]).toEqual(['1.80', '11.80'])
    const credit = usageAdjustment({ price: { billing_model: 'FLAT_FEE', amount: '0.25' }, taxRates: [rate], settledUsage: new D(40) }, new D(36), 'USD')
    expect([credit.tax.toFixed(2), credit.total.toFixed(2)]).toEqual(['-0.18', '-1.18'])
  })

  it('below the minimum amount it is deferred, not lost', () => {
    // 1 late unit above 100: 0.50, under a 1.00 minimum; the settled usage stays 100, so 2 late units later give 1.00.
    expect(usageAdjustment(tiered, new D(101), 'USD', new D('1.00'))).toMatchObject({ kind: 'charge', deferred: true })
    const later = usageAdjustment(tiered, new D(102), 'USD', new D('1.00'))
    expect([later.deferred, later.amount.toFixed(2)]).toEqual([false, '1.00'])
  })
})
