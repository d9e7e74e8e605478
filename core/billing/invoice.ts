// computeInvoice: the whole calculation of one invoice, pure. The order is written in docs/billing.md:
// price each line (allowance, min quantity, model), commitments (a line's own, then shared ones over
// several lines), round each line once, line coupons,
// invoice coupons spread over the lines, taxes per rate on the discounted amounts, totals, prepaid credits.
import { validationError } from '../errors.ts'
import { D, minorUnits, roundMoney, sumMoney, type Decimal } from '../money.ts'
import { priceAmount, type PriceInput, type TierLine } from '../pricing/index.ts'
import { applyAllowance, applyAllowancePerWindow, type Allowance } from './allowance.ts'
import { applyCommitment, applySharedCommitment, type Commitment, type CommitmentResult } from './commitment.ts'
import { applyCoupons, type CouponApplication, type CouponUse } from './coupons.ts'
import { applyTaxes, type TaxApplied, type TaxUse } from './taxes.ts'

export type PriceType = 'FIXED' | 'USAGE'

export type InvoiceLineInput = {
  price_type: PriceType
  price_id?: string
  /** The plan the line is billed under: coupon rules may name it. */
  plan_id?: string
  display_name?: string
  /** Usage or seats; for an `amount` line, what to show (default 1). */
  quantity?: Decimal
  /** Exactly one of: a price applied to the quantity, or an unrounded amount computed elsewhere (a proration line, may be negative). */
  price?: PriceInput
  amount?: Decimal
  allowance?: Allowance | null
  /** Usage per allowance window when the allowance resets inside the period (they add up to quantity). */
  usage_windows?: Decimal[]
  commitment?: Commitment | null
  /** false: no coupon discounts the line (a usage adjustment of an earlier period carried by this invoice). */
  discountable?: boolean
}

/** A commitment over several usage lines together (a subscription's commitment_amount). */
export type SharedCommitment = {
  commitment: Commitment
  /** The lines it covers, in the order they use up the commitment; each must be priced, without a commitment of its own. */
  line_indexes: number[]
  /** The true-up line's name. */
  display_name: string
}

export type InvoiceInput = {
  currency: string
  /** The invoice date: coupon redemption windows are checked against it. */
  invoice_date: Date
  lines: InvoiceLineInput[]
  /** Line coupons address lines by index; true-up lines come after all given lines. */
  coupons?: CouponUse[]
  commitments?: SharedCommitment[]
  taxes?: TaxUse[]
  /** Prepaid credits that may pay this invoice, and the price types they may pay for. */
  prepaid?: { available: Decimal; allowed_price_types: (PriceType | 'ALL')[] }
}

