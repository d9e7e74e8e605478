import { describe, expect, it } from 'vitest'
import { AppError } from '../errors.ts'
import { D, type Decimal } from '../money.ts'
import { applyCoupons, assertRedeemable, couponApplies, couponDiscount, couponEligible, inRedemptionWindow, type Coupon, type CouponUse } from './coupons.ts'

const pct = (p: string, extra: Partial<Coupon> = {}): Coupon => ({ id: `pct${p}`, type: 'percentage', cadence: 'forever', percentage_off: p, ...extra })
const fixed = (off: string, currency = 'USD', extra: Partial<Coupon> = {}): Coupon => ({ id: `fix${off}`, type: 'fixed', cadence: 'forever', amount_off: off, currency, ...extra })
const s = (xs: Decimal[]) => xs.map((x) => x.toFixed())
const dec = (xs: string[]) => s(xs.map((x) => new D(x)))
const DAY = new Date('2024-01-15T00:00:00Z')

describe('couponApplies: cadence by period index (0 = first invoice after redemption)', () => {
  it.each([
    [{ cadence: 'once' }, 0, true],
    [{ cadence: 'once' }, 1, false],
    [{ cadence: 'repeated', duration_in_periods: 3 }, 0, true],
    [{ cadence: 'repeated', duration_in_periods: 3 }, 2, true],
    [{ cadence: 'repeated', duration_in_periods: 3 }, 3, false],
    [{ cadence: 'forever' }, 0, true],
    [{ cadence: 'forever' }, 120, true],
  ] as const)('%j, period %i -> %s', (extra, index, expected) => expect(couponApplies(pct('10', extra), index)).toBe(expected))

  it('rejects a repeated coupon without periods and a negative index', () => {
    expect(() => couponApplies(pct('10', { cadence: 'repeated' }), 0)).toThrow(/duration_in_periods/)
    expect(() => couponApplies(pct('10'), -1)).toThrow(RangeError)
  })
})

describe('redemption window [redeem_after, redeem_before) and max_redemptions', () => {
  const windowed = pct('10', { redeem_after: '2024-01-01T00:00:00Z', redeem_before: '2024-02-01T00:00:00Z' })
  it.each([
    ['2023-12-31T23:59:59Z', false],
    ['2024-01-01T00:00:00Z', true], // redeem_after is inclusive
    ['2024-01-31T23:59:59Z', true],
    ['2024-02-01T00:00:00Z', false], // redeem_before is exclusive
  ])('%s -> %s', (at, expected) => expect(inRedemptionWindow(windowed, new Date(at))).toBe(expected))

  it('has no bounds when none are set', () => expect(inRedemptionWindow(pct('10'), new Date(0))).toBe(true))

  it('assertRedeemable refuses outside the window or past max_redemptions', () => {
    expect(() => assertRedeemable(windowed, DAY)).not.toThrow()
    expect(() => assertRedeemable(windowed, new Date('2024-02-01T00:00:00Z'))).toThrow(AppError)
    expect(() => assertRedeemable(pct('10', { max_redemptions: 2, total_redemptions: 1 }), DAY)).not.toThrow()
    expect(() => assertRedeemable(pct('10', { max_redemptions: 2, total_redemptions: 2 }), DAY)).toThrow(/reached its 2 redemptions/)
  })

  it('couponEligible: the window binds the first invoice only; later periods keep their discount', () => {
    const after = new Date('2024-03-01T00:00:00Z')
    expect(couponEligible({ coupon: windowed, period_index: 0 }, DAY)).toBe(true)
    expect(couponEligible({ coupon: windowed, period_index: 0 }, after)).toBe(false)
    expect(couponEligible({ coupon: windowed, period_index: 5 }, after)).toBe(true)
    expect(couponEligible({ coupon: { ...windowed, cadence: 'once' }, period_index: 1 }, DAY)).toBe(false)
  })
})

