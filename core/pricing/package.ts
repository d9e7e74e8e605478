// PACKAGE: usage is sold in whole packages of `divide_by` units, e.g. 5.00 per 1000 API calls.
import { D, type Decimal } from '../money.ts'

export type TransformQuantity = { divide_by: number; round: 'up' | 'down' }

export function validateTransform(t: TransformQuantity | undefined): TransformQuantity {
  if (!t || !Number.isInteger(t.divide_by) || t.divide_by < 1) throw new RangeError('transform_quantity.divide_by must be an integer >= 1')
  if (t.round !== 'up' && t.round !== 'down') throw new RangeError("transform_quantity.round must be 'up' or 'down'")
  return t
}

/** Whole packages: 1001 units per 1000 is 2 rounding up, 1 rounding down. */
export function packageCount(quantity: Decimal, transform: TransformQuantity): Decimal {
  const { divide_by, round } = validateTransform(transform)
  const q = new D(quantity)
  // divToInt and mod are exact, where div then ceil could round a long quotient first.
  const whole = q.divToInt(divide_by)
  return round === 'up' && !q.mod(divide_by).isZero() ? whole.plus(1) : whole
}

export function packageAmount(packagePrice: Decimal, quantity: Decimal, transform: TransformQuantity): { amount: Decimal; packages: Decimal } {
  const packages = packageCount(quantity, transform)
  return { amount: new D(packagePrice).times(packages), packages }
}
