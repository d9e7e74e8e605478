// Time periods for subscriptions, invoices and usage windows. Pure: every instant, "now" included, comes
// from the caller. Dates are UTC instants; calendar arithmetic happens in an IANA time zone (default UTC).
import { DateTime, FixedOffsetZone, IANAZone, type Zone } from 'luxon'

export type BillingPeriod = 'DAILY' | 'WEEKLY' | 'MONTHLY' | 'QUARTERLY' | 'HALF_YEARLY' | 'ANNUAL'
export const BILLING_PERIODS: readonly BillingPeriod[] = Object.freeze(['DAILY', 'WEEKLY', 'MONTHLY', 'QUARTERLY', 'HALF_YEARLY', 'ANNUAL'])

export type WindowSize = 'MINUTE' | '15MIN' | '30MIN' | 'HOUR' | '3HOUR' | '6HOUR' | '12HOUR' | 'DAY' | 'WEEK' | 'MONTH'
export const WINDOW_SIZES: readonly WindowSize[] = Object.freeze(['MINUTE', '15MIN', '30MIN', 'HOUR', '3HOUR', '6HOUR', '12HOUR', 'DAY', 'WEEK', 'MONTH'])

/** Half-open [start, end). */
export interface Period {
  start: Date
  end: Date
}

/** windowStart is the aligned bucket start (may precede the query); [start, end) is the part inside the query. */
export interface UsageWindow {
  windowStart: Date
  start: Date
  end: Date
}

const MAX_WINDOWS = 100_000

const MINUTE_MS = 60_000
const HOUR_MS = 3_600_000
export const DAY_MS = 86_400_000
const AVG_MONTH_MS = (365.2425 / 12) * DAY_MS // Gregorian average; only used to guess an index

// Adding months in luxon clamps the day of month (Jan 31 + 1 month = Feb 29 in 2024) and keeps the local time.
const STEP: Record<BillingPeriod, { days: number } | { months: number }> = {
  DAILY: { days: 1 },
  WEEKLY: { days: 7 },
  MONTHLY: { months: 1 },
  QUARTERLY: { months: 3 },
  HALF_YEARLY: { months: 6 },
  ANNUAL: { months: 12 },
}

// Longest bucket of each size when no clock change falls inside it (a change adds at most 2 h).
const SIZE_MS: Record<WindowSize, number> = {
  MINUTE: MINUTE_MS,
  '15MIN': 15 * MINUTE_MS,
  '30MIN': 30 * MINUTE_MS,
  HOUR: HOUR_MS,
  '3HOUR': 3 * HOUR_MS,
  '6HOUR': 6 * HOUR_MS,
  '12HOUR': 12 * HOUR_MS,
  DAY: DAY_MS,
  WEEK: 7 * DAY_MS,
  MONTH: 31 * DAY_MS,
}
const CALENDAR_SIZE: Partial<Record<WindowSize, BillingPeriod>> = { DAY: 'DAILY', WEEK: 'WEEKLY', MONTH: 'MONTHLY' }

// ---- validation -------------------------------------------------------------------------------------------

// UTC as luxon's fixed zone: an IANA zone asks Intl for every offset, ~4 ms of a month of daily windows.
function zoneOf(timeZone = 'UTC'): Zone {
  if (timeZone === 'UTC') return FixedOffsetZone.utcInstance
  const zone = IANAZone.create(timeZone)
  if (!zone.isValid) throw new RangeError(`unknown time zone: ${JSON.stringify(timeZone)}`)
  return zone
}

function ms(date: Date, name: string): number {
  const t = date instanceof Date ? date.getTime() : NaN
  if (Number.isNaN(t)) throw new RangeError(`${name} must be a valid Date`)
  return t
}

function checkSeries(period: BillingPeriod, count: number): void {
  if (!BILLING_PERIODS.includes(period)) throw new RangeError(`unknown billing period: ${JSON.stringify(period)}`)
  if (!Number.isInteger(count) || count < 1) throw new RangeError(`count must be an integer >= 1, got ${count}`)
}

const local = (t: number, zone: Zone): DateTime => DateTime.fromMillis(t, { zone })

// ---- subscription periods ---------------------------------------------------------------------------------

