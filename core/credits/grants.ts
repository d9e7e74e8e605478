// Credit grant applications: which periods of a grant are due for a subscription, one application each.
// Pure: `now` comes from the caller. All period arithmetic is periods.ts's, in the customer's time zone.
import type { Decimal } from '../money.ts'
import { periodBoundary, periodsBetween, type BillingPeriod } from '../periods.ts'

export type ExpirationUnit = 'DAY' | 'WEEK' | 'MONTH' | 'YEAR'
export type ApplicationReason = 'first_time_recurring_credit_grant' | 'recurring_credit_grant' | 'onetime_credit_grant'

export interface CreditGrant {
  id: string
  scope: 'PLAN' | 'SUBSCRIPTION'
  plan_id?: string | null
  subscription_id?: string | null
  cadence: 'ONETIME' | 'RECURRING'
  credits: Decimal
  period?: BillingPeriod | null
  period_count?: number | null
  /** SUBSCRIPTION scope only; a PLAN grant's periods start at each subscription's start. */
  credit_grant_anchor?: Date | null
  start_date?: Date | null
  /** Periods starting at or after it get nothing. */
  end_date?: Date | null
  expiration_type: 'NEVER' | 'DURATION' | 'BILLING_CYCLE'
  expiration_duration?: number | null
  expiration_duration_unit?: ExpirationUnit | null
  priority?: number | null
}

export interface GrantSubscription {
  id: string
  plan_id: string
  start_date: Date
  /** Periods starting at or after it get nothing. */
  end_date?: Date | null
  customer_timezone?: string
}

export interface DueApplication {
  credit_grant_id: string
  subscription_id: string
  credits: Decimal
  application_reason: ApplicationReason
  /** Grant credits in advance: at the period start, or when the grant becomes active inside the first period. */
  scheduled_for: Date
  period_start: Date
  /** null for ONETIME. */
  period_end: Date | null
  /** Of the credits granted; null = never. */
  expiry_date: Date | null
  priority: number | null
  /** grant + subscription + period start: a rerun finds the same key, so each period is applied once. */
  idempotency_key: string
}

// A duration of n units is the first boundary of an n-unit series starting at the application.
const UNIT_PERIOD: Record<ExpirationUnit, BillingPeriod> = { DAY: 'DAILY', WEEK: 'WEEKLY', MONTH: 'MONTHLY', YEAR: 'ANNUAL' }

type MaybeDate = Date | null | undefined
const later = (a: Date, b: MaybeDate): Date => (b && b > a ? b : a)
const earlier = (a: Date, b: MaybeDate): Date => (b && b < a ? b : a)

function check(grant: CreditGrant, sub: GrantSubscription): void {
  if (grant.scope === 'SUBSCRIPTION' ? grant.subscription_id !== sub.id : grant.plan_id !== sub.plan_id)
    throw new RangeError(`credit grant ${grant.id} (${grant.scope}) does not belong to subscription ${sub.id}`)
  if (!grant.credits.gt(0)) throw new RangeError(`credit grant ${grant.id}: credits must be greater than 0`)
  if (grant.cadence === 'RECURRING' && !grant.period) throw new RangeError(`credit grant ${grant.id}: a RECURRING grant needs a period`)
  if (grant.expiration_type === 'BILLING_CYCLE' && grant.cadence !== 'RECURRING')
    throw new RangeError(`credit grant ${grant.id}: BILLING_CYCLE expiry needs a RECURRING grant (a ONETIME grant has no period)`)
  if (grant.expiration_type === 'DURATION') {
    const n = grant.expiration_duration
    if (!Number.isInteger(n) || n! < 1) throw new RangeError(`credit grant ${grant.id}: expiration_duration must be an integer >= 1`)
    if (!UNIT_PERIOD[grant.expiration_duration_unit!]) throw new RangeError(`credit grant ${grant.id}: expiration_duration_unit must be DAY, WEEK, MONTH or YEAR`)
  }
}

function expiryOf(grant: CreditGrant, scheduledFor: Date, periodEnd: Date | null, timeZone?: string): Date | null {
  if (grant.expiration_type === 'NEVER') return null
  if (grant.expiration_type === 'BILLING_CYCLE') return periodEnd
  return periodBoundary(scheduledFor, UNIT_PERIOD[grant.expiration_duration_unit!], grant.expiration_duration!, 1, timeZone)
}

/**
 * Applications due by `now` (scheduled_for <= now), oldest first: a subscription that started in the past gets
 * one per elapsed period plus the current one (rule 14). With `since`, only those scheduled at or after it (the
 * job: the end of the last applied period; upcoming applications: since = now and a later `now`).
 */
export function dueApplications(grant: CreditGrant, sub: GrantSubscription, now: Date, opts: { since?: Date } = {}): DueApplication[] {
  check(grant, sub)
  const tz = sub.customer_timezone
  const active = later(sub.start_date, grant.start_date)
  // Date counts whole ms, so "starts before now + 1 ms" is "starts at or before now".
  const to = earlier(earlier(new Date(now.getTime() + 1), sub.end_date), grant.end_date)
  const since = opts.since ?? active
  const application = (start: Date, end: Date | null, reason: ApplicationReason): DueApplication => {
    const scheduled_for = later(start, active)
    return {
      credit_grant_id: grant.id,
      subscription_id: sub.id,
      credits: grant.credits,
      application_reason: reason,
      scheduled_for,
      period_start: start,
      period_end: end,
      expiry_date: expiryOf(grant, scheduled_for, end, tz),
      priority: grant.priority ?? null,
      idempotency_key: `${grant.id}:${sub.id}:${start.toISOString()}`,
    }
  }
  if (grant.cadence === 'ONETIME') return active < to && active >= since ? [application(active, null, 'onetime_credit_grant')] : []
  const anchor = grant.scope === 'SUBSCRIPTION' ? (grant.credit_grant_anchor ?? sub.start_date) : sub.start_date
  // The period holding `active` is the first: it starts at or before `active`, every later one after it.
  return periodsBetween(anchor, grant.period!, grant.period_count ?? 1, later(active, since), to, tz)
    .map((p) => application(p.start, p.end, p.start <= active ? 'first_time_recurring_credit_grant' : 'recurring_credit_grant'))
    .filter((a) => a.scheduled_for >= since)
}
