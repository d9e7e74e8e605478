import { describe, expect, it } from 'vitest'
import { D, roundMoney, sumMoney, type Decimal } from './money.ts'
import { prorate, prorationCharge, prorationCredit, type ProrateInput } from './proration.ts'

const expectDec = (actual: Decimal, expected: string) => expect(actual.toFixed()).toBe(new D(expected).toFixed())
const t = (iso: string) => new Date(iso)

const APRIL = { periodStart: t('2024-04-01T00:00:00Z'), periodEnd: t('2024-05-01T00:00:00Z') } // 30 days
const JANUARY = { periodStart: t('2024-01-01T00:00:00Z'), periodEnd: t('2024-02-01T00:00:00Z') } // 31 days
const FEBRUARY = { periodStart: t('2024-02-01T00:00:00Z'), periodEnd: t('2024-03-01T00:00:00Z') } // 29 days, leap year

describe('prorate by day (the default): whole UTC days / days in the period', () => {
  it.each([
    ['10 of 30 days', APRIL, '30.00', '2024-04-21T00:00:00Z', '2024-05-01T00:00:00Z', '10.00'],
    ['15 of 31 days', JANUARY, '99.99', '2024-01-17T00:00:00Z', '2024-02-01T00:00:00Z', '48.38225806451612903225806451612903225806'],
    ['the day of a mid-day change counts as remaining', JANUARY, '99.99', '2024-01-17T15:30:00Z', '2024-02-01T00:00:00Z', '48.38225806451612903225806451612903225806'],
    ['14 of 29 days in a leap February', FEBRUARY, '29.00', '2024-02-16T00:00:00Z', '2024-03-01T00:00:00Z', '14.00'],
    ['a middle stretch, 10 of 31 days', JANUARY, '31.00', '2024-01-10T00:00:00Z', '2024-01-20T00:00:00Z', '10.00'],
    ['from before the period is clamped to its start', APRIL, '30.00', '2024-03-15T00:00:00Z', '2024-04-11T00:00:00Z', '10.00'],
    ['to after the period is clamped to its end', APRIL, '30.00', '2024-04-21T00:00:00Z', '2024-06-01T00:00:00Z', '10.00'],
    ['the whole period', APRIL, '30.00', '2024-04-01T00:00:00Z', '2024-05-01T00:00:00Z', '30.00'],
    ['from == to', APRIL, '30.00', '2024-04-21T00:00:00Z', '2024-04-21T00:00:00Z', '0'],
    ['from after to', APRIL, '30.00', '2024-04-25T00:00:00Z', '2024-04-21T00:00:00Z', '0'],
    ['entirely after the period', APRIL, '30.00', '2024-05-02T00:00:00Z', '2024-05-09T00:00:00Z', '0'],
    ['within a single day', APRIL, '30.00', '2024-04-21T01:00:00Z', '2024-04-21T23:00:00Z', '0'],
  ])('%s', (_, period, amount, from, to, expected) => expectDec(prorate({ amount: new D(amount), ...period, from: t(from), to: t(to) }).amount, expected))

  it('returns the factor unrounded', () => {
    const r = prorate({ amount: new D('99.99'), ...JANUARY, from: t('2024-01-17T00:00:00Z'), to: JANUARY.periodEnd, mode: 'day' })
    expectDec(r.factor, '0.4838709677419354838709677419354838709677') // 15/31
    expectDec(roundMoney(r.amount, 'USD'), '48.38')
  })

  it('uses precomputed day counts for another time zone', () => {
    // The caller counted 15 of 31 local days; from/to are not used for counting then.
    const r = prorate({ amount: new D('99.99'), ...JANUARY, from: JANUARY.periodStart, to: JANUARY.periodEnd, days: { used: 15, total: 31 } })
    expectDec(r.amount, '48.38225806451612903225806451612903225806')
  })
})

describe('prorate by second: whole seconds / seconds in the period', () => {
  const HOUR = { periodStart: t('2024-01-01T00:00:00Z'), periodEnd: t('2024-01-01T01:00:00Z') } // 3600 s
  it.each([
    ['900 of 3600 s', HOUR, '12.00', '2024-01-01T00:45:00Z', '2024-01-01T01:00:00Z', '3.00'],
    ['milliseconds are truncated to the second', HOUR, '12.00', '2024-01-01T00:45:00.999Z', '2024-01-01T01:00:00Z', '3.00'],
    ['clamped to the period', HOUR, '12.00', '2023-12-31T00:00:00Z', '2024-01-01T00:15:00Z', '3.00'],
    ['from after to', HOUR, '12.00', '2024-01-01T00:50:00Z', '2024-01-01T00:10:00Z', '0'],
    // 14.5 of 31 days: 1252800 / 2678400 s; 99.99 × 14.5 / 31 = 46.7695161…
    ['half a day counts', JANUARY, '99.99', '2024-01-17T12:00:00Z', '2024-02-01T00:00:00Z', '46.76951612903225806451612903225806451613'],
  ])('%s', (_, period, amount, from, to, expected) => expectDec(prorate({ amount: new D(amount), ...period, from: t(from), to: t(to), mode: 'second' }).amount, expected))

  it('returns the factor', () => {
    const r = prorate({ amount: new D(12), periodStart: t('2024-01-01T00:00:00Z'), periodEnd: t('2024-01-01T01:00:00Z'), from: t('2024-01-01T00:45:00Z'), to: t('2024-01-01T01:00:00Z'), mode: 'second' })
    expectDec(r.factor, '0.25')
  })
})

