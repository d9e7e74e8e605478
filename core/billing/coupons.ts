// Coupons: which ones discount an invoice, by how much, and how an invoice-level discount is spread
// over the lines. Line-level coupons come first, then invoice-level ones on what is left; each coupon
// applies to the amount left by the coupons before it (two 10% coupons take 19%, not 20%), and no
// coupon takes more than what is left, so nothing goes below zero. Negative lines (proration credits)
// are never discounted. A coupon's rules (./coupon-rules.ts) may leave lines or the whole invoice out.
import { invalidOperation, validationError } from '../errors.ts'
import { D, roundMoney, sumMoney, type Decimal } from '../money.ts'
import { allocate, moneyAmount, percentage } from './amounts.ts'
import { coversInvoice, coversLine, type CouponRules, type LineTarget } from './coupon-rules.ts'

export type Coupon = {
  id: string
  type: 'fixed' | 'percentage'
  cadence: 'once' | 'repeated' | 'forever'
  /** fixed: the amount taken off, in `currency`. */
  amount_off?: string | null
  /** percentage: 0..100. */
  percentage_off?: string | null
  currency?: string | null
  /** repeated: how many billing periods the coupon discounts. */
  duration_in_periods?: number | null
  max_redemptions?: number | null
  total_redemptions?: number | null
  /** ISO instants; a redemption must fall in [redeem_after, redeem_before). */
  redeem_after?: string | null
  redeem_before?: string | null
  rules?: CouponRules | null
}

/** A coupon on an invoice: on one line (`line_index`) or on the whole invoice (no line_index). */
export type CouponUse = {
  coupon: Coupon
  coupon_association_id?: string
  line_index?: number | null
  /** Billing periods since the coupon was redeemed: 0 for the first invoice it discounts. */
  period_index?: number
}

/** The spec's CouponApplication, with the line as its index on the invoice (null: invoice level). */
export type CouponApplication = {
  coupon_id: string
  coupon_association_id: string | null
  line_index: number | null
  currency: string
  discount_type: Coupon['type']
  discount_percentage: Decimal | null
  original_price: Decimal
  discounted_amount: Decimal
  final_price: Decimal
}

export type Discounts = {
  /** Per line: the sum of its line-level coupons. */
  line_item_discount: Decimal[]
  /** Per line: its share of the invoice-level coupons. */
  invoice_level_discount: Decimal[]
  applications: CouponApplication[]
}

/** Whether the coupon still discounts the invoice of the period `periodIndex` (0 = first) after it was redeemed. */
export function couponApplies(coupon: Coupon, periodIndex: number): boolean {
  if (!Number.isSafeInteger(periodIndex) || periodIndex < 0) throw new RangeError(`period index must be a non-negative integer, got ${periodIndex}`)
  switch (coupon.cadence) {
    case 'once':
      return periodIndex === 0
    case 'forever':
      return true
    case 'repeated': {
      const n = coupon.duration_in_periods
      if (n == null || !Number.isSafeInteger(n) || n < 1) throw validationError('duration_in_periods', 'a repeated coupon needs a positive number of periods')
      return periodIndex < n
    }
    default:
      throw validationError('cadence', `unknown cadence ${JSON.stringify(coupon.cadence)}`)
  }
}

const instant = (s: string, field: string): number => {
  const t = Date.parse(s)
  if (Number.isNaN(t)) throw validationError(field, 'not a date-time')
  return t
}

/** Whether `at` lies in [redeem_after, redeem_before); an open end is unbounded. */
export function inRedemptionWindow(coupon: Coupon, at: Date): boolean {
  const t = at.getTime()
  if (coupon.redeem_after != null && t < instant(coupon.redeem_after, 'redeem_after')) return false
  return coupon.redeem_before == null || t < instant(coupon.redeem_before, 'redeem_before')
}

/** For a new redemption (a subscription association, a one-off invoice): the window, then max_redemptions. */
export function assertRedeemable(coupon: Coupon, at: Date): void {
  if (!inRedemptionWindow(coupon, at)) throw invalidOperation(`coupon ${coupon.id} cannot be redeemed at ${at.toISOString()}`, { coupon_id: coupon.id })
  const max = coupon.max_redemptions
  if (max != null && (coupon.total_redemptions ?? 0) >= max) throw invalidOperation(`coupon ${coupon.id} has reached its ${max} redemptions`, { coupon_id: coupon.id })
}

