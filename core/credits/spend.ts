// The entitlement check's verdict, pure: may a customer use `quantity` more of a feature now? A hard
// limit (is_soft_limit false) refuses what would pass it, counting usage stored, usage still in flight and
// active reservations; a subscription's spending limit refuses once accrued charges plus holds reach it.
import { D, type Decimal } from '../money.ts'

export type CheckReason = 'feature_not_entitled' | 'feature_disabled' | 'usage_limit_exceeded' | 'spending_limit_reached'

export interface CheckInput {
  /** null: no live subscription grants the feature. */
  entitlement: { feature_type: 'metered' | 'boolean' | 'static'; is_enabled: boolean; usage_limit: number | null; is_soft_limit: boolean } | null
  quantity: Decimal
  /** Usage stored for the period, in flight (accepted, not stored yet) and reserved by earlier checks. */
  stored: Decimal
  in_flight: Decimal
  reserved: Decimal
  /** The granting subscription's spending limit and what counts against it, in its currency; null when it has none. */
  spending: { limit: Decimal; accrued: Decimal; held: Decimal } | null
}

export interface CheckVerdict {
  allowed: boolean
  /** Usage left under the limit after what is counted (before this request); null when unlimited or not metered. */
  remaining: Decimal | null
  limit: number | null
  reason: CheckReason | null
}

/** Whether the spending limit is reached: accrued charges plus holds at or over it. */
export const spendingReached = (s: NonNullable<CheckInput['spending']>): boolean => s.accrued.plus(s.held).gte(s.limit)

export function checkEntitlement(input: CheckInput): CheckVerdict {
  const e = input.entitlement
  if (!e) return { allowed: false, remaining: null, limit: null, reason: 'feature_not_entitled' }
  const metered = e.feature_type === 'metered'
  const limit = metered ? e.usage_limit : null
  const used = input.stored.plus(input.in_flight).plus(input.reserved)
  const remaining = limit === null ? null : D.max(new D(limit).minus(used), 0)
  const verdict = (allowed: boolean, reason: CheckReason | null): CheckVerdict => ({ allowed, remaining, limit, reason })
  if (!e.is_enabled) return verdict(false, 'feature_disabled')
  if (limit !== null && !e.is_soft_limit && used.plus(input.quantity).gt(limit)) return verdict(false, 'usage_limit_exceeded')
  if (input.spending && spendingReached(input.spending)) return verdict(false, 'spending_limit_reached')
  return verdict(true, null)
}
