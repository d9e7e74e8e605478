// Entitlement allowances: an entitlement's `usage_limit` units per period are included in the plan,
// and only usage above them is priced. What happens above the limit depends on the kind of limit:
// - soft limit: usage may go on past the limit, and that overage is billed;
// - hard limit: access stops at the limit, so every unit the customer could use is included. Units that
//   were recorded past it anyway (enforcement lags ingestion) are reported, not billed: charging for
//   usage the product promised to refuse would surprise the customer.
// No allowance applies, and all usage is billed, when there is no entitlement, when `usage_limit` is
// null (null means "no limit on access", not "free") or when the entitlement is disabled.
import { D, type Decimal } from '../money.ts'

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
