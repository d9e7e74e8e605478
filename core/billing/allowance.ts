// Entitlement allowances: an entitlement's `usage_limit` units per period are included in the plan,
// and only usage above them is priced. What happens above the limit depends on the kind of limit:
// - soft limit: usage may go on past the limit, and that overage is billed;
// - hard limit: access stops at the limit, so every unit the customer could use is included. Units that
//   were recorded past it anyway (enforcement lags ingestion) are reported, not billed: charging for
//   usage the product promised to refuse would surprise the customer.
// No allowance applies, and all usage is billed, when there is no entitlement, when `usage_limit` is
// null (null means "no limit on access", not "free") or when the entitlement is disabled.
import { D, type Decimal } from '../money.ts'
import { BILLING_PERIODS, calendarAnchor, periodsBetween, type BillingPeriod, type Period } from '../periods.ts'

/** The fields of an Entitlement that matter to billing. */
export type Allowance = { usage_limit: number | null; is_soft_limit?: boolean; is_enabled?: boolean }

export type AllowanceResult = {
  /** Usage covered by the allowance. */
  included: Decimal
  /** Usage to price (from zero: the allowance takes the first units, so tiers start after it). */
  billable: Decimal
  /** Hard limit only: usage above the limit that is not billed. */
  unbilled_over_limit: Decimal
}

export function applyAllowance(usage: Decimal, allowance: Allowance | null | undefined): AllowanceResult {
  if (!usage.isFinite() || usage.isNeg()) throw new RangeError(`usage must be a non-negative quantity, got ${usage.toString()}`)
  const zero = new D(0)
  if (!allowance || allowance.usage_limit == null || allowance.is_enabled === false) return { included: zero, billable: usage, unbilled_over_limit: zero }
  const limit = allowance.usage_limit
  if (!Number.isSafeInteger(limit) || limit < 0) throw new RangeError(`usage_limit must be a non-negative integer, got ${limit}`)
  const included = D.min(usage, limit)
  const over = usage.minus(included)
  return allowance.is_soft_limit ? { included, billable: over, unbilled_over_limit: zero } : { included, billable: zero, unbilled_over_limit: over }
}

/** The same allowance given once per window (a DAILY limit on a monthly plan: once a day), summed. */
export function applyAllowancePerWindow(usages: readonly Decimal[], allowance: Allowance | null | undefined): AllowanceResult {
  const zero = new D(0)
  return usages
    .map((u) => applyAllowance(u, allowance))
    .reduce((acc, r) => ({ included: acc.included.plus(r.included), billable: acc.billable.plus(r.billable), unbilled_over_limit: acc.unbilled_over_limit.plus(r.unbilled_over_limit) }), { included: zero, billable: zero, unbilled_over_limit: zero })
}

/**
 * The windows of `usage` that each get the allowance: with a reset period shorter than the billing period
 * (usage_reset_period DAILY on a monthly plan), one per calendar reset period in the time zone, cut to the
 * usage window; otherwise the usage window itself (one allowance per billing period, as before).
 */
export function allowanceWindows(usage: Period, reset: string | null | undefined, billing: { period: BillingPeriod; count: number }, timeZone?: string): Period[] {
  const r = BILLING_PERIODS.indexOf(reset as BillingPeriod)
  const b = BILLING_PERIODS.indexOf(billing.period)
  if (r < 0 || r > b || (r === b && billing.count <= 1)) return [usage]
  const period = reset as BillingPeriod
  return periodsBetween(calendarAnchor(usage.start, period, timeZone), period, 1, usage.start, usage.end, timeZone).map((p) => ({
    start: p.start < usage.start ? usage.start : p.start,
    end: p.end > usage.end ? usage.end : p.end,
  }))
}
