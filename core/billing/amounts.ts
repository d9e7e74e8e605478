// Amounts that are already money: validated to the currency's minor unit, and split across lines
// so that the parts add up to the whole to the cent.
import { validationError } from '../errors.ts'
import { D, Decimal, minorUnits, parseDecimal, roundMoney, sumMoney } from '../money.ts'

/** A plain decimal string (or a Decimal) for `field`; anything else is a validation_error naming it. */
export function decimalField(value: string | Decimal | null | undefined, field: string): Decimal {
  try {
    return typeof value === 'string' ? parseDecimal(value) : new D(value!)
  } catch {
    throw validationError(field, 'not a plain decimal number')
  }
}

/**
 * A non-negative amount in whole minor units of the currency ("5.00" USD, "500" JPY, "1.250" KWD).
 * Configured and paid amounts are never rounded silently: "0.005" USD is rejected, naming the field.
 */
export function moneyAmount(value: string | Decimal, currency: string, field: string): Decimal {
  const d = decimalField(value, field)
  if (!d.isFinite() || d.isNeg()) throw validationError(field, 'must be a non-negative amount')
  if (d.decimalPlaces() > minorUnits(currency)) throw validationError(field, `has more decimals than ${currency.toUpperCase()} allows (${minorUnits(currency)})`)
  return d
}

/** A percentage given as a string: 0 ≤ p ≤ 100. */
export function percentage(value: string | null | undefined, field: string): Decimal {
  const d = decimalField(value ?? '', field)
  if (d.isNeg() || d.gt(100)) throw validationError(field, 'must be between 0 and 100')
  return d
}

/**
 * Splits `total` (in minor units) over lines in proportion to non-negative `weights`. Each share is
 * rounded half away from zero and the rounding remainder goes to the largest line, so the shares add
 * up to `total` exactly. A share never leaves [0, weight] (when |total| ≤ Σ weights): where the largest
 * line cannot take the whole remainder, the next largest takes the rest. A negative total is split as
 * its opposite and negated. With all weights 0 the whole total goes to the first line.
 */
export function allocate(total: Decimal, weights: Decimal[], currency: string): Decimal[] {
  if (total.isNeg()) return allocate(total.neg(), weights, currency).map((s) => new D(0).minus(s))
  if (weights.some((w) => w.isNeg())) throw new RangeError('allocate: weights must not be negative')
  const sum = sumMoney(weights)
  const shares = weights.map((w) => (sum.isZero() ? new D(0) : roundMoney(total.times(w).div(sum), currency)))
  const capped = total.lte(sum)
  let rest = total.minus(sumMoney(shares))
  // Largest weight first; the sort is stable, so equal weights keep line order.
  const order = weights.map((w, i) => ({ w, i })).sort((a, b) => b.w.comparedTo(a.w))
  for (const { w, i } of order) {
    if (rest.isZero()) break
    const wanted = shares[i].plus(rest)
    const next = D.max(0, capped ? D.min(wanted, w) : wanted)
    rest = rest.minus(next.minus(shares[i]))
    shares[i] = next
  }
  return shares
}
