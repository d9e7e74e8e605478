// Prices one quantity under one price. Amounts stay unrounded here; an invoice line rounds
// once, with lineAmount, so per-tier or per-package rounding cannot drift from the total.
import { D, parseNonNegative, roundMoney, type Decimal } from '../money.ts'
import { flatFeeAmount } from './flat-fee.ts'
import { packageAmount, validateTransform, type TransformQuantity } from './package.ts'
import { tieredAmount, type Tier, type TierLine, type TierMode } from './tiered.ts'

export type { TierLine, TierMode }

export type PriceInput = {
  billing_model: 'FLAT_FEE' | 'PACKAGE' | 'TIERED'
  /** Unit price (FLAT_FEE) or price of one package (PACKAGE); unused by TIERED. */
  amount: string
  tier_mode?: TierMode
  tiers?: Tier[]
  transform_quantity?: TransformQuantity
  min_quantity?: string | null
}

export type PriceResult = {
  /** Unrounded. */
  amount: Decimal
  /** The quantity billed: max(quantity, min_quantity). */
  quantity: Decimal
  /** PACKAGE only: whole packages billed. */
  packages?: Decimal
  /** TIERED only: the tiers that were reached. */
  tiers?: TierLine[]
}

export function priceAmount(price: PriceInput, quantity: Decimal): PriceResult {
  // Usage counts cannot be negative; refunds and credits are separate lines, not negative usage.
  const q = new D(quantity)
  if (!q.isFinite() || q.lt(0)) throw new RangeError(`quantity must be a non-negative number, got ${q.toString()}`)
  const min = price.min_quantity == null ? new D(0) : parseNonNegative(price.min_quantity, 'min_quantity')
  const billed = D.max(q, min)
  switch (price.billing_model) {
    case 'FLAT_FEE':
      return { amount: flatFeeAmount(parseNonNegative(price.amount, 'amount'), billed), quantity: billed }
    case 'PACKAGE':
      return { ...packageAmount(parseNonNegative(price.amount, 'amount'), billed, validateTransform(price.transform_quantity)), quantity: billed }
    case 'TIERED':
      return { ...tieredAmount(price.tiers, price.tier_mode, billed), quantity: billed }
    default:
      throw new RangeError(`unknown billing_model ${JSON.stringify((price as { billing_model: unknown }).billing_model)}`)
  }
}

/** The amount of one invoice line: priced, then rounded once to the currency's minor unit. */
export function lineAmount(price: PriceInput, quantity: Decimal, currency: string): Decimal {
  return roundMoney(priceAmount(price, quantity).amount, currency)
}