describe('couponDiscount: never more than the amount, half away from zero', () => {
  it.each([
    [pct('10'), '98.73', 'USD', '9.87'], // 9.873
    [pct('10'), '0.05', 'USD', '0.01'], // 0.005, half away from zero
    [pct('10'), '0.04', 'USD', '0'], // 0.004
    [pct('100'), '12.34', 'USD', '12.34'],
    [pct('10'), '1235', 'JPY', '124'], // 123.5
    [pct('12.5'), '1235', 'JPY', '154'], // 154.375
    [pct('15'), '1.543', 'KWD', '0.231'], // 0.23145
    [pct('10'), '0.015', 'KWD', '0.002'], // 0.0015, half away from zero
    [fixed('5.00'), '20.00', 'USD', '5.00'],
    [fixed('5.00'), '3.10', 'USD', '3.10'], // coupon bigger than the amount
    [fixed('500', 'JPY'), '300', 'JPY', '300'],
    [fixed('5.00'), '0', 'USD', '0'], // zero quantity line
    [fixed('5.00'), '-10.00', 'USD', '0'], // credits are not discounted
    [pct('10'), '-10.00', 'USD', '0'],
  ] as const)('%j on %s %s -> %s', (coupon, amount, currency, expected) => expect(couponDiscount(coupon, new D(amount), currency).toFixed()).toBe(new D(expected).toFixed()))

  it.each([
    [fixed('5.00', 'EUR'), /currency/],
    [fixed('5.001'), /amount_off/],
    [{ ...fixed('5.00'), currency: null }, /currency/],
    [pct('150'), /percentage_off/],
    [{ ...pct('1'), type: 'bogus' } as unknown as Coupon, /type/],
  ])('rejects %j, even on a zero amount', (coupon, message) => expect(() => couponDiscount(coupon, new D(0), 'USD')).toThrow(message))
})

