import { describe, expect, it } from 'vitest'
import { AppError } from '../errors.ts'
import { D } from '../money.ts'
import { checkCouponRules, coversInvoice, coversLine, type CouponRules } from './coupon-rules.ts'

const refusal = (f: () => unknown): [string, string[]] => {
  try {
    f()
  } catch (err) {
    if (err instanceof AppError) return [err.code, Object.keys(err.details)]
    throw err
  }
  throw new Error('not refused')
}

describe('checkCouponRules', () => {
  it("stores the minimum in the coupon's currency: a fixed coupon's own, a percentage coupon's named one", () => {
    expect(checkCouponRules({ minimum_amount: '100.00' }, { type: 'fixed', currency: 'usd' })).toEqual({ minimum_amount: '100', minimum_amount_currency: 'USD' })
    expect(checkCouponRules({ minimum_amount: '5000', minimum_amount_currency: 'jpy' }, { type: 'percentage' })).toEqual({ minimum_amount: '5000', minimum_amount_currency: 'JPY' })
    expect(checkCouponRules({ plan_ids: ['plan_a'] }, { type: 'percentage' })).toEqual({ plan_ids: ['plan_a'] })
    expect(checkCouponRules({}, { type: 'percentage' })).toEqual({})
  })

  it.each<[string, CouponRules, { type: 'fixed' | 'percentage'; currency?: string }, string]>([
    ['a percentage minimum without its currency', { minimum_amount: '50' }, { type: 'percentage' }, 'rules.minimum_amount_currency'],
    ['a currency without a minimum', { minimum_amount_currency: 'USD' }, { type: 'percentage' }, 'rules.minimum_amount_currency'],
    ["another currency than the fixed coupon's", { minimum_amount: '50', minimum_amount_currency: 'EUR' }, { type: 'fixed', currency: 'USD' }, 'rules.minimum_amount_currency'],
    ['cents of a currency without them', { minimum_amount: '500.5', minimum_amount_currency: 'JPY' }, { type: 'percentage' }, 'rules.minimum_amount'],
    ['more decimals than USD has', { minimum_amount: '10.005' }, { type: 'fixed', currency: 'USD' }, 'rules.minimum_amount'],
  ])('refuses %s, naming the field', (_, rules, coupon, field) => {
    expect(refusal(() => checkCouponRules(rules, coupon))).toEqual(['validation_error', [field]])
  })
})

describe('coversLine and coversInvoice', () => {
  const line = (plan_id: string | null, price_id: string | null) => ({ plan_id, price_id })

  it('lines: every restriction given must hold; none given covers every line', () => {
    const rules: CouponRules = { plan_ids: ['plan_pro'], price_ids: ['price_seat', 'price_api'] }
    expect([line('plan_pro', 'price_seat'), line('plan_pro', 'price_storage'), line('plan_basic', 'price_seat'), line(null, 'price_seat')].map((l) => coversLine(rules, l))).toEqual([true, false, false, false])
    expect([coversLine({}, line(null, null)), coversLine(null, line(null, null)), coversLine({ price_ids: ['price_seat'] }, line(null, 'price_seat'))]).toEqual([true, true, true])
  })

  it('invoices: a subtotal of 99.99 misses a 100.00 minimum, 100.00 reaches it; another currency never does', () => {
    const rules: CouponRules = { minimum_amount: '100', minimum_amount_currency: 'USD' }
    expect(coversInvoice(rules, new D('99.99'), 'USD')).toBe(false)
    expect(coversInvoice(rules, new D('100.00'), 'usd')).toBe(true)
    expect(coversInvoice(rules, new D('500.00'), 'EUR')).toBe(false)
    expect(coversInvoice({ plan_ids: ['plan_pro'] }, new D(0), 'EUR')).toBe(true)
  })
})
