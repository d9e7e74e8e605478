// Subscription rules as pure functions: which plan prices a subscription takes, the specification's
// creation rules 1–5, the first billing period and status, and how a subscription moves on in time.
// Every period boundary comes from periods.ts; every rejection is a validation_error naming the field.
import { AppError, validationError } from './errors.ts'
import { parseDecimal } from './money.ts'
import { IANAZone } from 'luxon'
import { calendarAnchor, periodContaining, type BillingPeriod, type Period, DAY_MS } from './periods.ts'

export type SubscriptionStatus = 'draft' | 'not_started' | 'trialing' | 'active' | 'incomplete' | 'cancelled'
export type SubscriptionType = 'standalone' | 'parent' | 'inherited' | 'delegated_invoicing' | 'grouped_invoicing'
export type BillingCycle = 'anniversary' | 'calendar'

/** What of a price the rules read. */
export interface PlanPrice {
  id: string
  type: 'FIXED' | 'USAGE'
  currency: string
  billing_cadence: 'RECURRING' | 'ONETIME'
  billing_period: string
  billing_period_count: number
  trial_period_days: number
}

/**
 * The prices a subscription takes from its plan: those in its currency billed on its period and count,
 * and the one-time charges in its currency (rule 9: ONETIME prices are always included).
 */
export function matchPrices<P extends PlanPrice>(prices: readonly P[], currency: string, period: BillingPeriod, count: number): P[] {
  const cur = currency.toUpperCase()
  return prices.filter(
    (p) => p.currency === cur && (p.billing_cadence === 'ONETIME' || (p.billing_period === period && p.billing_period_count === count)),
  )
}

export interface TrialInput {
  start: Date
  trial_period_days?: number
  trial_start?: Date
  trial_end?: Date
}

/**
 * Rules 1 and 2: trial_period_days and explicit trial dates exclude each other; without either, the
 * trial length is the plan's recurring fixed prices' trial_period_days, which must agree. A zero-day
 * trial is no trial.
 */
export function resolveTrial(input: TrialInput, prices: readonly PlanPrice[]): { start: Date; end: Date } | null {
  const explicit = input.trial_start !== undefined || input.trial_end !== undefined
  if (input.trial_period_days !== undefined && explicit) {
    const field = input.trial_start !== undefined ? 'trial_start' : 'trial_end'
    throw new AppError('validation_error', `trial_period_days cannot be combined with ${field}: send one or the other`, {
      trial_period_days: `cannot be combined with ${field}`,
      [field]: 'cannot be combined with trial_period_days',
    })
  }
  if (explicit) {
    if (!input.trial_end) throw validationError('trial_end', 'is required with trial_start')
    const trialStart = input.trial_start ?? input.start
    if (trialStart > input.start) throw validationError('trial_start', 'must not be after start_date')
    if (input.trial_end <= input.start) throw validationError('trial_end', 'must be after start_date')
    return { start: trialStart, end: input.trial_end }
  }
  let days = input.trial_period_days
  if (days === undefined) {
    const fixed = prices.filter((p) => p.type === 'FIXED' && p.billing_cadence === 'RECURRING')
    const lengths = new Set(fixed.map((p) => p.trial_period_days))
    if (lengths.size > 1) {
      const listed = fixed.map((p) => `${p.id} has ${p.trial_period_days}`).join(', ')
      throw new AppError('validation_error', `the plan's recurring fixed prices disagree on the trial length (${listed} days); send trial_period_days`, {
        trial_period_days: "the plan's recurring fixed prices disagree on the trial length",
        price_ids: fixed.map((p) => p.id),
      })
    }
    days = fixed[0]?.trial_period_days ?? 0
  }
  if (days === 0) return null
  return { start: input.start, end: new Date(input.start.getTime() + days * DAY_MS) }
}

/** Rule 3: a billing anchor only makes sense for anniversary billing; calendar billing anchors itself. */
export function checkAnchor(cycle: BillingCycle, anchor: Date | undefined): void {
  if (anchor && cycle !== 'anniversary') throw validationError('billing_anchor', `is only accepted with billing_cycle anniversary, not ${cycle}`)
}

/**
 * Rule 5: auto_invoice_threshold is zero or greater, for standalone subscriptions whose recurring
 * prices are all usage prices (one-time charges aside).
 */
export function checkThreshold(threshold: string | undefined, type: SubscriptionType, prices: readonly PlanPrice[]): void {
  if (threshold === undefined) return
  let value
  try {
    value = parseDecimal(threshold)
  } catch {
    throw validationError('auto_invoice_threshold', 'must be a decimal number as a string')
  }
  if (value.lt(0)) throw validationError('auto_invoice_threshold', 'must be zero or greater')
  if (type !== 'standalone') throw validationError('auto_invoice_threshold', `is only valid for standalone subscriptions, not ${type}`)
  const recurring = prices.filter((p) => p.billing_cadence === 'RECURRING')
  const fixed = recurring.find((p) => p.type !== 'USAGE')
  if (recurring.length === 0 || fixed) {
    throw validationError('auto_invoice_threshold', `is only valid on usage-based plans${fixed ? `; price ${fixed.id} is a fixed price` : ''}`)
  }
}

/** The billing calendar of a subscription. */
export interface Schedule {
  billing_cycle: BillingCycle
  billing_period: BillingPeriod
  billing_period_count: number
  /** IANA zone the calendar is kept in. */
  timezone: string
}

