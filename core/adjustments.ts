// Usage adjustments of finalized periods (issue 34, part 2): what a usage line of a finalized invoice would bill for
// the usage stored now, priced by the invoice's own price, allowance and tax rates, against what it settled so far
// (the invoice, and the adjustments issued since). Pure; a job reads the lines and usage and issues the documents.
import { createHash } from 'node:crypto'
import { D, roundMoney, type Decimal } from './money.ts'
import { lineAmount, type PriceInput } from './pricing/index.ts'
import { applyAllowance, type Allowance } from './billing/allowance.ts'
import { taxAmount, type TaxRate } from './billing/taxes.ts'

/** A finalized usage line as it stood: its price, its allowance, its percentage tax rates, and the usage it settled. */
export interface SettledLine {
  price: PriceInput
  allowance?: Allowance | null
  /** The invoice's rates on this line, applied to an adjustment at the same rates. */
  taxRates?: TaxRate[]
  /** The usage the invoice billed plus what adjustments since settled. */
  settledUsage: Decimal
}

export interface UsageAdjustment {
  /** charge: more usage (a line on the next invoice, or its own invoice); credit: less (a credit note); none. */
  kind: 'charge' | 'credit' | 'none'
  usageDelta: Decimal
  /** Positive for a charge, negative for a credit; rounded to the currency. */
  amount: Decimal
  tax: Decimal
  total: Decimal
  /** Below the environment's minimum: not issued now, carried (the settled usage stays, so the next run sees it again). */
  deferred: boolean
}

const priced = (line: SettledLine, usage: Decimal, currency: string): Decimal => lineAmount(line.price, applyAllowance(usage, line.allowance).billable, currency)

/**
 * The difference between pricing the usage stored now and pricing the usage settled, both with the line's own
 * price and allowance (so tiers and packages price the whole period, not the late units alone), taxed at the line's
 * rates. `minimum`: an absolute amount below which nothing is issued now.
 */
export function usageAdjustment(line: SettledLine, currentUsage: Decimal, currency: string, minimum: Decimal = new D(0)): UsageAdjustment {
  const usageDelta = currentUsage.minus(line.settledUsage)
  const amount = roundMoney(priced(line, currentUsage, currency).minus(priced(line, line.settledUsage, currency)), currency)
  const tax = (line.taxRates ?? []).filter((r) => r.tax_rate_type === 'percentage').reduce((t, r) => t.plus(taxAmount(r, amount, currency)), new D(0))
  const kind = amount.isZero() ? 'none' : amount.isPos() ? 'charge' : 'credit'
  return { kind, usageDelta, amount, tax, total: amount.plus(tax), deferred: kind !== 'none' && amount.abs().lt(minimum) }
}

/**
 * The key that makes an adjustment happen once: one per (invoice line, usage it settles up to). A rerun, a crash and
 * replay, or a second job finds the same key taken; new usage later gives a new key.
 */
export const adjustmentKey = (invoiceLineId: string, currentUsage: Decimal): string =>
  createHash('sha256').update(`${invoiceLineId}\n${currentUsage.toFixed()}`).digest('hex').slice(0, 32)