// Always computed from the anchor: stepping from the previous boundary would lose the day (Jan 31 -> Feb 29 -> Mar 29).
function boundaryMs(anchor: DateTime, period: BillingPeriod, count: number, n: number): number {
  const step = STEP[period]
  const k = n * count
  const dt = anchor.plus('days' in step ? { days: step.days * k } : { months: step.months * k })
  if (!dt.isValid) throw new RangeError(`period boundary ${n} is out of range`)
  return dt.toMillis()
}

// Index n of the period [boundary(n), boundary(n + 1)) holding `at`: guess from the average length, then adjust.
function indexContaining(anchor: DateTime, period: BillingPeriod, count: number, at: number): number {
  const step = STEP[period]
  const approx = 'days' in step ? step.days * DAY_MS : step.months * AVG_MONTH_MS
  let n = Math.floor((at - anchor.toMillis()) / (approx * count))
  while (boundaryMs(anchor, period, count, n) > at) n--
  while (boundaryMs(anchor, period, count, n + 1) <= at) n++
  return n
}

/** The n-th boundary after the anchor (n < 0: before it), keeping the anchor's local time, day clamped to month end. */
export function periodBoundary(anchor: Date, period: BillingPeriod, count: number, n: number, timeZone?: string): Date {
  checkSeries(period, count)
  if (!Number.isInteger(n)) throw new RangeError(`n must be an integer, got ${n}`)
  return new Date(boundaryMs(local(ms(anchor, 'anchor'), zoneOf(timeZone)), period, count, n))
}

/** The period of the anchor's series that contains `at` (start <= at < end), also before the anchor. */
export function periodContaining(anchor: Date, period: BillingPeriod, count: number, at: Date, timeZone?: string): Period {
  checkSeries(period, count)
  const a = local(ms(anchor, 'anchor'), zoneOf(timeZone))
  const n = indexContaining(a, period, count, ms(at, 'at'))
  return { start: new Date(boundaryMs(a, period, count, n)), end: new Date(boundaryMs(a, period, count, n + 1)) }
}

/** Consecutive periods from the one containing `from` to the last one starting before `to`; [] if to <= from. */
export function periodsBetween(anchor: Date, period: BillingPeriod, count: number, from: Date, to: Date, timeZone?: string): Period[] {
  checkSeries(period, count)
  const a = local(ms(anchor, 'anchor'), zoneOf(timeZone))
  const f = ms(from, 'from')
  const t = ms(to, 'to')
  const periods: Period[] = []
  if (t <= f) return periods
  let n = indexContaining(a, period, count, f)
  for (let start = boundaryMs(a, period, count, n); start < t; n++) {
    if (periods.length === MAX_WINDOWS) throw new RangeError(`periodsBetween: more than ${MAX_WINDOWS} periods requested`)
    const end = boundaryMs(a, period, count, n + 1)
    periods.push({ start: new Date(start), end: new Date(end) })
    start = end
  }
  return periods
}

// Start of the calendar period holding dt. ISO weeks: luxon's startOf('week') is Monday 00:00.
function calendarStart(dt: DateTime, period: BillingPeriod): DateTime {
  switch (period) {
    case 'DAILY':
      return dt.startOf('day')
    case 'WEEKLY':
      return dt.startOf('week')
    case 'MONTHLY':
      return dt.startOf('month')
    case 'QUARTERLY':
      return dt.startOf('quarter')
    case 'HALF_YEARLY':
      return dt.startOf('year').plus({ months: dt.month > 6 ? 6 : 0 })
    case 'ANNUAL':
      return dt.startOf('year')
  }
}

/** Anchor for billing_cycle = calendar: start of the calendar period containing `start`, in the time zone. */
export function calendarAnchor(start: Date, period: BillingPeriod, timeZone?: string): Date {
  checkSeries(period, 1)
  return calendarStart(local(ms(start, 'start'), zoneOf(timeZone)), period).toJSDate()
}

// ---- usage windows ----------------------------------------------------------------------------------------

const offsetMs = (zone: Zone, t: number): number => Math.round(zone.offset(t) * MINUTE_MS)
const mod = (a: number, m: number): number => ((a % m) + m) % m

// First instant in (lo, hi] whose UTC offset differs from lo's (the caller knows hi's does).
function offsetChange(zone: Zone, lo: number, hi: number): number {
  const o = offsetMs(zone, lo)
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2)
    if (offsetMs(zone, mid) === o) lo = mid
    else hi = mid
  }
  return hi
}

