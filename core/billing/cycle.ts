// The billing calendar of a subscription and what each billing point charges, pure. Amounts come from
// the pricing and proration modules; this file only decides which line is billed for which span.
//
// A subscription is billed at points: the trial start (a zero invoice, rule 6), the billing start (the
// first period's ADVANCE charges), then every period end (the ended period's ARREAR and usage charges,
// and the next period's ADVANCE charges). A subscription that ends inside a period is billed a last time
// at its end. Advance charges always cover the whole period: a mid-period change (a cancellation, a new
// quantity) is settled by proration lines as the changed line items say: at the next point, on an update
// invoice at the change, or not at all.
import { D, type Decimal } from '../money.ts'
import { periodContaining, type BillingPeriod, type Period } from '../periods.ts'
import type { PriceInput } from '../pricing/index.ts'
import { priceAmount } from '../pricing/index.ts'
import { prorate, prorationCharge, prorationCredit } from '../proration.ts'

type BillingReason =
  | 'SUBSCRIPTION_CREATE'
  | 'SUBSCRIPTION_CYCLE'
  | 'SUBSCRIPTION_UPDATE'
  | 'SUBSCRIPTION_TRIAL_START'
  | 'SUBSCRIPTION_TRIAL_END'
  | 'PRORATION'
  | 'MANUAL'
  | 'AUTO_INVOICE_THRESHOLD'

export interface Cycle {
  start_date: Date
  /** When billing stops: the end date or a cancellation, whichever comes first; null while open. */
  end: Date | null
  trial_start: Date | null
  trial_end: Date | null
  billing_anchor: Date
  billing_period: BillingPeriod
  billing_period_count: number
  timezone: string
  /** create_prorations: a cut period's last invoice settles the advance charges (reason PRORATION). */
  prorate: boolean
}

/** A part [start, end) of a billing period; proration divides by the whole period `full`. */
export interface Span extends Period {
  full: Period
}

export interface BillingPoint {
  /** 1 for the first point of the subscription, counting every point in order. */
  sequence: number
  /** When the invoice is due to be made. */
  at: Date
  reason: BillingReason
  /** The invoice's period. */
  period: Period
  /** Fixed ARREAR lines and usage are billed for this span (what was used); null on the first points. */
  arrear: Span | null
  /** Fixed ADVANCE lines are billed for this span (what comes); null when the subscription ends. */
  advance: Span | null
  /** The trial's zero invoice. */
  trial: boolean
}

const later = (a: Date, b: Date): Date => (a > b ? a : b)

function periodAt(c: Cycle, at: Date): Period {
  return periodContaining(c.billing_anchor, c.billing_period, c.billing_period_count, at, c.timezone)
}

/** Every billing point of the subscription in order; without an end the series does not stop. */
export function* billingPoints(c: Cycle): Generator<BillingPoint> {
  let sequence = 1
  const ended = (t: Date) => c.end !== null && c.end <= t
  if (c.trial_start && c.trial_end && c.trial_start < c.trial_end) {
    const full = { start: c.trial_start, end: c.trial_end }
    const period = { start: c.trial_start, end: c.end && c.end < c.trial_end ? c.end : c.trial_end }
    yield { sequence: sequence++, at: c.trial_start, reason: 'SUBSCRIPTION_TRIAL_START', period, arrear: null, advance: { ...period, full }, trial: true }
  }
  const billingStart = c.trial_end ?? c.start_date
  if (ended(billingStart)) return
  let full = periodAt(c, billingStart)
  let span: Span = { start: later(full.start, billingStart), end: full.end, full }
  const first = c.trial_end ? 'SUBSCRIPTION_TRIAL_END' : 'SUBSCRIPTION_CREATE'
  yield { sequence: sequence++, at: billingStart, reason: first, period: { start: span.start, end: span.end }, arrear: null, advance: span, trial: false }
  for (;;) {
    // A subscription ending inside the period is billed at its end, with the prorations of the cut.
    const cut = c.end !== null && c.end < span.end
    const arrear: Span = cut ? { ...span, end: c.end! } : span
    const at = arrear.end
    const next: Span | null = ended(at) ? null : ((f) => ({ start: f.start, end: f.end, full: f }))(periodAt(c, at))
    const reason = cut && c.prorate ? 'PRORATION' : 'SUBSCRIPTION_CYCLE'
    yield { sequence: sequence++, at, reason, period: { start: arrear.start, end: arrear.end }, arrear, advance: next, trial: false }
    if (!next) return
    full = next.full
    span = next
  }
}

