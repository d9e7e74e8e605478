import { describe, expect, it } from 'vitest'
import { D, formatMoney } from '../money.ts'
import { billingPoints, pointCharges, type Cycle, type CycleLine } from './cycle.ts'
import { withinPrice } from './price-window.ts'

const d = (s: string) => new Date(s)
// March 2024 has 31 days; a 31.00 month is 1.00 a day.
const cycle: Cycle = { start_date: d('2024-03-01T00:00:00Z'), end: null, trial_start: null, trial_end: null, billing_anchor: d('2024-03-01T00:00:00Z'), billing_period: 'MONTHLY', billing_period_count: 1, timezone: 'UTC', prorate: false }
const [, april] = (() => {
  const out = []
  for (const p of billingPoints(cycle)) if (out.push(p) === 2) break
  return out
})()
const line = (over: Partial<CycleLine>): CycleLine => ({
  id: 'l',
  price_type: 'FIXED',
  invoice_cadence: 'ARREAR',
  onetime: false,
  start_date: d('2024-03-01T00:00:00Z'),
  end_date: null,
  quantity: new D(1),
  price: { billing_model: 'FLAT_FEE', amount: '31.00' },
  ...over,
})
const none = { start_date: null, end_date: null }
const charges = (l: CycleLine | null) => (l ? pointCharges(april, [l], { prorate: false }) : []).map((c) => [c.kind, c.period.start.toISOString().slice(0, 10), c.period.end.toISOString().slice(0, 10), c.amount && formatMoney(c.amount, 'USD')])

describe('withinPrice', () => {
  it('leaves a line alone when its price has no dates or none inside the line', () => {
    const l = line({})
    expect(withinPrice(l, none)).toEqual(l)
    expect(withinPrice(l, { start_date: d('2024-01-01T00:00:00Z'), end_date: null })).toEqual(l)
    expect(withinPrice(l, undefined)).toBe(l)
  })

  it('an arrear price that ended on March 11 bills 10 of 31 days: 10.00', () => {
    expect(charges(withinPrice(line({}), { start_date: null, end_date: d('2024-03-11T00:00:00Z') }))).toEqual([['arrear', '2024-03-01', '2024-03-11', '10.00']])
  })

  it('an advance price in force from March 21 bills its 11 March days (11.00) though the subscription does not prorate, then April whole', () => {
    const l = withinPrice(line({ invoice_cadence: 'ADVANCE' }), { start_date: d('2024-03-21T00:00:00Z'), end_date: null })
    expect(l).toMatchObject({ start_proration: 'create_prorations' })
    expect(charges(l)).toEqual([
      ['proration_charge', '2024-03-21', '2024-04-01', '11.00'],
      ['advance', '2024-04-01', '2024-05-01', '31.00'],
    ])
  })

  it('an advance price ending on March 26, billed whole in advance, gives back its 6 unused days: −6.00', () => {
    const l = withinPrice(line({ invoice_cadence: 'ADVANCE' }), { start_date: null, end_date: d('2024-03-26T00:00:00Z') })
    expect(charges(l)).toEqual([['proration_credit', '2024-03-26', '2024-04-01', '-6.00']])
  })

  it('measures usage only while the price is in force', () => {
    const l = withinPrice(line({ price_type: 'USAGE', quantity: new D(0) }), { start_date: d('2024-03-15T00:00:00Z'), end_date: d('2024-03-25T00:00:00Z') })
    expect(charges(l)).toEqual([['usage', '2024-03-15', '2024-03-25', undefined]])
  })

  it('drops a line its price is never in force for', () => {
    expect(withinPrice(line({ end_date: d('2024-03-10T00:00:00Z') }), { start_date: d('2024-03-10T00:00:00Z'), end_date: null })).toBeNull()
  })
})
