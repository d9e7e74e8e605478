// computeInvoice: the whole calculation of one invoice, pure. The order is written in docs/billing.md:
// price each line (allowance, min quantity, model), commitment, round each line once, line coupons,
// invoice coupons spread over the lines, taxes per rate on the discounted amounts, totals, prepaid credits.
import { validationError } from '../errors.ts'
import { D, minorUnits, roundMoney, sumMoney, type Decimal } from '../money.ts'
import { priceAmount, type PriceInput, type TierLine } from '../pricing/index.ts'
import { applyAllowance, type Allowance } from './allowance.ts'
import { applyCommitment, type Commitment, type CommitmentResult } from './commitment.ts'
import { applyCoupons, type CouponApplication, type CouponUse } from './coupons.ts'
import { applyTaxes, type TaxApplied, type TaxUse } from './taxes.ts'

export type PriceType = 'FIXED' | 'USAGE'

export type InvoiceLineInput = {
  price_type: PriceType
  price_id?: string
  display_name?: string
  /** Usage or seats; for an `amount` line, what to show (default 1). */
  quantity?: Decimal
  /** Exactly one of: a price applied to the quantity, or an unrounded amount computed elsewhere (a proration line, may be negative). */
  price?: PriceInput
  amount?: Decimal
  allowance?: Allowance | null
  commitment?: Commitment | null
}

export type InvoiceInput = {
  currency: string
  /** The invoice date: coupon redemption windows are checked against it. */
  invoice_date: Date
  lines: InvoiceLineInput[]
  /** Line coupons address lines by index; true-up lines come after all given lines. */
  coupons?: CouponUse[]
  taxes?: TaxUse[]
  /** Prepaid credits that may pay this invoice, and the price types they may pay for. */
  prepaid?: { available: Decimal; allowed_price_types: (PriceType | 'ALL')[] }
}

export type InvoiceLine = {
  price_type: PriceType
  price_id: string | null
  display_name: string | null
  currency: string
  quantity: Decimal
  /** The quantity priced: after the allowance and min_quantity. */
  billed_quantity: Decimal
  /** Rounded once; before discounts. */
  amount: Decimal
  line_item_discount: Decimal
  invoice_level_discount: Decimal
  /** This line's share of the taxes. */
  tax_amount: Decimal
  prepaid_credits_applied: Decimal
  commitment_info: Omit<CommitmentResult, 'usage_amount' | 'true_up_amount'> | null
  /** A true-up line: the index of the line whose commitment it completes. */
  true_up_for_line: number | null
  tiers: TierLine[] | null
}

export type Invoice = {
  currency: string
  line_items: InvoiceLine[]
  coupon_applications: CouponApplication[]
  taxes: TaxApplied[]
  /** Sum of the rounded line amounts. */
  subtotal: Decimal
  total_discount: Decimal
  total_tax: Decimal
  /** subtotal − total_discount + total_tax. */
  total: Decimal
  total_prepaid_credits_applied: Decimal
  /** total − prepaid credits, never below 0 (a net credit is left to the caller). */
  amount_due: Decimal
}

type PricedLine = Omit<InvoiceLine, 'line_item_discount' | 'invoice_level_discount' | 'tax_amount' | 'prepaid_credits_applied'>

/** One input line priced and rounded once; with a true-up, also the true-up line. */
function priceLine(line: InvoiceLineInput, index: number, currency: string): PricedLine[] {
  if ((line.price == null) === (line.amount == null)) throw validationError(`lines[${index}]`, 'needs exactly one of price and amount')
  if (line.allowance && !line.price) throw validationError(`lines[${index}].allowance`, 'needs a price to apply to')
  const quantity = line.quantity ?? new D(1)
  const base = { price_type: line.price_type, price_id: line.price_id ?? null, display_name: line.display_name ?? null, currency, quantity, true_up_for_line: null }
  const priced = line.price ? priceAmount(line.price, applyAllowance(quantity, line.allowance).billable) : null
  const unrounded = priced ? priced.amount : line.amount!
  const billed = priced ? priced.quantity : quantity
  const tiers = priced?.tiers ?? null
  if (!line.commitment) return [{ ...base, billed_quantity: billed, amount: roundMoney(unrounded, currency), commitment_info: null, tiers }]
  const { usage_amount, true_up_amount, ...info } = applyCommitment(unrounded, line.commitment, currency)
  const usage: PricedLine = { ...base, billed_quantity: billed, amount: usage_amount, commitment_info: info, tiers }
  if (true_up_amount.isZero()) return [usage]
  const name = `True-up for ${line.display_name ?? `line ${index}`}`
  return [usage, { ...base, display_name: name, quantity: new D(1), billed_quantity: new D(1), amount: true_up_amount, commitment_info: null, true_up_for_line: index, tiers: null }]
}