type InvoiceLine = {
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
  /** A true-up line: the indexes of the lines whose commitment it completes. */
  true_up_for: number[] | null
  /** A shared commitment's true-up line: the commitment's index in the input's `commitments`. */
  shared_commitment: number | null
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

/** One input line priced, its amount still unrounded. */
function priceLine(line: InvoiceLineInput, index: number, currency: string): PricedLine & { unrounded: Decimal } {
  if ((line.price == null) === (line.amount == null)) throw validationError(`lines[${index}]`, 'needs exactly one of price and amount')
  if (line.allowance && !line.price) throw validationError(`lines[${index}].allowance`, 'needs a price to apply to')
  const quantity = line.quantity ?? new D(1)
  const allowed = line.usage_windows ? applyAllowancePerWindow(line.usage_windows, line.allowance) : applyAllowance(quantity, line.allowance)
  const priced = line.price ? priceAmount(line.price, allowed.billable) : null
  const unrounded = priced ? priced.amount : line.amount!
  return {
    price_type: line.price_type,
    price_id: line.price_id ?? null,
    display_name: line.display_name ?? null,
    currency,
    quantity,
    billed_quantity: priced ? priced.quantity : quantity,
    amount: roundMoney(unrounded, currency),
    unrounded,
    commitment_info: null,
    true_up_for: null,
    shared_commitment: null,
    tiers: priced?.tiers ?? null,
  }
}

type TrueUpOf = Pick<PricedLine, 'price_type' | 'price_id' | 'currency'>

const trueUpLine = (of: TrueUpOf, name: string, amount: Decimal, lines: number[], shared: number | null, info: PricedLine['commitment_info']): PricedLine => ({
  price_type: of.price_type,
  price_id: of.price_id,
  display_name: name,
  currency: of.currency,
  quantity: new D(1),
  billed_quantity: new D(1),
  amount,
  commitment_info: info,
  true_up_for: lines,
  shared_commitment: shared,
  tiers: null,
})

/**
 * Lines with their commitments applied (each line rounded once); true-up lines follow the given lines. Each line's
 * `amount` and `commitment_info` are computeInvoice's: what follows (coupons, taxes, credits) leaves them as they are,
 * so usage analytics prices a window's lines with this alone.
 */
export function commitLines(input: Pick<InvoiceInput, 'currency' | 'lines' | 'commitments'>): PricedLine[] {
  const { currency } = input
  const lines = input.lines.map((l, i) => priceLine(l, i, currency))
  const trueUps: PricedLine[] = []
  for (const [i, l] of input.lines.entries()) {
    if (!l.commitment) continue
    const { usage_amount, true_up_amount, ...info } = applyCommitment(lines[i].unrounded, l.commitment, currency)
    Object.assign(lines[i], { amount: usage_amount, commitment_info: info })
    if (!true_up_amount.isZero()) trueUps.push(trueUpLine(lines[i], `True-up for ${l.display_name ?? `line ${i}`}`, true_up_amount, [i], null, null))
  }
  for (const [k, shared] of (input.commitments ?? []).entries()) {
    for (const i of shared.line_indexes) {
      if (!input.lines[i]?.price || input.lines[i].commitment) throw validationError(`commitments[${k}].line_indexes`, `line ${i} is not a priced line without a commitment of its own`)
    }
    const result = applySharedCommitment(shared.line_indexes.map((i) => lines[i].unrounded), shared.commitment, currency)
    for (const [j, i] of shared.line_indexes.entries()) {
      const { amount, ...info } = result.lines[j]
      Object.assign(lines[i], { amount, commitment_info: { ...info, computed_true_up_amount: new D(0) } })
    }
    if (!result.true_up_amount.isZero()) {
      const zero = new D(0)
      trueUps.push(trueUpLine({ price_type: 'USAGE', price_id: null, currency }, shared.display_name, result.true_up_amount, shared.line_indexes, k, { computed_commitment_utilized_amount: zero, computed_overage_amount: zero, computed_true_up_amount: result.true_up_amount }))
    }
  }
  // Given lines keep their indexes (coupons and taxes address them); true-up lines follow.
  return [...lines.map(({ unrounded: _u, ...l }) => l), ...trueUps]
}

export function computeInvoice(input: InvoiceInput): Invoice {
  const { currency } = input
  minorUnits(currency) // rejects a bad code before anything else
  const lines = commitLines(input)
  const amounts = lines.map((l) => l.amount)

  // A true-up line is covered by a coupon's rules as the line it completes.
  const targets = lines.map((l, i) => input.lines[l.true_up_for?.[0] ?? i]).map((l) => ({ price_id: l.price_id ?? null, plan_id: l.plan_id ?? null, discountable: l.discountable }))
  const discounts = applyCoupons(amounts, input.coupons ?? [], currency, input.invoice_date, targets)
  const net = amounts.map((a, i) => a.minus(discounts.line_item_discount[i]).minus(discounts.invoice_level_discount[i]))
  // A rate on some lines also covers their true-up lines.
  const withTrueUps = (idx: number[]) => [...idx, ...lines.flatMap((l, i) => (l.true_up_for?.some((t) => idx.includes(t)) ? [i] : []))]
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