/** Anchor of the billing periods: billing starts when the trial ends, or at the start without one. */
export function billingAnchor(schedule: Schedule, billingStart: Date, explicit?: Date): Date {
  if (schedule.billing_cycle === 'calendar') return calendarAnchor(billingStart, schedule.billing_period, schedule.timezone)
  return explicit ?? billingStart
}

/** The facts a subscription's state follows from. */
export interface Timeline extends Schedule {
  start_date: Date
  end_date: Date | null
  trial_start: Date | null
  trial_end: Date | null
  billing_anchor: Date
}

/**
 * The billing period in force at `at`: the trial while it lasts, else the anchor's period holding
 * `at`, cut to start no earlier than billing and end no later than end_date. Before the start it is
 * the first period.
 */
export function periodAt(t: Timeline, at: Date): Period {
  if (t.trial_end && at < t.trial_end) return { start: t.trial_start ?? t.start_date, end: t.trial_end }
  const billingStart = t.trial_end ?? t.start_date
  const from = at < billingStart ? billingStart : at
  const p = periodContaining(t.billing_anchor, t.billing_period, t.billing_period_count, from, t.timezone)
  const start = p.start < billingStart ? billingStart : p.start
  const end = t.end_date && t.end_date < p.end ? t.end_date : p.end
  return { start, end }
}

/** Status at creation: not started before its start, trialing during a trial, incomplete while it waits for a first payment. */
export function initialStatus(t: Timeline, now: Date, awaitsPayment: boolean): SubscriptionStatus {
  if (now < t.start_date) return 'not_started'
  if (t.trial_end && now < t.trial_end) return 'trialing'
  return awaitsPayment ? 'incomplete' : 'active'
}

export interface SubscriptionState extends Timeline {
  subscription_status: SubscriptionStatus
  current_period_start: Date
  current_period_end: Date
  cancel_at: Date | null
  cancelled_at: Date | null
}

export interface Advance {
  changes: Partial<SubscriptionState>
  /** Outbox event types, in order. */
  events: string[]
}

/**
 * Moves a subscription to `now`: a due cancellation or end ends it; a reached start activates it; an
 * ended trial activates it; a finished period rolls to the next. Undefined when nothing is due.
 * Incomplete subscriptions wait for their payment and only roll their period.
 */
export function advance(s: SubscriptionState, now: Date): Advance | undefined {
  // A draft has no life yet (its dates are provisional until activation); a cancelled one has none left.
  if (s.subscription_status === 'cancelled' || s.subscription_status === 'draft') return undefined
  const endAt = [s.cancel_at, s.end_date].filter((d): d is Date => d !== null && d <= now).sort((a, b) => a.getTime() - b.getTime())[0]
  if (endAt) return { changes: { subscription_status: 'cancelled', cancelled_at: endAt, end_date: endAt }, events: ['subscription.cancelled'] }
  const changes: Partial<SubscriptionState> = {}
  const events: string[] = []
  const status = s.subscription_status
  // Reaching the start (into a trial or straight to active) or the end of the trial activates it.
  if ((status === 'not_started' && s.start_date <= now) || (status === 'trialing' && s.trial_end && s.trial_end <= now)) {
    changes.subscription_status = initialStatus(s, now, false)
    events.push('subscription.activated')
  }
  if (s.current_period_end <= now) {
    const p = periodAt(s, now)
    changes.current_period_start = p.start
    changes.current_period_end = p.end
    events.push('subscription.renewal.due')
  }
  return events.length > 0 ? { changes, events } : undefined
}

/** A phase as given: ascending, not overlapping, inside the subscription; only the last may stay open. */
export function checkPhases(phases: readonly { start_date: Date; end_date: Date | null }[], start: Date, end: Date | null): void {
  for (const [i, p] of phases.entries()) {
    const at = `phases[${i}]`
    if (p.start_date < start) throw validationError(`${at}.start_date`, 'must not be before the subscription start_date')
    if (p.end_date && p.end_date <= p.start_date) throw validationError(`${at}.end_date`, 'must be after its start_date')
    if (end && (p.start_date >= end || (p.end_date ?? end) > end)) throw validationError(`${at}.end_date`, 'must not reach past the subscription end_date')
    const next = phases[i + 1]
    if (next && (!p.end_date || p.end_date > next.start_date)) {
      throw validationError(`${at}.end_date`, `must end before phases[${i + 1}] starts: phases are in order and do not overlap`)
    }
  }
}

/** An effective time for a change: now when not given, else inside the current period and not in the past. */
export function effectiveAt(given: Date | undefined, now: Date, period: Period, field: string): Date {
  const at = given ?? now
  if (at < now && given) throw validationError(field, 'must not be in the past')
  if (at >= period.end || at < period.start) throw validationError(field, 'must lie inside the current billing period')
  return at
}

/** The calendar is kept in an IANA time zone, e.g. "Europe/Berlin". */
export function checkTimezone(timezone: string, field: string): void {
  if (!IANAZone.isValidZone(timezone)) throw validationError(field, `is not an IANA time zone: ${JSON.stringify(timezone)}`)
}

/** Quantities of fixed line items are whole or fractional units, never negative. */
export function parseQuantity(value: string, field: string) {
  try {
    const q = parseDecimal(value)
    if (q.lte(0)) throw new RangeError('not positive')
    return q
  } catch {
    throw validationError(field, 'must be a positive decimal number as a string')
  }
}