export function computeInvoice(input: InvoiceInput): Invoice {
  const { currency } = input
  minorUnits(currency) // rejects a bad code before anything else
  const priced = input.lines.map((l, i) => priceLine(l, i, currency))
  // Given lines keep their indexes (coupons and taxes address them); true-up lines follow.
  const lines = [...priced.map((p) => p[0]), ...priced.flatMap((p) => p.slice(1))]
  const amounts = lines.map((l) => l.amount)

  const discounts = applyCoupons(amounts, input.coupons ?? [], currency, input.invoice_date)
  const net = amounts.map((a, i) => a.minus(discounts.line_item_discount[i]).minus(discounts.invoice_level_discount[i]))
  // A rate on some lines also covers their true-up lines.
  const withTrueUps = (idx: number[]) => [...idx, ...lines.flatMap((l, i) => (l.true_up_for_line != null && idx.includes(l.true_up_for_line) ? [i] : []))]
  const taxUses = (input.taxes ?? []).map((t) => (t.line_indexes ? { ...t, line_indexes: withTrueUps(t.line_indexes) } : t))
  const taxes = applyTaxes(net, taxUses, currency)

  const subtotal = sumMoney(amounts)
  const totalDiscount = sumMoney([...discounts.line_item_discount, ...discounts.invoice_level_discount])
  const total = subtotal.minus(totalDiscount).plus(taxes.total_tax)
  const prepaid = applyPrepaid(lines.map((l, i) => ({ price_type: l.price_type, payable: net[i].plus(taxes.line_tax[i]) })), input.prepaid, total, currency)
  const prepaidTotal = sumMoney(prepaid)

  return {
    currency,
    line_items: lines.map((l, i) => ({
      ...l,
      line_item_discount: discounts.line_item_discount[i],
      invoice_level_discount: discounts.invoice_level_discount[i],
      tax_amount: taxes.line_tax[i],
      prepaid_credits_applied: prepaid[i],
    })),
    coupon_applications: discounts.applications,
    taxes: taxes.taxes,
    subtotal,
    total_discount: totalDiscount,
    total_tax: taxes.total_tax,
    total,
    total_prepaid_credits_applied: prepaidTotal,
    amount_due: D.max(0, total.minus(prepaidTotal)),
  }
}

/**
 * Prepaid credits pay the eligible lines in line order, each up to what the line costs (after
 * discounts, with its tax share), and never more than the invoice total. A balance finer than the minor
 * unit is used down to the unit below it, so no more is taken than is there.
 */
function applyPrepaid(lines: { price_type: PriceType; payable: Decimal }[], prepaid: InvoiceInput['prepaid'], total: Decimal, currency: string): Decimal[] {
  if (!prepaid) return lines.map(() => new D(0))
  if (prepaid.available.isNeg()) throw validationError('prepaid.available', 'must not be negative')
  const all = prepaid.allowed_price_types.includes('ALL')
  let left = D.min(prepaid.available.toDecimalPlaces(minorUnits(currency), D.ROUND_DOWN), D.max(0, total))
  return lines.map((l) => {
    if (!all && !prepaid.allowed_price_types.includes(l.price_type)) return new D(0)
    const used = D.min(left, D.max(0, l.payable))
    left = left.minus(used)
    return used
  })
}