describe('prorate rejects what it cannot divide', () => {
  const base: ProrateInput = { amount: new D(30), ...APRIL, from: APRIL.periodStart, to: APRIL.periodEnd }
  it.each([
    ['an empty period', { ...base, periodEnd: APRIL.periodStart }],
    ['a reversed period', { ...base, periodStart: APRIL.periodEnd, periodEnd: APRIL.periodStart }],
    ['a period inside one day, by day', { ...base, periodStart: t('2024-04-01T01:00:00Z'), periodEnd: t('2024-04-01T05:00:00Z') }],
    ['an invalid date', { ...base, from: new Date('nope') }],
    ['an unknown mode', { ...base, mode: 'hour' as 'day' }],
    ['days with mode second', { ...base, mode: 'second' as const, days: { used: 1, total: 2 } }],
    ['days used > total', { ...base, days: { used: 32, total: 31 } }],
    ['days total 0', { ...base, days: { used: 0, total: 0 } }],
    ['fractional days', { ...base, days: { used: 1.5, total: 31 } }],
  ])('%s', (_, input) => expect(() => prorate(input)).toThrow(RangeError))
})

describe('proration lines for a change of a price paid in advance', () => {
  const at = t('2024-04-21T00:00:00Z') // 10 of 30 days left
  const pro = { amount: new D('30.00'), ...APRIL, label: 'Pro' }
  const business = { amount: new D('90.00'), ...APRIL, label: 'Business' }

  it('upgrade: credit of the old price and charge of the new one for [t, end)', () => {
    const lines = [prorationCredit({ ...pro, at }), prorationCharge({ ...business, at })]
    expect(lines.map((l) => [l.description, l.amount.toFixed()])).toEqual([
      ['Unused time on Pro from 2024-04-21', '-10'],
      ['Remaining time on Business from 2024-04-21', '30'],
    ])
    expectDec(sumMoney(lines.map((l) => roundMoney(l.amount, 'USD'))), '20.00')
  })

  it('downgrade: the credit exceeds the charge', () => {
    const lines = [prorationCredit({ ...business, at }), prorationCharge({ ...pro, at })]
    expect(lines.map((l) => l.amount.toFixed())).toEqual(['-30', '10'])
    expectDec(sumMoney(lines.map((l) => roundMoney(l.amount, 'USD'))), '-20.00')
  })

  it('cancellation: a credit of the unused part only', () => {
    const credit = prorationCredit({ amount: new D('99.99'), ...JANUARY, at: t('2024-01-17T09:00:00Z'), label: 'Pro' })
    expect(credit.description).toBe('Unused time on Pro from 2024-01-17')
    expectDec(credit.amount, '-48.38225806451612903225806451612903225806')
    expectDec(roundMoney(credit.amount, 'USD'), '-48.38')
  })

  it('a change at the start of the period credits and charges the whole period', () => {
    expectDec(prorationCredit({ ...pro, at: APRIL.periodStart }).amount, '-30.00')
    expectDec(prorationCharge({ ...business, at: APRIL.periodStart }).amount, '90.00')
  })

  it('a change at the end of the period is worth 0, not -0', () => {
    const credit = prorationCredit({ ...pro, at: APRIL.periodEnd })
    expect(credit.amount.isZero() && !credit.amount.isNegative()).toBe(true)
    expectDec(prorationCharge({ ...business, at: APRIL.periodEnd }).amount, '0')
  })

  it('by second', () => {
    // 12 hours into a 1-day period: half of 10.00 back.
    const day = { periodStart: t('2024-04-01T00:00:00Z'), periodEnd: t('2024-04-02T00:00:00Z') }
    expectDec(prorationCredit({ amount: new D('10.00'), ...day, at: t('2024-04-01T12:00:00Z'), label: 'Pro', mode: 'second' }).amount, '-5.00')
  })

  it('an invoice nets the rounded lines, not the rounded net', () => {
    // 99.99 → 149.99 with 15 of 31 days left: -48.3822… → -48.38 and 72.5758… → 72.58, so 24.20;
    // rounding the unrounded net 50 × 15/31 = 24.1935… would give 24.19.
    const at = t('2024-01-17T00:00:00Z')
    const lines = [
      prorationCredit({ amount: new D('99.99'), ...JANUARY, at, label: 'Pro' }),
      prorationCharge({ amount: new D('149.99'), ...JANUARY, at, label: 'Business' }),
    ]
    expectDec(lines[1].amount, '72.57580645161290322580645161290322580645')
    expectDec(sumMoney(lines.map((l) => roundMoney(l.amount, 'USD'))), '24.20')
  })
})
