// Money is always a Decimal, never a JS number. Every amount is computed with `D`, whose
// 40 significant digits are far more than any invoice needs, so nothing is lost before the
// single rounding at the invoice line (roundMoney).
import { Decimal } from 'decimal.js'

export { Decimal }

export const D = Decimal.clone({ precision: 40, rounding: Decimal.ROUND_HALF_UP })
/** Zero, shared where a long series would otherwise allocate one per element (Decimals never change). */
export const ZERO = new D(0)

// ISO 4217 minor units; every code not listed here has 2.
const ZERO_DECIMAL = new Set(['JPY', 'KRW', 'VND', 'CLP', 'ISK', 'UGX', 'XAF', 'XOF', 'XPF', 'PYG', 'RWF', 'GNF', 'KMF', 'VUV', 'BIF', 'DJF'])
const THREE_DECIMAL = new Set(['KWD', 'BHD', 'OMR', 'JOD', 'TND', 'LYD', 'IQD'])

export function minorUnits(currency: string): number {
  if (!/^[A-Za-z]{3}$/.test(currency)) throw new RangeError(`currency must be a 3-letter ISO 4217 code, got ${JSON.stringify(currency)}`)
  const code = currency.toUpperCase()
  return ZERO_DECIMAL.has(code) ? 0 : THREE_DECIMAL.has(code) ? 3 : 2
}

/** Rounds half away from zero to the currency's minor unit. Never returns -0, so a tiny credit cannot print as "-0.00". */
export function roundMoney(amount: Decimal, currency: string): Decimal {
  const r = new D(amount).toDecimalPlaces(minorUnits(currency), D.ROUND_HALF_UP)
  return r.isZero() ? new D(0) : r
}

/** Only plain decimals: "12", "-0.5", "1000.25". No exponent, spaces, "+", hex, ".5" or "5." (decimal.js would accept most of these). */
export function parseDecimal(s: string): Decimal {
  if (typeof s !== 'string' || !/^-?\d+(\.\d+)?$/.test(s)) throw new RangeError(`not a plain decimal number: ${JSON.stringify(s)}`)
  return new D(s)
}

/** Texts parseNonNegative accepted, parsed: analytics prices the same few prices at every window end (Decimals are immutable, so one is shared). */
const nonNegative = new Map<string, Decimal>()

/** parseDecimal for a price or quantity that cannot be negative; the RangeError names the field. */
export function parseNonNegative(s: string, field: string): Decimal {
  const known = nonNegative.get(s)
  if (known) return known
  let d: Decimal
  try {
    d = parseDecimal(s)
  } catch {
    throw new RangeError(`${field}: not a plain decimal number: ${JSON.stringify(s)}`)
  }
  if (d.lt(0)) throw new RangeError(`${field}: must not be negative, got ${s}`)
  // Bounded: plans hold few prices, but price texts also arrive in requests (price-rules validation).
  if (nonNegative.size >= 10_000) nonNegative.clear()
  nonNegative.set(s, d)
  return d
}

/** Exactly the currency's minor digits, e.g. "10.50" USD, "1000" JPY, "1.235" KWD; rounds like roundMoney. */
export function formatMoney(d: Decimal, currency: string): string {
  return roundMoney(d, currency).toFixed(minorUnits(currency))
}

/** An amount as people read it, with the currency's symbol: 12 USD → "$12.00", 1500 JPY → "¥1500" (Flexprice's display_amount). */
export function displayAmount(d: Decimal, currency: string): string {
  let symbol = currency
  try {
    symbol = new Intl.NumberFormat('en', { style: 'currency', currency, currencyDisplay: 'narrowSymbol' }).formatToParts(0).find((p) => p.type === 'currency')?.value ?? currency
  } catch {
    // A code Intl does not know: shown by its code.
  }
  return `${symbol}${formatMoney(d, currency)}`
}

export function sumMoney(list: Decimal[]): Decimal {
  return list.reduce<Decimal>((acc, x) => acc.plus(x), new D(0))
}
