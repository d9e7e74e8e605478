import { describe, expect, it } from 'vitest'
import { queryWindows, slicesOf, DAY, HOUR, MINUTE, type CalendarOptions, type Slice } from '../usage.ts'
import type { WindowSize } from '../periods.ts'
import { planSources, type PlannedSource } from './sources.ts'

const slicesFor = (start: string, end: string, size?: WindowSize, cal: CalendarOptions = {}, bucket?: WindowSize): Slice[] =>
  slicesOf(queryWindows(new Date(start), new Date(end), size, cal), bucket, cal)

const floorTo = (t: number, unit: number) => t - (((t % unit) + unit) % unit)

/** Whether a row at instant t (a rollup's row: the unit holding t) is read by the source, by its ranges. */
function reads(s: PlannedSource, units: readonly number[], t: number): boolean {
  const at = s.rollup === undefined ? t : floorTo(t, units[s.rollup])
  return s.ranges.some(([a, b]) => at >= a && at < b)
}

/** The same by the other form: overall bounds, the units within, not the units cut. */
function readsByUnits(s: PlannedSource, units: readonly number[], t: number): boolean {
  const at = s.rollup === undefined ? t : floorTo(t, units[s.rollup])
  const [from, to] = [s.ranges[0][0], s.ranges[s.ranges.length - 1][1]]
  if (at < from || at >= to) return false
  if (s.within && !s.within.starts.some((u) => at >= u.getTime() && at < u.getTime() + s.within!.unit)) return false
  if (s.cut && s.cut.starts.some((u) => u.getTime() === at)) return false
  return true
}

function check(slices: Slice[], units: readonly number[], customers: number): PlannedSource[] {
  const plan = planSources(slices, units, customers)
  const start = slices[0].start.getTime()
  const end = slices[slices.length - 1].end.getTime()
  const boundaries = slices.flatMap((s) => [s.start.getTime(), s.end.getTime()])
  const samples = new Set<number>()
  for (const b of boundaries) for (const d of [-MINUTE - 1, -1001, -1, 0, 1, 999, MINUTE]) samples.add(b + d)
  for (let t = start - HOUR; t < end + HOUR; t += 7 * MINUTE + 13_001) samples.add(t)
  for (const t of samples) {
    const readers = plan.filter((s) => reads(s, units, t))
    // Every instant of the range is read once, none outside it.
    expect(readers.length, new Date(t).toISOString()).toBe(t >= start && t < end ? 1 : 0)
    for (const s of plan) expect(readsByUnits(s, units, t), `${new Date(t).toISOString()} by units`).toBe(reads(s, units, t))
  }
  for (const s of plan) {
    expect(s.ranges.length).toBeGreaterThan(0)
    if (s.rollup === undefined) continue
    const unit = units[s.rollup]
    // A rollup reads whole units, none of which a slice boundary cuts.
    for (const [a, b] of s.ranges) expect([a % unit, b % unit]).toEqual([0, 0])
    for (const b of boundaries) expect(reads(s, units, b) && b % unit !== 0).toBe(false)
  }
  return plan
}

const shape = (plan: PlannedSource[], units: readonly number[]) =>
  plan.map((s) => `${s.rollup === undefined ? 'raw' : { [DAY]: 'day', [HOUR]: 'hour', [MINUTE]: 'minute' }[units[s.rollup]]}×${s.ranges.length}`)

const ALL = Number.POSITIVE_INFINITY
const D_H_M = [DAY, HOUR, MINUTE]
const H = [HOUR]
const ANCHOR = '2024-02-15T12:34:56.789Z'

describe('planSources', () => {
  it.each([
    // label, slices, units, customers, the sources it reads
    ['calendar months: days only', slicesFor('2024-01-01T00:00:00Z', '2024-04-01T00:00:00Z', 'MONTH'), D_H_M, ALL, ['day×1']],
    ['an anchored month for the environment: days, hours, minutes, raw rows', slicesFor(ANCHOR, '2024-03-15T12:34:56.789Z', 'MONTH', { billingAnchor: new Date(ANCHOR) }), D_H_M, ALL, ['day×1', 'hour×2', 'minute×2', 'raw×2']],
    // One customer: the days and the minutes save too few rows for a source of their own.
    ['an anchored month for one customer: hours and raw rows', slicesFor(ANCHOR, '2024-03-15T12:34:56.789Z', 'MONTH', { billingAnchor: new Date(ANCHOR) }), D_H_M, 1, ['hour×1', 'raw×2']],
    ['an anchored month from hourly breakdowns', slicesFor(ANCHOR, '2024-03-15T12:34:56.789Z', 'MONTH', { billingAnchor: new Date(ANCHOR) }), H, ALL, ['hour×1', 'raw×2']],
    ['hourly windows of a day', slicesFor('2024-03-01T00:00:00Z', '2024-03-02T00:00:00Z', 'HOUR'), H, ALL, ['hour×1']],
    // Kolkata days start at 18:30 UTC: each day boundary cuts an hour.
    ['Kolkata days of a month', slicesFor('2024-02-29T18:30:00Z', '2024-03-31T18:30:00Z', 'DAY', { timeZone: 'Asia/Kolkata' }), H, ALL, ['hour×31', 'raw×32']],
    // Every minute boundary cuts its hour: everything from raw rows.
    ['minute windows of an hour', slicesFor('2024-03-01T10:00:00Z', '2024-03-01T11:00:00Z', 'MINUTE'), H, ALL, ['raw×1']],
    ['minute windows from per-minute rollups', slicesFor('2024-03-01T10:00:00Z', '2024-03-01T12:00:00Z', 'MINUTE'), D_H_M, ALL, ['minute×1']],
    ['a range inside one hour', slicesFor('2024-03-01T10:15:00Z', '2024-03-01T10:45:30Z'), H, ALL, ['raw×1']],
    // The days left to hours reach outside the range and every hour inside it is cut: no hour source.
    ['half hours at both ends of a fortnight', slicesFor('2024-02-15T23:30:00Z', '2024-03-01T00:30:00Z'), D_H_M, ALL, ['day×1', 'minute×2']],
    ['hourly buckets of a DAY window', slicesFor('2024-03-01T00:00:00Z', '2024-03-03T00:00:00Z', 'DAY', {}, 'HOUR'), H, ALL, ['hour×1']],
    // DAY windows start at midnight, clipped to the range: only its ends cut an hour.
    ['a range with seconds, by day', slicesFor('2024-03-01T00:00:30Z', '2024-03-05T00:00:30Z', 'DAY'), H, ALL, ['hour×1', 'raw×2']],
    // Monthly windows from an anchor with seconds: each boundary cuts an hour.
    ['anchored months with seconds', slicesFor('2024-01-10T08:00:30Z', '2024-05-10T08:00:30Z', 'MONTH', { billingAnchor: new Date('2024-01-10T08:00:30Z') }), H, ALL, ['hour×4', 'raw×5']],
  ])('%s', (_label, slices, units, customers, expected) => {
    expect(shape(check(slices, units, customers), units)).toEqual(expected)
  })

  it('skips a rollup with more than 64 cut units', () => {
    // 30-minute windows over four days: 96 cut hours.
    const slices = slicesFor('2024-03-01T00:00:00Z', '2024-03-05T00:00:00Z', '30MIN')
    expect(shape(check(slices, H, ALL), H)).toEqual(['raw×1'])
  })
})