/** The points due by `until` (at ≤ until) with a sequence above `after`. */
export function duePoints(c: Cycle, until: Date, after = 0): BillingPoint[] {
  const due: BillingPoint[] = []
  for (const p of billingPoints(c)) {
    if (p.at > until) break
    if (p.sequence > after) due.push(p)
  }
  return due
}

/** The next point after `now`: the upcoming invoice. Undefined once everything was billed. */
export function nextPoint(c: Cycle, now: Date): BillingPoint | undefined {
  for (const p of billingPoints(c)) if (p.at > now) return p
  return undefined
}

/**
 * How a line item's start or end inside a billing period is settled (a modification's
 * proration_behavior): by the next billing point (create_prorations), on an invoice at the change
 * (always_invoice), or not at all (none).
 */
export type ProrationBehavior = 'create_prorations' | 'always_invoice' | 'none'

/** What a subscription line item is, as far as billing goes. */
export interface CycleLine {
  id: string
  price_type: 'FIXED' | 'USAGE'
  invoice_cadence: 'ADVANCE' | 'ARREAR'
  /** ONETIME lines are billed once, on the first point whose span holds their start (rule 9). */
  onetime: boolean
  start_date: Date
  end_date: Date | null
  quantity: Decimal
  price: PriceInput
  /** How its start and its end inside a period are settled; null or absent: as the subscription prorates. */
  start_proration?: ProrationBehavior | null
  end_proration?: ProrationBehavior | null
}

type ChargeKind = 'advance' | 'arrear' | 'onetime' | 'trial' | 'usage' | 'proration_credit' | 'proration_charge'

/** One charge of a billing point: a fixed amount (unrounded) or a usage window to measure and price. */
export interface Charge {
  line: CycleLine
  kind: ChargeKind
  /** What the charge covers. */
  period: Period
  /** Fixed charges: the unrounded amount. Usage charges: none (the caller measures the window). */
  amount?: Decimal
  /** Fixed charges: the share of the whole period billed (1 for a whole period). */
  factor?: Decimal
  description?: string
}

const overlap = (a: Period, l: CycleLine): Period | null => {
  const start = later(a.start, l.start_date)
  const end = l.end_date && l.end_date < a.end ? l.end_date : a.end
  return start < end ? { start, end } : null
}
const inForceAt = (l: CycleLine, t: Date): boolean => l.start_date <= t && (l.end_date === null || l.end_date > t)
const holds = (p: Period, t: Date): boolean => p.start <= t && t < p.end

/** The whole-period amount of a fixed line at its quantity, unrounded. */
const periodAmount = (l: CycleLine): Decimal => priceAmount(l.price, l.quantity).amount

function fixedShare(l: CycleLine, span: Span, part: Period, kind: ChargeKind): Charge {
  const { amount, factor } = prorate({ amount: periodAmount(l), periodStart: span.full.start, periodEnd: span.full.end, from: part.start, to: part.end })
  return { line: l, kind, period: part, amount, factor }
}

export interface ChargeOptions {
  /** The subscription settles mid-period changes of advance lines (create_prorations) unless a line says otherwise. */
  prorate: boolean
  /** Usage is measured from here when an auto-invoice threshold already billed the start of the span. */
  usageFrom?: Date
  /** Line labels for proration descriptions. */
  label?: (l: CycleLine) => string
}

/**
 * What point `p` charges for `lines`: arrear fixed lines for their part of the ended span, usage
 * windows, advance lines in force at the next span's start for the whole span, one-time charges, and
 * with prorations the settlement of the ended span: unused time of advance lines that ended inside
 * it is credited, advance lines that started inside it are charged for the rest of it.
 */
