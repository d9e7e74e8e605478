import { describe, expect, it } from 'vitest'
import { D, formatMoney } from '../money.ts'
import { billingPoints, duePoints, nextPoint, pointCharges, prorations, type Cycle, type CycleLine, type ProrationBehavior, type Settles, type Span } from './cycle.ts'

const d = (s: string) => new Date(s)
const iso = (x: Date) => x.toISOString().slice(0, 10)
const monthly = (over: Partial<Cycle> = {}): Cycle => ({
  start_date: d('2024-01-31T00:00:00Z'),
  end: null,
  trial_start: null,
  trial_end: null,
  billing_anchor: d('2024-01-31T00:00:00Z'),
  billing_period: 'MONTHLY',
  billing_period_count: 1,
  timezone: 'UTC',
  prorate: true,
  ...over,
})
const take = (c: Cycle, n: number) => {
  const out = []
  for (const p of billingPoints(c)) {
    out.push(p)
    if (out.length === n) break
  }
  return out
}
const line = (over: Partial<CycleLine>): CycleLine => ({
  id: 'l',
  price_type: 'FIXED',
  invoice_cadence: 'ADVANCE',
  onetime: false,
  start_date: d('2024-01-31T00:00:00Z'),
  end_date: null,
  quantity: new D(1),
  price: { billing_model: 'FLAT_FEE', amount: '31.00' },
  ...over,
})