// Fixed-size buckets (m ms, dividing a day) start at every instant whose local clock reads a multiple of m, so
// hourly buckets stay 1 h long through DST while a 3-hour bucket spanning the change lasts 2 h or 4 h. Offset
// lookups are slow (Intl), so walk 6-hour chunks of constant offset (no zone changes twice within 6 h),
// bisecting a chunk where the offset changes; inside a chunk the boundaries are plain arithmetic.
function* clockBoundaries(zone: Zone, m: number, from: number): Generator<number, never> {
  for (let t = from, o = offsetMs(zone, t); ; ) {
    let until = t + 6 * HOUR_MS
    const next = offsetMs(zone, until)
    if (next !== o) until = offsetChange(zone, t, until)
    for (let b = t + mod(-(t + o), m); b < until; b += m) yield b
    t = until
    o = next
  }
}

// Bucket boundaries from the start of the bucket holding `from`, ascending, without end.
function* boundaries(size: WindowSize, from: number, zone: Zone, billingAnchor: Date | undefined): Generator<number, never> {
  // UTC's clocks never change: a day every 24 h from midnight, by arithmetic rather than the calendar's date steps
  // (~16 µs a day, and an analytics request computes its windows several times).
  const period = size === 'DAY' && zone.isUniversal ? undefined : CALENDAR_SIZE[size]
  if (!period) {
    // Start a day early (buckets are at most 12 h plus a clock change) and skip to the bucket holding `from`.
    const all = clockBoundaries(zone, SIZE_MS[size], from - DAY_MS)
    let [b, n] = [all.next().value, all.next().value]
    while (n <= from) [b, n] = [n, all.next().value]
    yield b
    yield n
    return yield* all
  }
  if (size === 'MONTH' && billingAnchor) {
    const a = local(ms(billingAnchor, 'billingAnchor'), zone)
    for (let n = indexContaining(a, 'MONTHLY', 1, from); ; n++) yield boundaryMs(a, 'MONTHLY', 1, n)
  }
  // Re-taking the calendar start after each step keeps every bucket at local midnight, even after a day whose
  // midnight did not exist (clocks jumping 00:00 -> 01:00).
  for (let b = calendarStart(local(from, zone), period); ; b = calendarStart(b.plus(STEP[period]), period)) yield b.toMillis()
}

/** Aligned, half-open usage buckets of `size` tiling [start, end), in order, none empty. */
export function usageWindows(start: Date, end: Date, size: WindowSize, opts: { billingAnchor?: Date; timeZone?: string } = {}): UsageWindow[] {
  if (!WINDOW_SIZES.includes(size)) throw new RangeError(`unknown window size: ${JSON.stringify(size)}`)
  const zone = zoneOf(opts.timeZone)
  const s = ms(start, 'start')
  const e = ms(end, 'end')
  if (e <= s) throw new RangeError(`usageWindows: end (${end.toISOString()}) must be after start (${start.toISOString()})`)
  const tooMany = (): RangeError => new RangeError(`usageWindows: more than ${MAX_WINDOWS} ${size} windows requested`)
  if ((e - s) / (SIZE_MS[size] + 2 * HOUR_MS) > MAX_WINDOWS) throw tooMany() // surely too many: refuse before building any
  const bounds = boundaries(size, s, zone, size === 'MONTH' ? opts.billingAnchor : undefined)
  const windows: UsageWindow[] = []
  for (let windowStart = bounds.next().value; windowStart < e; ) {
    if (windows.length === MAX_WINDOWS) throw tooMany()
    const windowEnd = bounds.next().value
    windows.push({ windowStart: new Date(windowStart), start: new Date(Math.max(windowStart, s)), end: new Date(Math.min(windowEnd, e)) })
    windowStart = windowEnd
  }
  return windows
}

// ---- proration counts -------------------------------------------------------------------------------------

/** Calendar days from start's local date to end's local date (time of day ignored; a 23 h or 25 h day counts 1). */
export function daysBetween(start: Date, end: Date, timeZone?: string): number {
  const zone = zoneOf(timeZone)
  const day = (d: Date, name: string): number => {
    const l = local(ms(d, name), zone)
    return Date.UTC(l.year, l.month - 1, l.day) / DAY_MS
  }
  return day(end, 'end') - day(start, 'start')
}

/** Whole seconds between two instants (sub-second parts dropped, as second-based proration counts them). */
export function secondsBetween(start: Date, end: Date): number {
  return Math.floor(ms(end, 'end') / 1000) - Math.floor(ms(start, 'start') / 1000)
}