export function pointCharges(p: BillingPoint, lines: readonly CycleLine[], opts: ChargeOptions): Charge[] {
  const charges: Charge[] = []
  const label = opts.label ?? ((l: CycleLine) => l.id)
  const recurring = lines.filter((l) => !l.onetime)
  if (p.trial) {
    for (const l of recurring.filter((x) => x.price_type === 'FIXED' && inForceAt(x, p.advance!.start))) charges.push({ line: l, kind: 'trial', period: p.period, amount: new D(0), factor: new D(0) })
    return charges
  }
  const a = p.arrear
  if (a) {
    for (const l of recurring.filter((x) => x.price_type === 'FIXED' && x.invoice_cadence === 'ARREAR')) {
      const part = overlap(a, l)
      if (part) charges.push(fixedShare(l, a, part, 'arrear'))
    }
    const usageSpan = opts.usageFrom && opts.usageFrom > a.start ? { start: opts.usageFrom, end: a.end } : a
    for (const l of recurring.filter((x) => x.price_type === 'USAGE')) {
      const part = overlap(usageSpan, l)
      if (part) charges.push({ line: l, kind: 'usage', period: part })
    }
    // Mid-period starts and ends of advance lines that are left to the cycle (create_prorations).
    const fallback: ProrationBehavior = opts.prorate ? 'create_prorations' : 'none'
    for (const l of recurring.filter((x) => x.price_type === 'FIXED' && x.invoice_cadence === 'ADVANCE')) {
      charges.push(...prorations(l, a, (b) => b === 'create_prorations', fallback, label(l)))
    }
  }
  const n = p.advance
  if (n) {
    for (const l of recurring.filter((x) => x.price_type === 'FIXED' && x.invoice_cadence === 'ADVANCE' && inForceAt(x, n.start))) charges.push(fixedShare(l, n, { start: n.start, end: n.end }, 'advance'))
  }
  // One-time charges: in advance on the point whose advance span holds their start, in arrear on the one whose arrear span does.
  for (const l of lines.filter((x) => x.onetime && x.price_type === 'FIXED')) {
    const span = l.invoice_cadence === 'ADVANCE' ? n : a
    if (span && holds(span, l.start_date)) charges.push({ line: l, kind: 'onetime', period: { start: l.start_date, end: span.end }, amount: periodAmount(l), factor: new D(1) })
  }
  return charges
}

/** Which settlements of a line's start or end (made as `behavior`, at `at`) a caller bills. */
export type Settles = (behavior: ProrationBehavior, at: Date) => boolean

/**
 * The proration charges of a fixed ADVANCE line inside span `a`, for the starts and ends `settles`
 * takes: a start inside the span charges the rest of the period; an end inside the period credits its
 * unused rest, when that was paid (the line was billed at the span's start, or its start was charged).
 * A start and an end taken together make one charge for the time in between. `fallback` is the
 * behavior of a start or end no modification set (the subscription's own).
 */
export function prorations(l: CycleLine, a: Span, settles: Settles, fallback: ProrationBehavior, label: string): Charge[] {
  const change = { amount: periodAmount(l), periodStart: a.full.start, periodEnd: a.full.end, label }
  const start = l.start_proration ?? fallback
  const end = l.end_proration ?? fallback
  const startsInside = l.start_date > a.start && l.start_date < a.end
  const endsInside = l.end_date !== null && l.end_date > a.start && l.end_date < a.full.end
  const paid = inForceAt(l, a.start) || (startsInside && start !== 'none')
  const credit = endsInside && paid && settles(end, l.end_date!) ? prorationCredit({ ...change, at: l.end_date! }) : null
  if (startsInside && settles(start, l.start_date)) {
    const charge = prorationCharge({ ...change, at: l.start_date })
    const period = { start: l.start_date, end: credit ? l.end_date! : a.full.end }
    return [{ line: l, kind: 'proration_charge', period, amount: charge.amount.plus(credit?.amount ?? 0), description: charge.description }]
  }
  return credit ? [{ line: l, kind: 'proration_credit', period: { start: l.end_date!, end: a.full.end }, amount: credit.amount, description: credit.description }] : []
}