describe('billing points', () => {
  it('anchors on the 31st: periods end on the last day of short months, computed from the anchor', () => {
    const points = take(monthly(), 5)
    expect(points.map((p) => [p.sequence, p.reason, iso(p.at), p.arrear && iso(p.arrear.start), p.advance && iso(p.advance.end)])).toEqual([
      [1, 'SUBSCRIPTION_CREATE', '2024-01-31', null, '2024-02-29'],
      [2, 'SUBSCRIPTION_CYCLE', '2024-02-29', '2024-01-31', '2024-03-31'],
      [3, 'SUBSCRIPTION_CYCLE', '2024-03-31', '2024-02-29', '2024-04-30'],
      [4, 'SUBSCRIPTION_CYCLE', '2024-04-30', '2024-03-31', '2024-05-31'],
      [5, 'SUBSCRIPTION_CYCLE', '2024-05-31', '2024-04-30', '2024-06-30'],
    ])
  })

  it('catches up every period due, in order, after the last one billed', () => {
    const due = duePoints(monthly(), d('2024-04-30T00:00:00Z'), 2)
    expect(due.map((p) => [p.sequence, iso(p.at)])).toEqual([
      [3, '2024-03-31'],
      [4, '2024-04-30'],
    ])
    expect(nextPoint(monthly(), d('2024-04-30T00:00:00Z'))!.sequence).toBe(5)
  })

  it('a trial gets a zero point, then charges start at its end (rule 6)', () => {
    const c = monthly({ start_date: d('2024-03-01T00:00:00Z'), trial_start: d('2024-03-01T00:00:00Z'), trial_end: d('2024-03-15T00:00:00Z'), billing_anchor: d('2024-03-15T00:00:00Z') })
    const [trial, start, cycle] = take(c, 3)
    expect([trial.reason, iso(trial.period.start), iso(trial.period.end), trial.trial]).toEqual(['SUBSCRIPTION_TRIAL_START', '2024-03-01', '2024-03-15', true])
    expect([start.reason, iso(start.at), iso(start.advance!.end)]).toEqual(['SUBSCRIPTION_TRIAL_END', '2024-03-15', '2024-04-15'])
    expect([cycle.reason, iso(cycle.arrear!.start), iso(cycle.arrear!.end)]).toEqual(['SUBSCRIPTION_CYCLE', '2024-03-15', '2024-04-15'])
    const charges = pointCharges(trial, [line({ start_date: d('2024-03-01T00:00:00Z') })], { prorate: true })
    expect(charges.map((x) => [x.kind, formatMoney(x.amount!, 'USD')])).toEqual([['trial', '0.00']])
  })

  it('a calendar cycle starting mid-month bills the first part of the month in advance', () => {
    const c = monthly({ start_date: d('2024-04-21T00:00:00Z'), billing_anchor: d('2024-04-01T00:00:00Z') })
    const [first] = take(c, 1)
    const [charge] = pointCharges(first, [line({ start_date: d('2024-04-21T00:00:00Z'), price: { billing_model: 'FLAT_FEE', amount: '30.00' } })], { prorate: true })
    // 10 of April's 30 days.
    expect([iso(first.advance!.start), iso(first.advance!.end), formatMoney(charge.amount!, 'USD')]).toEqual(['2024-04-21', '2024-05-01', '10.00'])
  })

  it('a cancellation mid-period is billed at its end: arrear for the part used, the unused advance credited', () => {
    const end = d('2024-03-17T12:00:00Z')
    const c = monthly({ start_date: d('2024-02-29T00:00:00Z'), billing_anchor: d('2024-01-31T00:00:00Z'), end })
    const points = [...billingPoints(c)]
    expect(points.map((p) => [p.reason, iso(p.at)])).toEqual([
      ['SUBSCRIPTION_CREATE', '2024-02-29'],
      ['PRORATION', '2024-03-17'],
    ])
    const lines = [
      line({ id: 'pro', start_date: d('2024-02-29T00:00:00Z'), end_date: end, price: { billing_model: 'FLAT_FEE', amount: '99.99' } }),
      line({ id: 'seats', invoice_cadence: 'ARREAR', start_date: d('2024-02-29T00:00:00Z'), end_date: end, quantity: new D(2), price: { billing_model: 'FLAT_FEE', amount: '31.00' } }),
      line({ id: 'api', price_type: 'USAGE', invoice_cadence: 'ARREAR', start_date: d('2024-02-29T00:00:00Z'), end_date: end }),
    ]
    const charges = pointCharges(points[1], lines, { prorate: true })
    // Period 29 Feb – 31 Mar (31 days). Seats: 2 × 31.00 × 17 used days / 31. Pro: 99.99 × 14 unused days / 31.
    expect(charges.map((x) => [x.line.id, x.kind, x.amount && formatMoney(x.amount, 'USD'), iso(x.period.start), iso(x.period.end)])).toEqual([
      ['seats', 'arrear', '34.00', '2024-02-29', '2024-03-17'],
      ['api', 'usage', undefined, '2024-02-29', '2024-03-17'],
      ['pro', 'proration_credit', '-45.16', '2024-03-17', '2024-03-31'],
    ])
    expect(pointCharges(points[1], lines, { prorate: false }).map((x) => x.kind)).toEqual(['arrear', 'usage'])
  })

  it('a quantity change mid-period credits the old quantity and charges the new one at the next point', () => {
    const at = d('2024-04-11T00:00:00Z')
    const c = monthly({ start_date: d('2024-03-31T00:00:00Z'), billing_anchor: d('2024-03-31T00:00:00Z') })
    const [, cycle] = take(c, 2)
    const price = { billing_model: 'FLAT_FEE' as const, amount: '30.00' }
    const lines = [line({ id: 'old', start_date: d('2024-03-31T00:00:00Z'), end_date: at, quantity: new D(1), price }), line({ id: 'new', start_date: at, quantity: new D(3), price })]
    const charges = pointCharges(cycle, lines, { prorate: true })
    // April: 30 days, 19 left from the 11th. −30 × 19/30 = −19.00; 90 × 19/30 = 57.00; then May in advance at 3 seats.
    expect(charges.map((x) => [x.line.id, x.kind, formatMoney(x.amount!, 'USD')])).toEqual([
      ['old', 'proration_credit', '-19.00'],
      ['new', 'proration_charge', '57.00'],
      ['new', 'advance', '90.00'],
    ])
  })

  it('usage after an auto-invoice threshold cut is measured from the cut; one-time charges come once', () => {
    const c = monthly()
    const [create, cycle, next] = take(c, 3)
    const usage = line({ id: 'u', price_type: 'USAGE', invoice_cadence: 'ARREAR' })
    const setup = line({ id: 'setup', onetime: true, price: { billing_model: 'FLAT_FEE', amount: '50.00' } })
    expect(pointCharges(create, [setup], { prorate: false }).map((x) => [x.kind, formatMoney(x.amount!, 'USD')])).toEqual([['onetime', '50.00']])
    expect(pointCharges(next, [setup], { prorate: false })).toEqual([])
    const [u] = pointCharges(cycle, [usage], { prorate: false, usageFrom: d('2024-02-10T00:00:00Z') })
    expect([iso(u.period.start), iso(u.period.end)]).toEqual(['2024-02-10', '2024-02-29'])
  })
})