describe('applyCoupons: line level first, then invoice level spread pro rata', () => {
  // Columns: line amounts, coupons, currency -> line_item_discount, invoice_level_discount.
  it.each<[string, string[], CouponUse[], string, string[], string[]]>([
    // 10% of 98.73 = 9.873 → 9.87 on line 1; left 49.00 + 88.86 = 137.86; 5.00 spread:
    // 5 × 49/137.86 = 1.777… → 1.78, 5 × 88.86/137.86 = 3.222… → 3.22.
    ['the USD worked example', ['49.00', '98.73'], [{ coupon: pct('10'), line_index: 1 }, { coupon: fixed('5.00') }], 'USD', ['0', '9.87'], ['1.78', '3.22']],
    // A 10.00 coupon on 5.00 takes 5.00, each line down to exactly 0.
    ['invoice coupon bigger than the invoice', ['3.00', '2.00'], [{ coupon: fixed('10.00') }], 'USD', ['0', '0'], ['3.00', '2.00']],
    // 10% of 100.00 = 10.00, then 10% of the 90.00 left = 9.00.
    ['two percentages compound', ['100.00'], [{ coupon: pct('10'), line_index: 0 }, { coupon: pct('10'), line_index: 0 }], 'USD', ['19.00'], ['0']],
    // 5.00 off a 3.00 line takes 3.00; 50% of what is left (10.00) = 5.00, all on line 1.
    ['line coupon bigger than its line', ['3.00', '10.00'], [{ coupon: fixed('5.00'), line_index: 0 }, { coupon: pct('50') }], 'USD', ['3.00', '0'], ['0', '5.00']],
    // Net 30.00 − 10.00 = 20.00 caps the 25.00 coupon; the credit line takes no share.
    ['a credit line caps the invoice discount', ['30.00', '-10.00'], [{ coupon: fixed('25.00') }, { coupon: fixed('1.00'), line_index: 1 }], 'USD', ['0', '0'], ['20.00', '0']],
    // 0.333… each → 0.33 × 3 = 0.99; the cent left goes to the largest line (the first of equals).
    ['rounding remainder on the largest line', ['10.00', '10.00', '10.00'], [{ coupon: fixed('1.00') }], 'USD', ['0', '0', '0'], ['0.34', '0.33', '0.33']],
    // 5.00 → 2.00/3.00; left 38.00 + 57.00 = 95.00; 10% = 9.50 → 3.80/5.70; shares add up per line.
    ['two invoice coupons in order', ['40.00', '60.00'], [{ coupon: fixed('5.00') }, { coupon: pct('10') }], 'USD', ['0', '0'], ['5.80', '8.70']],
    // 10% of 6173 = 617.3 → 617; left 980 + 5556 = 6536; 500 × 980/6536 = 74.97 → 75, 500 × 5556/6536 = 425.03 → 425.
    ['JPY', ['980', '6173'], [{ coupon: pct('10'), line_index: 1 }, { coupon: fixed('500', 'JPY') }], 'JPY', ['0', '617'], ['75', '425']],
    // Zero quantity line: nothing to discount, the whole 10% (2.00) is on line 1.
    ['zero line', ['0', '20.00'], [{ coupon: fixed('5.00'), line_index: 0 }, { coupon: pct('10') }], 'USD', ['0', '0'], ['0', '2.00']],
    // A once coupon in its second period does nothing.
    ['ineligible coupon', ['20.00'], [{ coupon: pct('10', { cadence: 'once' }), period_index: 1 }], 'USD', ['0'], ['0']],
  ])('%s', (_, amounts, uses, currency, lineDiscount, invoiceDiscount) => {
    const r = applyCoupons(amounts.map((a) => new D(a)), uses, currency, DAY)
    expect(s(r.line_item_discount)).toEqual(dec(lineDiscount))
    expect(s(r.invoice_level_discount)).toEqual(dec(invoiceDiscount))
  })

  it('records one CouponApplication per applied coupon', () => {
    const r = applyCoupons([new D('49.00'), new D('98.73')], [{ coupon: pct('10'), line_index: 1, coupon_association_id: 'ca_1' }, { coupon: fixed('5.00') }], 'USD', DAY)
    expect(r.applications.map((a) => [a.coupon_id, a.coupon_association_id, a.line_index, a.discount_type, a.discount_percentage?.toFixed() ?? null, ...s([a.original_price, a.discounted_amount, a.final_price])])).toEqual([
      ['pct10', 'ca_1', 1, 'percentage', '10', '98.73', '9.87', '88.86'],
      ['fix5.00', null, null, 'fixed', null, '137.86', '5', '132.86'],
    ])
  })

  it('records the compounding originals: 100.00 then 90.00', () => {
    const r = applyCoupons([new D('100.00')], [{ coupon: pct('10'), line_index: 0 }, { coupon: pct('10'), line_index: 0 }], 'USD', DAY)
    expect(r.applications.map((a) => s([a.original_price, a.discounted_amount, a.final_price]))).toEqual([dec(['100', '10', '90']), dec(['90', '9', '81'])])
  })

  it("leaves out what a coupon's rules exclude: lines of other prices or plans, an invoice below the minimum", () => {
    const amounts = [new D('40.00'), new D('60.00'), new D('100.00')]
    const targets = [
      { plan_id: 'plan_pro', price_id: 'price_seat' },
      { plan_id: 'plan_pro', price_id: 'price_api' },
      { plan_id: 'plan_basic', price_id: 'price_seat' },
    ]
    const seat = pct('10', { id: 'seat10', rules: { price_ids: ['price_seat'] } })
    const pro = fixed('10.00', 'USD', { id: 'pro10', rules: { plan_ids: ['plan_pro'] } })
    const big = pct('50', { id: 'big50', rules: { minimum_amount: '200.01', minimum_amount_currency: 'USD' } })
    // seat10 on the API line (index 1) is excluded: nothing, no application. pro10 at invoice level covers
    // lines 0 and 1 only: 10.00 × 40/100 = 4.00 and 6.00. big50 needs a 200.01 subtotal: 200.00 misses it.
    const r = applyCoupons(amounts, [{ coupon: seat, line_index: 1 }, { coupon: seat, line_index: 2 }, { coupon: pro }, { coupon: big }], 'USD', DAY, targets)
    // seat10 on line 2: 10% of 100.00 = 10.00.
    expect(s(r.line_item_discount)).toEqual(dec(['0', '0', '10.00']))
    expect(s(r.invoice_level_discount)).toEqual(dec(['4.00', '6.00', '0']))
    expect(r.applications.map((a) => [a.coupon_id, a.line_index, ...s([a.original_price, a.discounted_amount])])).toEqual([
      ['seat10', 2, '100', '10'],
      ['pro10', null, '100', '10'],
    ])
    // A 200.01 subtotal reaches it: 50% of 200.01 = 100.005 → 100.01.
    const reached = applyCoupons([new D('200.01')], [{ coupon: big }], 'USD', DAY)
    expect(s(reached.invoice_level_discount)).toEqual(dec(['100.01']))
    // No line covered: the coupon records nothing (a once coupon waits for an invoice it may discount).
    expect(applyCoupons([new D('50.00')], [{ coupon: pro }], 'USD', DAY, [{ plan_id: 'plan_basic', price_id: null }]).applications).toEqual([])
  })

  it('rejects a line index that is not on the invoice', () =>
    expect(() => applyCoupons([new D(1)], [{ coupon: pct('10'), line_index: 1 }], 'USD', DAY)).toThrow(/no invoice line 1/))
})
