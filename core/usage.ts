// Usage arithmetic, pure: how a query range is cut into windows and buckets, which minutes the per-minute
// views cannot split, and how per-slice aggregates become window values. The store returns one aggregate
// per (slice, group); everything after that happens here, the same for the views and for raw rows.
import { Decimal } from 'decimal.js'
import type { AggregationType } from './meters.ts'
import { usageWindows, type UsageWindow, type WindowSize } from './periods.ts'

/** Sums of Decimal(38, 12) values and products with millisecond offsets stay exact at 80 digits. */
export const U = Decimal.clone({ precision: 80, rounding: Decimal.ROUND_HALF_UP })
/** Places kept by the two aggregations that divide (AVG, WEIGHTED_SUM), as meter_usage stores values. */
const RESULT_SCALE = 12

export interface CalendarOptions {
  billingAnchor?: Date
  timeZone?: string
}

/** A part of one window inside one bucket (or the whole window when the meter has no bucket size). */
export interface Slice {
  start: Date
  end: Date
  window: number
}

/** The query's windows: aligned windows of `size`, or the whole range as one. */
export function queryWindows(start: Date, end: Date, size: WindowSize | undefined, cal: CalendarOptions): UsageWindow[] {
  if (!size) return [{ windowStart: start, start, end }]
  // billing_anchor shapes MONTH windows only (usageWindows ignores it for the other sizes).
  return usageWindows(start, end, size, cal)
}

/** Windows cut by the meter's buckets: slices tile [start, end) in order. */
export function slicesOf(windows: readonly UsageWindow[], bucketSize: WindowSize | undefined, cal: CalendarOptions): Slice[] {
  return windows.flatMap((w, window) =>
    bucketSize ? usageWindows(w.start, w.end, bucketSize, cal).map((b) => ({ start: b.start, end: b.end, window })) : [{ start: w.start, end: w.end, window }],
  )
}

export const MINUTE = 60_000
export const HOUR = 3_600_000
export const DAY = 86_400_000

/**
 * The units (days, hours or minutes, UTC-aligned) holding a slice boundary that is not on a whole unit: a
 * pre-aggregated unit cannot be split there, so those units are read from a finer source (a day from its
 * hours, an hour from its minutes, a minute from raw rows). Boundaries with seconds, times of day or zone
 * offsets make them.
 */
export function splitUnits(slices: readonly Slice[], unitMs: number): Date[] {
  const cuts = new Set<number>()
  for (const s of slices) {
    for (const t of [s.start.getTime(), s.end.getTime()]) if (t % unitMs !== 0) cuts.add(t - (((t % unitMs) + unitMs) % unitMs))
  }
  return [...cuts].sort((a, b) => a - b).map((t) => new Date(t))
}

/** What the store returns per (slice, group): merged states of every row in the slice. */
export interface SliceAggregate {
  slice: number
  group: string
  events: Decimal
  sum: Decimal
  min: Decimal
  max: Decimal
  /** Σ value × (row time − base) in milliseconds; base is the query start. */
  valueMs: Decimal
  uniques: Decimal
  latest: Decimal
}

export interface ValueRules {
  type: AggregationType
  multiplier?: string
}

/** One group's value in one slice. WEIGHTED_SUM weighs each value by the share of the slice left after it. */
export function sliceValue(rules: ValueRules, a: SliceAggregate, slice: Slice, baseMs: number): Decimal {
  switch (rules.type) {
    case 'COUNT':
      return a.events
    case 'SUM':
      return a.sum
    case 'SUM_WITH_MULTIPLIER':
      return a.sum.times(new U(rules.multiplier ?? 1))
    case 'AVG':
      return a.events.isZero() ? new U(0) : a.sum.dividedBy(a.events).toDecimalPlaces(RESULT_SCALE)
    case 'MIN':
      return a.min
    case 'MAX':
      return a.max
    case 'COUNT_UNIQUE':
      return a.uniques
    case 'LATEST':
      return a.latest
    case 'WEIGHTED_SUM': {
      const end = new U(slice.end.getTime() - baseMs)
      const span = slice.end.getTime() - slice.start.getTime()
      return end.times(a.sum).minus(a.valueMs).dividedBy(span).toDecimalPlaces(RESULT_SCALE)
    }
  }
}

