// A plan change's figures, pure: whether it is an upgrade or a downgrade, and Flexprice's proration_details
// summary of the billing engine's proration lines (the credit of the old plan, the charge of the new).
import { formatMoney, sumMoney, type Decimal } from './money.ts'
import type { Period } from './periods.ts'
import { utcDays } from './proration.ts'

export type ChangeType = 'upgrade' | 'downgrade' | 'lateral'

/** By what each plan's recurring fixed prices cost a period: more is an upgrade, less a downgrade. */
export function changeTypeOf(current: Decimal, target: Decimal): ChangeType {
  const cmp = target.cmp(current)
  return cmp > 0 ? 'upgrade' : cmp < 0 ? 'downgrade' : 'lateral'
}

export interface ProrationSummary {
  currency: string
  proration_date: Date
  current_period_start: Date
  current_period_end: Date
  days_used: number
  days_remaining: number
  /** The credit of the unused time, as a positive amount. */
  credit_amount: string
  credit_description: string
  charge_amount: string
  charge_description: string
  /** charge − credit: what the change costs (negative: what it gives back). */
  net_amount: string
}

/**
 * Flexprice's totals over the rounded proration lines (each line rounded once, as invoiced): credits are the
 * negative lines, charges the others. Days are UTC calendar days, as proration by day counts them.
 */
export function prorationSummary(lines: { description: string; amount: Decimal }[], currency: string, period: Period, at: Date): ProrationSummary {
  const credits = lines.filter((l) => l.amount.isNegative())
  const charges = lines.filter((l) => !l.amount.isNegative())
  const credit = sumMoney(credits.map((l) => l.amount.neg()))
  const charge = sumMoney(charges.map((l) => l.amount))
  return {
    currency,
    proration_date: at,
    current_period_start: period.start,
    current_period_end: period.end,
    days_used: at > period.start ? utcDays(period.start, at) : 0,
    days_remaining: at < period.end ? utcDays(at, period.end) : 0,
    credit_amount: formatMoney(credit, currency),
    credit_description: credits.map((l) => l.description).join('; '),
    charge_amount: formatMoney(charge, currency),
    charge_description: charges.map((l) => l.description).join('; '),
    net_amount: formatMoney(charge.minus(credit), currency),
  }
}