describe('prorations: each start and end settled as its modification said', () => {
  // April 2024 (30 days), 30.00 a seat in advance; changes on the 11th (20 days left) and the 21st (10 left).
  const april: Span = { start: d('2024-04-01T00:00:00Z'), end: d('2024-05-01T00:00:00Z'), full: { start: d('2024-04-01T00:00:00Z'), end: d('2024-05-01T00:00:00Z') } }
  const [apr11, apr21] = [d('2024-04-11T00:00:00Z'), d('2024-04-21T00:00:00Z')]
  const price = { billing_model: 'FLAT_FEE' as const, amount: '30.00' }
  const seat = (over: Partial<CycleLine>) => line({ start_date: april.start, price, ...over })
  const byCycle: Settles = (b) => b === 'create_prorations'
  const atOnce = (t: Date): Settles => (b, x) => b === 'always_invoice' && x.getTime() === t.getTime()
  const show = (l: CycleLine, settles: Settles, fallback: ProrationBehavior = 'none') =>
    prorations(l, april, settles, fallback, 'Seat').map((c) => [c.kind, iso(c.period.start), iso(c.period.end), formatMoney(c.amount!, 'USD')])

  it.each<[string, CycleLine, Settles, ProrationBehavior, string[][]]>([
    // 1 seat from 1 April, ended on the 11th at once: the cycle leaves it; the update invoice credits −30 × 20/30.
    ['an end invoiced at once, seen by the cycle', seat({ end_date: apr11, end_proration: 'always_invoice' }), byCycle, 'create_prorations', []],
    ['an end invoiced at once, on its invoice', seat({ end_date: apr11, end_proration: 'always_invoice' }), atOnce(apr11), 'create_prorations', [['proration_credit', '2024-04-11', '2024-05-01', '-20.00']]],
    // 3 seats from the 11th at once: 90 × 20/30 = 60.00 on the update invoice, nothing at the cycle.
    ['a start invoiced at once', seat({ start_date: apr11, quantity: new D(3), start_proration: 'always_invoice' }), atOnce(apr11), 'none', [['proration_charge', '2024-04-11', '2024-05-01', '60.00']]],
    ['a start invoiced at once, seen by the cycle', seat({ start_date: apr11, quantity: new D(3), start_proration: 'always_invoice' }), byCycle, 'create_prorations', []],
    // Started on the 11th for the cycle, ended on the 21st at once: the cycle charges the whole rest (60.00),
    // the update invoice of the 21st credits 90 × 10/30 = −30.00.
    ['a cycle start and an end at once: the charge', seat({ start_date: apr11, end_date: apr21, quantity: new D(3), start_proration: 'create_prorations', end_proration: 'always_invoice' }), byCycle, 'none', [['proration_charge', '2024-04-11', '2024-05-01', '60.00']]],
    ['a cycle start and an end at once: the credit', seat({ start_date: apr11, end_date: apr21, quantity: new D(3), start_proration: 'create_prorations', end_proration: 'always_invoice' }), atOnce(apr21), 'none', [['proration_credit', '2024-04-21', '2024-05-01', '-30.00']]],
    // Both left to the cycle: one charge for the ten days between, 60.00 − 30.00.
    ['start and end by the cycle', seat({ start_date: apr11, end_date: apr21, quantity: new D(3), start_proration: 'create_prorations', end_proration: 'create_prorations' }), byCycle, 'none', [['proration_charge', '2024-04-11', '2024-04-21', '30.00']]],
    // Started with none, so never paid: its end credits nothing, whatever the end says.
    ['an unpaid start is never credited', seat({ start_date: apr11, end_date: apr21, quantity: new D(3), start_proration: 'none', end_proration: 'create_prorations' }), byCycle, 'create_prorations', []],
    // Nothing set on the line: the subscription's behavior (the fallback) decides.
    ['the subscription prorates', seat({ end_date: apr21 }), byCycle, 'create_prorations', [['proration_credit', '2024-04-21', '2024-05-01', '-10.00']]],
    ['the subscription does not', seat({ end_date: apr21 }), byCycle, 'none', []],
  ])('%s', (_name, l, settles, fallback, expected) => expect(show(l, settles, fallback)).toEqual(expected))
})