export interface WindowValue {
  value: Decimal
  /** Per group value (group_by meters only), summed into `value`. */
  groups: Map<string, Decimal>
}

/** Each window's value: the sum over its slices of the sum over groups; a window without rows is 0. */
export function windowValues(rules: ValueRules, slices: readonly Slice[], aggregates: readonly SliceAggregate[], windowCount: number, baseMs: number): WindowValue[] {
  const out: WindowValue[] = Array.from({ length: windowCount }, () => ({ value: new U(0), groups: new Map() }))
  for (const a of aggregates) {
    const slice = slices[a.slice]
    const v = sliceValue(rules, a, slice, baseMs)
    const w = out[slice.window]
    w.value = w.value.plus(v)
    w.groups.set(a.group, (w.groups.get(a.group) ?? new U(0)).plus(v))
  }
  return out
}

/** Sums over windows equal the total only for these; the others are computed over the whole range. */
export const isAdditive = (type: AggregationType): boolean => type === 'COUNT' || type === 'SUM' || type === 'SUM_WITH_MULTIPLIER'

/** A resolved row with its instant: the input of the in-memory aggregation (ad hoc queries, test oracles). */
export interface TimedRow {
  at: number
  eventId: string
  value: string
  groupValue: string
  uniqueValue: string
}

// Index of the last slice starting at or before t; the rows given lie in [first start, last end).
function sliceIndex(slices: readonly Slice[], t: number): number {
  let lo = 0
  let hi = slices.length - 1
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1
    if (slices[mid].start.getTime() <= t) lo = mid
    else hi = mid - 1
  }
  return lo
}

/** The same per (slice, group) aggregates the store computes, from rows in memory. */
export function aggregateRows(rows: readonly TimedRow[], slices: readonly Slice[], baseMs: number): SliceAggregate[] {
  const acc = new Map<string, SliceAggregate & { seen: Set<string>; latestKey: [number, string] }>()
  for (const r of rows) {
    const slice = sliceIndex(slices, r.at)
    const key = `${slice}\u0000${r.groupValue}`
    const v = new U(r.value)
    let a = acc.get(key)
    if (!a) {
      a = { slice, group: r.groupValue, events: new U(0), sum: new U(0), min: v, max: v, valueMs: new U(0), uniques: new U(0), latest: v, seen: new Set(), latestKey: [r.at, r.eventId] }
      acc.set(key, a)
    }
    a.events = a.events.plus(1)
    a.sum = a.sum.plus(v)
    a.min = Decimal.min(a.min, v)
    a.max = Decimal.max(a.max, v)
    a.valueMs = a.valueMs.plus(v.times(r.at - baseMs))
    a.seen.add(r.uniqueValue)
    // Latest by time, ties broken by event id, as argMax over (timestamp, event_id) does.
    if (r.at > a.latestKey[0] || (r.at === a.latestKey[0] && r.eventId > a.latestKey[1])) {
      a.latestKey = [r.at, r.eventId]
      a.latest = v
    }
  }
  return [...acc.values()].map(({ seen, latestKey: _k, ...a }) => ({ ...a, uniques: new U(seen.size) }))
}

/** The partial aggregates a store must compute for a type; reading the others would be wasted work. */
export type Measure = 'events' | 'sum' | 'min' | 'max' | 'valueMs' | 'uniques' | 'latest'

const MEASURES: Record<AggregationType, readonly Measure[]> = {
  COUNT: ['events'],
  SUM: ['sum'],
  SUM_WITH_MULTIPLIER: ['sum'],
  AVG: ['events', 'sum'],
  MIN: ['min'],
  MAX: ['max'],
  COUNT_UNIQUE: ['uniques'],
  LATEST: ['latest'],
  WEIGHTED_SUM: ['sum', 'valueMs'],
}

export const measuresOf = (type: AggregationType): readonly Measure[] => MEASURES[type]