/**
 * Whether a coupon discounts this invoice: its cadence allows the period, and its first invoice (the
 * redemption) is dated inside the window. Later periods of a repeated or forever coupon keep their
 * promised discount after redeem_before. max_redemptions is counted when redeeming (assertRedeemable).
 */
export function couponEligible(use: CouponUse, invoiceDate: Date): boolean {
  const index = use.period_index ?? 0
  return couponApplies(use.coupon, index) && (index > 0 || inRedemptionWindow(use.coupon, invoiceDate))
}

/** The checked amount_off of a fixed coupon, which must be in the invoice's currency. */
function amountOff(coupon: Coupon, currency: string): Decimal {
  if (coupon.type !== 'fixed') throw validationError('type', `unknown coupon type ${JSON.stringify(coupon.type)}`)
  if ((coupon.currency ?? '').toUpperCase() !== currency.toUpperCase())
    throw validationError('currency', `coupon ${coupon.id} is in ${coupon.currency ?? 'no currency'}, the invoice in ${currency}`)
  return moneyAmount(coupon.amount_off ?? '', currency, 'amount_off')
}

/** What one coupon takes off `amount`: a rounded percentage, or the fixed amount; never more than the amount. */
export function couponDiscount(coupon: Coupon, amount: Decimal, currency: string): Decimal {
  const pct = coupon.type === 'percentage'
  const off = pct ? percentage(coupon.percentage_off, 'percentage_off') : amountOff(coupon, currency)
  if (amount.lte(0)) return new D(0)
  return pct ? roundMoney(amount.times(off).div(100), currency) : D.min(amount, off)
}

/**
 * Applies the eligible coupons to rounded line amounts: line-level ones in the given order, then
 * invoice-level ones on the sum left (each spread over the lines pro rata to what is left of them).
 * A coupon's rules read the lines' `targets` (none given: lines without price or plan) and the
 * subtotal; a coupon they leave out entirely records no application, so a `once` coupon waits for an
 * invoice it may discount, and an invoice-level one discounts only the lines they cover.
 */
export function applyCoupons(amounts: Decimal[], uses: CouponUse[], currency: string, invoiceDate: Date, targets: LineTarget[] = []): Discounts {
  const lineDiscount = amounts.map(() => new D(0))
  const invoiceDiscount = amounts.map(() => new D(0))
  const left = (i: number) => amounts[i].minus(lineDiscount[i]).minus(invoiceDiscount[i])
  const applications: CouponApplication[] = []
  const record = (use: CouponUse, original: Decimal, discount: Decimal) => {
    const pct = use.coupon.type === 'percentage'
    applications.push({
      coupon_id: use.coupon.id,
      coupon_association_id: use.coupon_association_id ?? null,
      line_index: use.line_index ?? null,
      currency,
      discount_type: use.coupon.type,
      discount_percentage: pct ? percentage(use.coupon.percentage_off, 'percentage_off') : null,
      original_price: original,
      discounted_amount: discount,
      final_price: original.minus(discount),
    })
  }
  const subtotal = sumMoney(amounts)
  const covers = (use: CouponUse, i: number) => coversLine(use.coupon.rules, targets[i] ?? { price_id: null, plan_id: null })
  const eligible = uses.filter((u) => couponEligible(u, invoiceDate) && coversInvoice(u.coupon.rules, subtotal, currency))
  for (const use of eligible.filter((u) => u.line_index != null)) {
    const i = use.line_index!
    if (!Number.isInteger(i) || i < 0 || i >= amounts.length) throw validationError('line_index', `no invoice line ${i} for coupon ${use.coupon.id}`)
    if (!covers(use, i)) continue
    const original = left(i)
    const discount = couponDiscount(use.coupon, original, currency)
    lineDiscount[i] = lineDiscount[i].plus(discount)
    record(use, original, discount)
  }
  for (const use of eligible.filter((u) => u.line_index == null)) {
    const covered = amounts.map((_, i) => covers(use, i))
    if (!covered.includes(true)) continue
    const weights = amounts.map((_, i) => (covered[i] ? D.max(0, left(i)) : new D(0)))
    const original = D.max(0, sumMoney(amounts.map((_, i) => (covered[i] ? left(i) : new D(0)))))
    const discount = couponDiscount(use.coupon, original, currency)
    allocate(discount, weights, currency).forEach((share, i) => (invoiceDiscount[i] = invoiceDiscount[i].plus(share)))
    record(use, original, discount)
  }
  return { line_item_discount: lineDiscount, invoice_level_discount: invoiceDiscount, applications }
}
