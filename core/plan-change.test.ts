// Flexprice's proration_details over the engine's rounded lines, by hand.
import { describe, expect, it } from 'vitest'
import { D } from './money.ts'
import { changeTypeOf, prorationSummary } from './plan-change.ts'

const april = { start: new Date('2024-04-01T00:00:00Z'), end: new Date('2024-05-01T00:00:00Z') }
const line = (description: string, amount: string) => ({ description, amount: new D(amount) })

describe('prorationSummary', () => {
  it('an upgrade on 21 April: credit 10.00, charge 30.00, net 20.00, 20 days used and 10 left', () => {
    const s = prorationSummary([line('Unused time on Pro', '-10.00'), line('Remaining time on Business', '30.00')], 'USD', april, new Date('2024-04-21T00:00:00Z'))
    expect([s.credit_amount, s.charge_amount, s.net_amount, s.days_used, s.days_remaining]).toEqual(['10.00', '30.00', '20.00', 20, 10])
    expect([s.credit_description, s.charge_description]).toEqual(['Unused time on Pro', 'Remaining time on Business'])
  })

  it('a downgrade sums rounded lines: −48.38 + 24.19 = −24.19; a mid-day change counts its day as left', () => {
    const jan = { start: new Date('2024-01-01T00:00:00Z'), end: new Date('2024-02-01T00:00:00Z') }
    const s = prorationSummary([line('Unused', '-48.38'), line('Remaining', '24.19')], 'USD', jan, new Date('2024-01-17T12:00:00Z'))
    expect([s.credit_amount, s.charge_amount, s.net_amount, s.days_used, s.days_remaining]).toEqual(['48.38', '24.19', '-24.19', 16, 15])
  })

  it('nothing prorated (a trial): zeros in the currency, JPY without decimals', () => {
    const s = prorationSummary([], 'JPY', april, april.start)
    expect([s.credit_amount, s.charge_amount, s.net_amount, s.days_used, s.days_remaining]).toEqual(['0', '0', '0', 0, 30])
  })
})

describe('changeTypeOf', () => {
  it('compares what the plans cost a period', () => {
    expect([changeTypeOf(new D('30'), new D('90')), changeTypeOf(new D('90'), new D('30')), changeTypeOf(new D('30'), new D('30.00'))]).toEqual(['upgrade', 'downgrade', 'lateral'])
  })
})
