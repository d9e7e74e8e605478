// Custom price units (credits, tokens) as pure rules: a price in a unit bills in its base currency at the
// unit's conversion_rate. A price's amounts are converted once, exactly, when it is made (core/price-rules.ts);
// the invoice line is then rounded once like every line (half up to the currency's minor unit). What a line is
// in the unit is read back from that billed amount, as Flexprice does.
import { D, roundMoney, type Decimal } from './money.ts'

/** The unit's conversion rate: a plain decimal above zero (RangeError naming the field otherwise). */
export function conversionRate(value: string, field = 'conversion_rate'): Decimal {
  if (!/^\d+(\.\d+)?$/.test(value)) throw new RangeError(`${field}: not a plain decimal number: ${JSON.stringify(value)}`)
  const rate = new D(value)
  if (rate.isZero()) throw new RangeError(`${field}: must be greater than zero`)
  return rate
}

/** A billed line amount in the price unit: amount ÷ rate, half up to the currency's minor unit. */
export const amountInUnit = (amount: Decimal, rate: Decimal, currency: string): Decimal => roundMoney(amount.div(rate), currency)

/**
 * An amount in the unit as people read it (Flexprice's display_price_unit_amount): the unit's symbol before the
 * amount ("₵250"); a unit without a symbol (a price's own) by its code after it ("250 CRD").
 */
export const displayUnitAmount = (amount: Decimal, symbol: string | null, code: string): string => (symbol ? `${symbol}${amount.toFixed()}` : `${amount.toFixed()} ${code}`)
