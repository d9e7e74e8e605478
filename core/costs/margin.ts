// Cost and margin, pure: what a quantity of usage cost under a cost sheet's price, the rounding of many exact costs
// to the currency's minor unit so that they add up to their rounded total, and the margin figures of a revenue
// against a cost (Flexprice's margin, margin_percent, roi, roi_percent).
import { allocateByUsage } from '../analytics/allocation.ts'
import { D, roundMoney, ZERO, type Decimal } from '../money.ts'
import { priceAmount, type PriceInput } from '../pricing/index.ts'

/**
 * What `usage` cost under `price`, unrounded: the price's model applied to the quantity (FLAT_FEE: usage × amount).
 * Usage below zero (a SUM of refunds) costs the opposite of its opposite: a FLAT_FEE stays usage × amount.
 */
export function usageCost(price: PriceInput, usage: Decimal): Decimal {
  if (usage.isZero()) return ZERO
  const amount = priceAmount(price, usage.abs()).amount
  return usage.isNeg() ? amount.neg() : amount
}

/**
 * Exact costs rounded to the currency's minor unit, adding up to their exact sum rounded (largest remainder: each is
 * its exact value rounded down or up). With a negative cost among them each is rounded on its own (half up).
 */
export function roundCosts(exact: readonly Decimal[], currency: string): Decimal[] {
  if (exact.some((c) => c.isNeg())) return exact.map((c) => roundMoney(c, currency))
  const total = exact.reduce((a, b) => a.plus(b), ZERO)
  return allocateByUsage(total, exact, currency)
}

export interface Margins {
  /** revenue − cost. */
  margin: Decimal
  /** margin ÷ revenue × 100, 2 places half up; null without revenue (no share of nothing). */
  margin_percent: Decimal | null
  /** margin ÷ cost, 4 places half up; null without cost. */
  roi: Decimal | null
  /** margin ÷ cost × 100, 2 places half up; null without cost. */
  roi_percent: Decimal | null
}

const HUNDRED = new D(100)

export function margins(revenue: Decimal, cost: Decimal): Margins {
  const margin = revenue.minus(cost)
  return {
    margin,
    margin_percent: revenue.isZero() ? null : margin.div(revenue).times(HUNDRED).toDecimalPlaces(2, D.ROUND_HALF_UP),
    roi: cost.isZero() ? null : margin.div(cost).toDecimalPlaces(4, D.ROUND_HALF_UP),
    roi_percent: cost.isZero() ? null : margin.div(cost).times(HUNDRED).toDecimalPlaces(2, D.ROUND_HALF_UP),
  }
}
