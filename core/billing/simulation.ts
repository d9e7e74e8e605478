// What a pricing simulation compares, pure: the amount each price bills on an invoice before tax (its line amounts
// less their discounts), the current and candidate amounts side by side by price, the difference in percent, and
// which bucket of the distribution a customer's difference falls in.
import { D, type Decimal } from '../money.ts'
import type { Invoice } from './invoice.ts'

/** One price's amounts in a simulation; price_id null: a commitment's true-up over several prices. */
export interface SimulatedLine {
  price_id: string | null
  current: Decimal
  candidate: Decimal
}

/**
 * What each price billed on a computed invoice before tax: its lines' amounts (true-ups of its own commitment
 * included) less their line and invoice discounts. They add up to the invoice's subtotal − total_discount.
 */
export function billedByPrice(invoice: Invoice): Map<string | null, Decimal> {
  const out = new Map<string | null, Decimal>()
  for (const l of invoice.line_items) {
    const net = l.amount.minus(l.line_item_discount).minus(l.invoice_level_discount)
    out.set(l.price_id, (out.get(l.price_id) ?? new D(0)).plus(net))
  }
  return out
}

/** Adds `amounts` to the `side` of `lines`, keyed by price; a price on one side only is 0 on the other. */
export function addBilled(lines: Map<string | null, SimulatedLine>, side: 'current' | 'candidate', amounts: Map<string | null, Decimal>): void {
  for (const [price_id, amount] of amounts) {
    const line = lines.get(price_id) ?? { price_id, current: new D(0), candidate: new D(0) }
    line[side] = line[side].plus(amount)
    lines.set(price_id, line)
  }
}

/** (candidate − current) ÷ |current| in percent, 2 places; null when current is 0 (no base to compare with). */
export function differencePercent(current: Decimal, candidate: Decimal): Decimal | null {
  if (current.isZero()) return null
  return candidate.minus(current).div(current.abs()).times(100).toDecimalPlaces(2)
}

/** The distribution's buckets of difference in percent, [from, to); `unchanged` holds a difference of exactly 0. */
export const BUCKETS: readonly { from: number | null; to: number | null; unchanged?: true }[] = [
  { from: null, to: -50 },
  { from: -50, to: -20 },
  { from: -20, to: -10 },
  { from: -10, to: -5 },
  { from: -5, to: 0 },
  { from: 0, to: 0, unchanged: true },
  { from: 0, to: 5 },
  { from: 5, to: 10 },
  { from: 10, to: 20 },
  { from: 20, to: 50 },
  { from: 50, to: null },
]

/**
 * The bucket of a customer's difference. A change from nothing (current 0) counts as the largest move its way;
 * the percent compared is unrounded, so 4.999% is below 5%.
 */
export function bucketOf(current: Decimal, candidate: Decimal): number {
  const diff = candidate.minus(current)
  if (diff.isZero()) return BUCKETS.findIndex((b) => b.unchanged)
  if (current.isZero()) return diff.isPos() ? BUCKETS.length - 1 : 0
  const p = diff.div(current.abs()).times(100)
  return BUCKETS.findIndex((b) => !b.unchanged && (b.from === null || p.gte(b.from)) && (b.to === null || p.lt(b.to)))
}
