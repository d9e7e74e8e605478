import { describe, expect, it } from 'vitest'
import { D } from '../money.ts'
import { margins, roundCosts, usageCost } from './margin.ts'

const flat = (amount: string) => ({ billing_model: 'FLAT_FEE' as const, amount })

describe('usageCost', () => {
  it('is usage × the unit cost, unrounded', () => {
    // 1,234,567 tokens at 0.000003 = 3.703701.
    expect(usageCost(flat('0.000003'), new D(1234567)).toFixed()).toBe('3.703701')
    expect(usageCost(flat('0.5'), new D(0)).toFixed()).toBe('0')
  })

  it('applies a tiered cost and keeps the sign of negative usage', () => {
    // 1,500 at 0.002 for the first 1,000 and 0.001 after: 2.00 + 0.50 = 2.50.
    const tiered = { billing_model: 'TIERED' as const, amount: '0', tier_mode: 'SLAB' as const, tiers: [{ up_to: 1000, unit_amount: '0.002' }, { up_to: null, unit_amount: '0.001' }] }
    expect(usageCost(tiered, new D(1500)).toFixed()).toBe('2.5')
    expect(usageCost(flat('0.25'), new D(-4)).toFixed()).toBe('-1')
  })
})

describe('roundCosts', () => {
  it('rounds each cost down or up so that they add up to the rounded exact total', () => {
    // 0.004 × 3 = 0.012 → 0.01: one of the three gets the cent (the first of equal remainders), not 0 + 0 + 0.
    expect(roundCosts([new D('0.004'), new D('0.004'), new D('0.004')], 'USD').map((c) => c.toFixed())).toEqual(['0.01', '0', '0'])
    // 1.005 + 2.005 = 3.01: 1.00 + 2.01 or 1.01 + 2.00, never 1.01 + 2.01.
    const two = roundCosts([new D('1.005'), new D('2.005')], 'USD')
    expect(two[0].plus(two[1]).toFixed()).toBe('3.01')
    // A currency without minor units rounds to whole units: 10.4 + 10.4 = 20.8 → 21.
    expect(roundCosts([new D('10.4'), new D('10.4')], 'JPY').map((c) => c.toFixed())).toEqual(['11', '10'])
  })

  it('rounds each on its own, half up, when one is negative', () => {
    expect(roundCosts([new D('1.005'), new D('-0.004')], 'USD').map((c) => c.toFixed())).toEqual(['1.01', '0'])
  })
})

describe('margins', () => {
  it('computes margin, its share of revenue and the return on cost', () => {
    // Revenue 32.80, cost 12.30: margin 20.50; 20.50 ÷ 32.80 = 62.5 %; 20.50 ÷ 12.30 = 1.666… → 1.6667, 166.67 %.
    const m = margins(new D('32.80'), new D('12.30'))
    expect([m.margin.toFixed(), m.margin_percent?.toFixed(), m.roi?.toFixed(), m.roi_percent?.toFixed()]).toEqual(['20.5', '62.5', '1.6667', '166.67'])
  })

  it('has no percentages where they would divide by zero, and a negative margin when cost exceeds revenue', () => {
    const none = margins(new D(0), new D('4.20'))
    expect([none.margin.toFixed(), none.margin_percent, none.roi?.toFixed()]).toEqual(['-4.2', null, '-1'])
    const free = margins(new D('3'), new D(0))
    expect([free.margin_percent?.toFixed(), free.roi, free.roi_percent]).toEqual(['100', null, null])
  })
})
