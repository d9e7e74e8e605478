// A coupon's `rules`: what it may discount. The spec stores `rules` on a coupon without a shape; this is
// the one taken here, after Stripe's `applies_to.products` and promotion-code `minimum_amount`, and
// Lago's plan and billable-metric limitations:
//
//   plan_ids                  only lines billed under one of these plans (a subscription's lines carry its plan)
//   price_ids                 only lines billing one of these prices
//   minimum_amount            only invoices whose subtotal (before discounts and taxes) reaches it…
//   minimum_amount_currency   …in this currency (a fixed coupon's own; required for a percentage coupon)
//
// Several restrictions all hold. A coupon they leave out of an invoice or line discounts nothing there.
import { validationError } from '../errors.ts'
import type { Decimal } from '../money.ts'
import { moneyAmount } from './amounts.ts'

export type CouponRules = {
  plan_ids?: string[]
  price_ids?: string[]
  minimum_amount?: string
  minimum_amount_currency?: string
}

/** What the rules read of an invoice line. */
export type LineTarget = { price_id: string | null; plan_id: string | null; /** false: no coupon covers it. */ discountable?: boolean }

/**
 * A coupon's rules as stored: the minimum in whole minor units of its currency, which is the fixed
 * coupon's own and must be named for a percentage coupon (a percentage has no currency). Errors name
 * `rules.<field>`; the ids' shape is the route schema's, their existence the coupons service's.
 */
export function checkCouponRules(rules: CouponRules, coupon: { type: 'fixed' | 'percentage'; currency?: string }): CouponRules {
  const { minimum_amount: min, minimum_amount_currency: given } = rules
  if (given !== undefined && min === undefined) throw validationError('rules.minimum_amount_currency', 'is only given with rules.minimum_amount')
  if (min === undefined) return rules
  const own = coupon.type === 'fixed' ? coupon.currency?.toUpperCase() : undefined
  if (own && given && given.toUpperCase() !== own) throw validationError('rules.minimum_amount_currency', `must be the coupon's currency ${own}`)
  const currency = own ?? given?.toUpperCase()
  if (!currency) throw validationError('rules.minimum_amount_currency', 'is required with rules.minimum_amount on a percentage coupon')
  return { ...rules, minimum_amount: moneyAmount(min, currency, 'rules.minimum_amount').toFixed(), minimum_amount_currency: currency }
}

/** Whether the rules let the coupon discount this line: its plan and its price are among those named, when named. */
export function coversLine(rules: CouponRules | null | undefined, line: LineTarget): boolean {
  if (line.discountable === false) return false
  if (rules?.plan_ids && !(line.plan_id !== null && rules.plan_ids.includes(line.plan_id))) return false
  return !rules?.price_ids || (line.price_id !== null && rules.price_ids.includes(line.price_id))
}

/** Whether the rules let the coupon discount this invoice at all: in the minimum's currency, a subtotal that reaches it. */
export function coversInvoice(rules: CouponRules | null | undefined, subtotal: Decimal, currency: string): boolean {
  if (rules?.minimum_amount === undefined) return true
  return rules.minimum_amount_currency?.toUpperCase() === currency.toUpperCase() && subtotal.gte(rules.minimum_amount)
}
