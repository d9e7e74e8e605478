// FLAT_FEE: one unit price times the billed quantity (a seat count, or 1 for a plain fee).
import { D, type Decimal } from '../money.ts'

export function flatFeeAmount(unitAmount: Decimal, quantity: Decimal): Decimal {
  return new D(unitAmount).times(quantity)
}
