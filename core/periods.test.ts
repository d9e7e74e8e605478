import { describe, expect, it } from 'vitest'
import {
  BILLING_PERIODS,
  WINDOW_SIZES,
  calendarAnchor,
  daysBetween,
  periodBoundary,
  periodContaining,
  periodsBetween,
  secondsBetween,
  usageWindows,
  type BillingPeriod,
  type WindowSize,
} from './periods.ts'

// Every expectation below is worked out by hand and written as a literal instant.
const d = (s: string): Date => new Date(s)
const iso = (s: string): string => new Date(s).toISOString()
const NY = 'America/New_York'
const BERLIN = 'Europe/Berlin'
const A = '2024-01-31T10:30:00Z' // the awkward anchor: last day of a 31-day month, non-zero time of day

describe('lists', () => {
  it('name every period and size', () => {
    expect(BILLING_PERIODS).toEqual(['DAILY', 'WEEKLY', 'MONTHLY', 'QUARTERLY', 'HALF_YEARLY', 'ANNUAL'])
    expect(WINDOW_SIZES).toEqual(['MINUTE', '15MIN', '30MIN', 'HOUR', '3HOUR', '6HOUR', '12HOUR', 'DAY', 'WEEK', 'MONTH'])
  })
})

describe('periodBoundary', () => {
  // [anchor, period, count, n, expected, timeZone]
  const cases: [string, BillingPeriod, number, number, string, string?][] = [
    [A, 'DAILY', 1, 0, A],
    [A, 'DAILY', 1, 1, '2024-02-01T10:30:00Z'],
    [A, 'DAILY', 1, 29, '2024-02-29T10:30:00Z'],
    [A, 'DAILY', 1, -1, '2024-01-30T10:30:00Z'],
    [A, 'DAILY', 3, 1, '2024-02-03T10:30:00Z'],
    [A, 'DAILY', 3, 2, '2024-02-06T10:30:00Z'],
    [A, 'DAILY', 3, -1, '2024-01-28T10:30:00Z'],
    [A, 'WEEKLY', 1, 1, '2024-02-07T10:30:00Z'],
    [A, 'WEEKLY', 1, -5, '2023-12-27T10:30:00Z'],
    [A, 'WEEKLY', 3, 1, '2024-02-21T10:30:00Z'],
    [A, 'WEEKLY', 3, 2, '2024-03-13T10:30:00Z'],
    [A, 'WEEKLY', 3, -1, '2024-01-10T10:30:00Z'],
    [A, 'MONTHLY', 1, 1, '2024-02-29T10:30:00Z'],
    [A, 'MONTHLY', 1, 2, '2024-03-31T10:30:00Z'],
    [A, 'MONTHLY', 1, 3, '2024-04-30T10:30:00Z'],
    [A, 'MONTHLY', 1, 4, '2024-05-31T10:30:00Z'],
    [A, 'MONTHLY', 1, 13, '2025-02-28T10:30:00Z'],
    [A, 'MONTHLY', 1, -1, '2023-12-31T10:30:00Z'],
    [A, 'MONTHLY', 1, -2, '2023-11-30T10:30:00Z'],
    [A, 'MONTHLY', 3, 1, '2024-04-30T10:30:00Z'],
    [A, 'MONTHLY', 3, 2, '2024-07-31T10:30:00Z'],
    [A, 'MONTHLY', 3, -1, '2023-10-31T10:30:00Z'],
    [A, 'QUARTERLY', 1, 1, '2024-04-30T10:30:00Z'],
    [A, 'QUARTERLY', 1, 4, '2025-01-31T10:30:00Z'],
    [A, 'QUARTERLY', 1, -1, '2023-10-31T10:30:00Z'],
    [A, 'QUARTERLY', 1, -3, '2023-04-30T10:30:00Z'],
    [A, 'QUARTERLY', 3, 1, '2024-10-31T10:30:00Z'],
    [A, 'QUARTERLY', 3, 2, '2025-07-31T10:30:00Z'],
    [A, 'QUARTERLY', 3, -1, '2023-04-30T10:30:00Z'],
    [A, 'HALF_YEARLY', 1, 1, '2024-07-31T10:30:00Z'],
    [A, 'HALF_YEARLY', 1, 2, '2025-01-31T10:30:00Z'],
    [A, 'HALF_YEARLY', 1, -1, '2023-07-31T10:30:00Z'],
    [A, 'HALF_YEARLY', 3, 1, '2025-07-31T10:30:00Z'],
    [A, 'HALF_YEARLY', 3, -1, '2022-07-31T10:30:00Z'],
    [A, 'ANNUAL', 1, 1, '2025-01-31T10:30:00Z'],
    ['2024-02-29T10:30:00Z', 'ANNUAL', 1, 1, '2025-02-28T10:30:00Z'],
    ['2024-02-29T10:30:00Z', 'ANNUAL', 1, 4, '2028-02-29T10:30:00Z'],
    ['2024-02-29T10:30:00Z', 'ANNUAL', 1, -1, '2023-02-28T10:30:00Z'],
    ['2024-02-29T10:30:00Z', 'ANNUAL', 1, -4, '2020-02-29T10:30:00Z'],
    ['2024-02-29T10:30:00Z', 'ANNUAL', 3, 1, '2027-02-28T10:30:00Z'],
    ['2024-02-29T10:30:00Z', 'ANNUAL', 3, -1, '2021-02-28T10:30:00Z'],
    // Local time of day is kept across DST: 10:30 EST, then 10:30 EDT.
    ['2024-01-31T15:30:00Z', 'MONTHLY', 1, 1, '2024-02-29T15:30:00Z', NY],
    ['2024-01-31T15:30:00Z', 'MONTHLY', 1, 2, '2024-03-31T14:30:00Z', NY],
    ['2024-01-31T15:30:00Z', 'MONTHLY', 1, -2, '2023-11-30T15:30:00Z', NY],
    ['2024-01-31T15:30:00Z', 'QUARTERLY', 1, 1, '2024-04-30T14:30:00Z', NY],
    ['2024-03-09T15:30:00Z', 'DAILY', 1, 1, '2024-03-10T14:30:00Z', NY],
    ['2024-03-09T15:30:00Z', 'DAILY', 1, -1, '2024-03-08T15:30:00Z', NY],
    // 02:30 does not exist on 2024-03-10 in New York: that boundary moves to 03:30 EDT, the next is 02:30 again.
    ['2024-03-09T07:30:00Z', 'DAILY', 1, 1, '2024-03-10T07:30:00Z', NY],
    ['2024-03-09T07:30:00Z', 'DAILY', 1, 2, '2024-03-11T06:30:00Z', NY],
    // Monday 10:00 CET, then Monday 10:00 CEST.
    ['2024-03-25T09:00:00Z', 'WEEKLY', 1, 1, '2024-04-01T08:00:00Z', BERLIN],
  ]
  it.each(cases)('%s %s x%i, n=%i -> %s (%s)', (anchor, period, count, n, expected, tz) => {
    expect(periodBoundary(d(anchor), period, count, n, tz).toISOString()).toBe(iso(expected))
  })

  // Monthly from January days 1, 15, 28-31 at 10:30, in a leap and a non-leap year: n = 1..4 (Feb..May).
  const days: [string, string[]][] = [
    ['2024-01-01T10:30:00Z', ['2024-02-01T10:30:00Z', '2024-03-01T10:30:00Z', '2024-04-01T10:30:00Z', '2024-05-01T10:30:00Z']],
    ['2024-01-15T10:30:00Z', ['2024-02-15T10:30:00Z', '2024-03-15T10:30:00Z', '2024-04-15T10:30:00Z', '2024-05-15T10:30:00Z']],
    ['2024-01-28T10:30:00Z', ['2024-02-28T10:30:00Z', '2024-03-28T10:30:00Z', '2024-04-28T10:30:00Z', '2024-05-28T10:30:00Z']],
    ['2024-01-29T10:30:00Z', ['2024-02-29T10:30:00Z', '2024-03-29T10:30:00Z', '2024-04-29T10:30:00Z', '2024-05-29T10:30:00Z']],
    ['2024-01-30T10:30:00Z', ['2024-02-29T10:30:00Z', '2024-03-30T10:30:00Z', '2024-04-30T10:30:00Z', '2024-05-30T10:30:00Z']],
    ['2024-01-31T10:30:00Z', ['2024-02-29T10:30:00Z', '2024-03-31T10:30:00Z', '2024-04-30T10:30:00Z', '2024-05-31T10:30:00Z']],
    ['2023-01-01T10:30:00Z', ['2023-02-01T10:30:00Z', '2023-03-01T10:30:00Z', '2023-04-01T10:30:00Z', '2023-05-01T10:30:00Z']],
    ['2023-01-15T10:30:00Z', ['2023-02-15T10:30:00Z', '2023-03-15T10:30:00Z', '2023-04-15T10:30:00Z', '2023-05-15T10:30:00Z']],
    ['2023-01-28T10:30:00Z', ['2023-02-28T10:30:00Z', '2023-03-28T10:30:00Z', '2023-04-28T10:30:00Z', '2023-05-28T10:30:00Z']],
    ['2023-01-29T10:30:00Z', ['2023-02-28T10:30:00Z', '2023-03-29T10:30:00Z', '2023-04-29T10:30:00Z', '2023-05-29T10:30:00Z']],
    ['2023-01-30T10:30:00Z', ['2023-02-28T10:30:00Z', '2023-03-30T10:30:00Z', '2023-04-30T10:30:00Z', '2023-05-30T10:30:00Z']],
    ['2023-01-31T10:30:00Z', ['2023-02-28T10:30:00Z', '2023-03-31T10:30:00Z', '2023-04-30T10:30:00Z', '2023-05-31T10:30:00Z']],
  ]
  it.each(days)('monthly from %s keeps the day, clamped to month end', (anchor, expected) => {
    const got = [1, 2, 3, 4].map((n) => periodBoundary(d(anchor), 'MONTHLY', 1, n).toISOString())
    expect(got).toEqual(expected.map(iso))
  })
})

describe('periodContaining', () => {
  // [anchor, period, count, at, start, end, timeZone]
  const cases: [string, BillingPeriod, number, string, string, string, string?][] = [
    [A, 'DAILY', 1, '2024-03-10T10:29:59.999Z', '2024-03-09T10:30:00Z', '2024-03-10T10:30:00Z'],
    [A, 'DAILY', 3, '2024-02-03T10:30:00Z', '2024-02-03T10:30:00Z', '2024-02-06T10:30:00Z'],
    [A, 'DAILY', 3, '2024-01-01T00:00:00Z', '2023-12-29T10:30:00Z', '2024-01-01T10:30:00Z'],
    [A, 'WEEKLY', 1, '2024-01-01T00:00:00Z', '2023-12-27T10:30:00Z', '2024-01-03T10:30:00Z'],
    [A, 'WEEKLY', 3, '2024-03-01T00:00:00Z', '2024-02-21T10:30:00Z', '2024-03-13T10:30:00Z'],
    // On a boundary: the period starting there. One ms earlier: the one before.
    [A, 'MONTHLY', 1, '2024-02-29T10:30:00Z', '2024-02-29T10:30:00Z', '2024-03-31T10:30:00Z'],
    [A, 'MONTHLY', 1, '2024-02-29T10:29:59.999Z', '2024-01-31T10:30:00Z', '2024-02-29T10:30:00Z'],
    [A, 'MONTHLY', 1, A, A, '2024-02-29T10:30:00Z'],
    [A, 'MONTHLY', 1, '2023-12-31T10:29:59.999Z', '2023-11-30T10:30:00Z', '2023-12-31T10:30:00Z'],
    [A, 'MONTHLY', 1, '2030-06-15T00:00:00Z', '2030-05-31T10:30:00Z', '2030-06-30T10:30:00Z'],
    [A, 'MONTHLY', 1, '1990-01-01T00:00:00Z', '1989-12-31T10:30:00Z', '1990-01-31T10:30:00Z'],
    [A, 'MONTHLY', 3, '2024-05-01T00:00:00Z', '2024-04-30T10:30:00Z', '2024-07-31T10:30:00Z'],
    [A, 'QUARTERLY', 1, '2024-04-30T10:29:59.999Z', '2024-01-31T10:30:00Z', '2024-04-30T10:30:00Z'],
    [A, 'QUARTERLY', 3, '2025-01-01T00:00:00Z', '2024-10-31T10:30:00Z', '2025-07-31T10:30:00Z'],
    [A, 'HALF_YEARLY', 1, '2023-12-01T00:00:00Z', '2023-07-31T10:30:00Z', '2024-01-31T10:30:00Z'],
    [A, 'HALF_YEARLY', 3, '2025-08-01T00:00:00Z', '2025-07-31T10:30:00Z', '2027-01-31T10:30:00Z'],
    [A, 'ANNUAL', 1, A, A, '2025-01-31T10:30:00Z'],
    [A, 'ANNUAL', 3, '2020-06-01T00:00:00Z', '2018-01-31T10:30:00Z', '2021-01-31T10:30:00Z'],
    ['2024-02-29T10:30:00Z', 'ANNUAL', 1, '2027-03-01T00:00:00Z', '2027-02-28T10:30:00Z', '2028-02-29T10:30:00Z'],
    ['2024-01-31T15:30:00Z', 'MONTHLY', 1, '2024-03-31T14:30:00Z', '2024-03-31T14:30:00Z', '2024-04-30T14:30:00Z', NY],
    ['2024-01-31T15:30:00Z', 'MONTHLY', 1, '2024-03-31T14:29:59.999Z', '2024-02-29T15:30:00Z', '2024-03-31T14:30:00Z', NY],
  ]
  it.each(cases)('%s %s x%i at %s -> [%s, %s) (%s)', (anchor, period, count, at, start, end, tz) => {
    const p = periodContaining(d(anchor), period, count, d(at), tz)
    expect([p.start.toISOString(), p.end.toISOString()]).toEqual([iso(start), iso(end)])
  })
})

describe('periodsBetween', () => {
  const span = (from: string, to: string, tz?: string) =>
    periodsBetween(d(A), 'MONTHLY', 1, d(from), d(to), tz).map((p) => [p.start.toISOString(), p.end.toISOString()])

  it('runs from the period holding `from` to the last one starting before `to`', () => {
    expect(span('2024-02-10T00:00:00Z', '2024-05-31T10:30:00Z')).toEqual(
      [
        ['2024-01-31T10:30:00Z', '2024-02-29T10:30:00Z'],
        ['2024-02-29T10:30:00Z', '2024-03-31T10:30:00Z'],
        ['2024-03-31T10:30:00Z', '2024-04-30T10:30:00Z'],
        ['2024-04-30T10:30:00Z', '2024-05-31T10:30:00Z'],
      ].map((p) => p.map(iso)),
    )
  })

  it('includes the period that `to` falls in, one ms past its start', () => {
    expect(span('2024-04-30T10:30:00Z', '2024-05-31T10:30:00.001Z')).toEqual(
      [
        ['2024-04-30T10:30:00Z', '2024-05-31T10:30:00Z'],
        ['2024-05-31T10:30:00Z', '2024-06-30T10:30:00Z'],
      ].map((p) => p.map(iso)),
    )
  })

  it('is empty when to <= from', () => {
    expect(span('2024-03-01T00:00:00Z', '2024-03-01T00:00:00Z')).toEqual([])
    expect(span('2024-03-01T00:00:00Z', '2024-02-01T00:00:00Z')).toEqual([])
  })
})

describe('calendarAnchor', () => {
  // [start, timeZone, {period: expected}]
  const cases: [string, string | undefined, Record<BillingPeriod, string>][] = [
    // Wednesday afternoon, UTC.
    ['2024-08-14T15:45:00Z', undefined, {
      DAILY: '2024-08-14T00:00:00Z', WEEKLY: '2024-08-12T00:00:00Z', MONTHLY: '2024-08-01T00:00:00Z',
      QUARTERLY: '2024-07-01T00:00:00Z', HALF_YEARLY: '2024-07-01T00:00:00Z', ANNUAL: '2024-01-01T00:00:00Z',
    }],
    // Sunday late evening: the week began the Monday before.
    ['2024-05-19T23:30:00Z', undefined, {
      DAILY: '2024-05-19T00:00:00Z', WEEKLY: '2024-05-13T00:00:00Z', MONTHLY: '2024-05-01T00:00:00Z',
      QUARTERLY: '2024-04-01T00:00:00Z', HALF_YEARLY: '2024-01-01T00:00:00Z', ANNUAL: '2024-01-01T00:00:00Z',
    }],
    // 03:00 UTC on Mar 1 is still Thursday Feb 29, 22:00 EST in New York.
    ['2024-03-01T03:00:00Z', NY, {
      DAILY: '2024-02-29T05:00:00Z', WEEKLY: '2024-02-26T05:00:00Z', MONTHLY: '2024-02-01T05:00:00Z',
      QUARTERLY: '2024-01-01T05:00:00Z', HALF_YEARLY: '2024-01-01T05:00:00Z', ANNUAL: '2024-01-01T05:00:00Z',
    }],
    // 22:30 UTC on Jun 30 is already Monday Jul 1, 00:30 CEST in Berlin; Jan 1 is CET.
    ['2024-06-30T22:30:00Z', BERLIN, {
      DAILY: '2024-06-30T22:00:00Z', WEEKLY: '2024-06-30T22:00:00Z', MONTHLY: '2024-06-30T22:00:00Z',
      QUARTERLY: '2024-06-30T22:00:00Z', HALF_YEARLY: '2024-06-30T22:00:00Z', ANNUAL: '2023-12-31T23:00:00Z',
    }],
  ]
  for (const [start, tz, expected] of cases) {
    it.each(BILLING_PERIODS)(`${start} (${tz ?? 'UTC'}) %s`, (period) => {
      expect(calendarAnchor(d(start), period, tz).toISOString()).toBe(iso(expected[period]))
    })
  }
})

describe('usageWindows', () => {
  type Case = [label: string, start: string, end: string, size: WindowSize, opts: { billingAnchor?: Date; timeZone?: string }, windows: [string, string, string][]]
  const cases: Case[] = [
    ['MINUTE mid-bucket', '2024-01-01T00:00:30Z', '2024-01-01T00:02:10Z', 'MINUTE', {}, [
      ['2024-01-01T00:00:00Z', '2024-01-01T00:00:30Z', '2024-01-01T00:01:00Z'],
      ['2024-01-01T00:01:00Z', '2024-01-01T00:01:00Z', '2024-01-01T00:02:00Z'],
      ['2024-01-01T00:02:00Z', '2024-01-01T00:02:00Z', '2024-01-01T00:02:10Z'],
    ]],
    ['15MIN mid-bucket', '2024-01-01T10:07:00Z', '2024-01-01T10:40:00Z', '15MIN', {}, [
      ['2024-01-01T10:00:00Z', '2024-01-01T10:07:00Z', '2024-01-01T10:15:00Z'],
      ['2024-01-01T10:15:00Z', '2024-01-01T10:15:00Z', '2024-01-01T10:30:00Z'],
      ['2024-01-01T10:30:00Z', '2024-01-01T10:30:00Z', '2024-01-01T10:40:00Z'],
    ]],
    ['30MIN mid-bucket', '2024-01-01T10:07:00Z', '2024-01-01T11:00:00Z', '30MIN', {}, [
      ['2024-01-01T10:00:00Z', '2024-01-01T10:07:00Z', '2024-01-01T10:30:00Z'],
      ['2024-01-01T10:30:00Z', '2024-01-01T10:30:00Z', '2024-01-01T11:00:00Z'],
    ]],
    ['HOUR mid-bucket', '2024-01-01T10:30:00Z', '2024-01-01T12:15:00Z', 'HOUR', {}, [
      ['2024-01-01T10:00:00Z', '2024-01-01T10:30:00Z', '2024-01-01T11:00:00Z'],
      ['2024-01-01T11:00:00Z', '2024-01-01T11:00:00Z', '2024-01-01T12:00:00Z'],
      ['2024-01-01T12:00:00Z', '2024-01-01T12:00:00Z', '2024-01-01T12:15:00Z'],
    ]],
    ['HOUR aligned', '2024-01-01T10:00:00Z', '2024-01-01T12:00:00Z', 'HOUR', {}, [
      ['2024-01-01T10:00:00Z', '2024-01-01T10:00:00Z', '2024-01-01T11:00:00Z'],
      ['2024-01-01T11:00:00Z', '2024-01-01T11:00:00Z', '2024-01-01T12:00:00Z'],
    ]],
    ['3HOUR mid-bucket', '2024-01-01T04:00:00Z', '2024-01-01T10:00:00Z', '3HOUR', {}, [
      ['2024-01-01T03:00:00Z', '2024-01-01T04:00:00Z', '2024-01-01T06:00:00Z'],
      ['2024-01-01T06:00:00Z', '2024-01-01T06:00:00Z', '2024-01-01T09:00:00Z'],
      ['2024-01-01T09:00:00Z', '2024-01-01T09:00:00Z', '2024-01-01T10:00:00Z'],
    ]],
    ['6HOUR mid-bucket', '2024-01-01T05:00:00Z', '2024-01-02T01:00:00Z', '6HOUR', {}, [
      ['2024-01-01T00:00:00Z', '2024-01-01T05:00:00Z', '2024-01-01T06:00:00Z'],
      ['2024-01-01T06:00:00Z', '2024-01-01T06:00:00Z', '2024-01-01T12:00:00Z'],
      ['2024-01-01T12:00:00Z', '2024-01-01T12:00:00Z', '2024-01-01T18:00:00Z'],
      ['2024-01-01T18:00:00Z', '2024-01-01T18:00:00Z', '2024-01-02T00:00:00Z'],
      ['2024-01-02T00:00:00Z', '2024-01-02T00:00:00Z', '2024-01-02T01:00:00Z'],
    ]],
    ['12HOUR mid-bucket', '2024-01-01T13:00:00Z', '2024-01-02T12:00:00Z', '12HOUR', {}, [
      ['2024-01-01T12:00:00Z', '2024-01-01T13:00:00Z', '2024-01-02T00:00:00Z'],
      ['2024-01-02T00:00:00Z', '2024-01-02T00:00:00Z', '2024-01-02T12:00:00Z'],
    ]],
    ['DAY over Feb 29', '2024-02-28T18:00:00Z', '2024-03-01T06:00:00Z', 'DAY', {}, [
      ['2024-02-28T00:00:00Z', '2024-02-28T18:00:00Z', '2024-02-29T00:00:00Z'],
      ['2024-02-29T00:00:00Z', '2024-02-29T00:00:00Z', '2024-03-01T00:00:00Z'],
      ['2024-03-01T00:00:00Z', '2024-03-01T00:00:00Z', '2024-03-01T06:00:00Z'],
    ]],
    ['DAY ignores billingAnchor', '2024-02-28T18:00:00Z', '2024-02-29T06:00:00Z', 'DAY', { billingAnchor: d(A) }, [
      ['2024-02-28T00:00:00Z', '2024-02-28T18:00:00Z', '2024-02-29T00:00:00Z'],
      ['2024-02-29T00:00:00Z', '2024-02-29T00:00:00Z', '2024-02-29T06:00:00Z'],
    ]],
    ['WEEK from Monday 00:00', '2024-08-12T00:00:00Z', '2024-08-21T12:00:00Z', 'WEEK', {}, [
      ['2024-08-12T00:00:00Z', '2024-08-12T00:00:00Z', '2024-08-19T00:00:00Z'],
      ['2024-08-19T00:00:00Z', '2024-08-19T00:00:00Z', '2024-08-21T12:00:00Z'],
    ]],
    ['WEEK from Wednesday', '2024-08-14T09:00:00Z', '2024-08-20T00:00:00Z', 'WEEK', {}, [
      ['2024-08-12T00:00:00Z', '2024-08-14T09:00:00Z', '2024-08-19T00:00:00Z'],
      ['2024-08-19T00:00:00Z', '2024-08-19T00:00:00Z', '2024-08-20T00:00:00Z'],
    ]],
    ['WEEK from Sunday night', '2024-08-18T23:30:00Z', '2024-08-19T00:30:00Z', 'WEEK', {}, [
      ['2024-08-12T00:00:00Z', '2024-08-18T23:30:00Z', '2024-08-19T00:00:00Z'],
      ['2024-08-19T00:00:00Z', '2024-08-19T00:00:00Z', '2024-08-19T00:30:00Z'],
    ]],
    ['MONTH calendar', '2024-01-15T12:00:00Z', '2024-03-10T00:00:00Z', 'MONTH', {}, [
      ['2024-01-01T00:00:00Z', '2024-01-15T12:00:00Z', '2024-02-01T00:00:00Z'],
      ['2024-02-01T00:00:00Z', '2024-02-01T00:00:00Z', '2024-03-01T00:00:00Z'],
      ['2024-03-01T00:00:00Z', '2024-03-01T00:00:00Z', '2024-03-10T00:00:00Z'],
    ]],
    ['MONTH anchored on the 31st, leap year', '2024-01-15T00:00:00Z', '2024-05-01T00:00:00Z', 'MONTH', { billingAnchor: d('2023-01-31T10:30:00Z') }, [
      ['2023-12-31T10:30:00Z', '2024-01-15T00:00:00Z', '2024-01-31T10:30:00Z'],
      ['2024-01-31T10:30:00Z', '2024-01-31T10:30:00Z', '2024-02-29T10:30:00Z'],
      ['2024-02-29T10:30:00Z', '2024-02-29T10:30:00Z', '2024-03-31T10:30:00Z'],
      ['2024-03-31T10:30:00Z', '2024-03-31T10:30:00Z', '2024-04-30T10:30:00Z'],
      ['2024-04-30T10:30:00Z', '2024-04-30T10:30:00Z', '2024-05-01T00:00:00Z'],
    ]],
    ['MONTH anchored on the 31st, non-leap year', '2023-02-01T00:00:00Z', '2023-04-01T00:00:00Z', 'MONTH', { billingAnchor: d('2023-01-31T10:30:00Z') }, [
      ['2023-01-31T10:30:00Z', '2023-02-01T00:00:00Z', '2023-02-28T10:30:00Z'],
      ['2023-02-28T10:30:00Z', '2023-02-28T10:30:00Z', '2023-03-31T10:30:00Z'],
      ['2023-03-31T10:30:00Z', '2023-03-31T10:30:00Z', '2023-04-01T00:00:00Z'],
    ]],
    // India is UTC+05:30: hours start at :30 UTC.
    ['HOUR in Asia/Kolkata', '2024-01-01T00:00:00Z', '2024-01-01T02:00:00Z', 'HOUR', { timeZone: 'Asia/Kolkata' }, [
      ['2023-12-31T23:30:00Z', '2024-01-01T00:00:00Z', '2024-01-01T00:30:00Z'],
      ['2024-01-01T00:30:00Z', '2024-01-01T00:30:00Z', '2024-01-01T01:30:00Z'],
      ['2024-01-01T01:30:00Z', '2024-01-01T01:30:00Z', '2024-01-01T02:00:00Z'],
    ]],

    // New York: 2024-03-10 02:00 EST -> 03:00 EDT (07:00Z); 2024-11-03 02:00 EDT -> 01:00 EST (06:00Z).
    ['NY DAY spring forward (23 h)', '2024-03-10T05:00:00Z', '2024-03-12T04:00:00Z', 'DAY', { timeZone: NY }, [
      ['2024-03-10T05:00:00Z', '2024-03-10T05:00:00Z', '2024-03-11T04:00:00Z'],
      ['2024-03-11T04:00:00Z', '2024-03-11T04:00:00Z', '2024-03-12T04:00:00Z'],
    ]],
    ['NY DAY fall back (25 h)', '2024-11-02T16:00:00Z', '2024-11-04T12:00:00Z', 'DAY', { timeZone: NY }, [
      ['2024-11-02T04:00:00Z', '2024-11-02T16:00:00Z', '2024-11-03T04:00:00Z'],
      ['2024-11-03T04:00:00Z', '2024-11-03T04:00:00Z', '2024-11-04T05:00:00Z'],
      ['2024-11-04T05:00:00Z', '2024-11-04T05:00:00Z', '2024-11-04T12:00:00Z'],
    ]],
    ['NY HOUR spring forward', '2024-03-10T05:00:00Z', '2024-03-10T09:00:00Z', 'HOUR', { timeZone: NY }, [
      ['2024-03-10T05:00:00Z', '2024-03-10T05:00:00Z', '2024-03-10T06:00:00Z'],
      ['2024-03-10T06:00:00Z', '2024-03-10T06:00:00Z', '2024-03-10T07:00:00Z'],
      ['2024-03-10T07:00:00Z', '2024-03-10T07:00:00Z', '2024-03-10T08:00:00Z'],
      ['2024-03-10T08:00:00Z', '2024-03-10T08:00:00Z', '2024-03-10T09:00:00Z'],
    ]],
    ['NY HOUR fall back: 01:00 twice', '2024-11-03T04:00:00Z', '2024-11-03T08:00:00Z', 'HOUR', { timeZone: NY }, [
      ['2024-11-03T04:00:00Z', '2024-11-03T04:00:00Z', '2024-11-03T05:00:00Z'],
      ['2024-11-03T05:00:00Z', '2024-11-03T05:00:00Z', '2024-11-03T06:00:00Z'],
      ['2024-11-03T06:00:00Z', '2024-11-03T06:00:00Z', '2024-11-03T07:00:00Z'],
      ['2024-11-03T07:00:00Z', '2024-11-03T07:00:00Z', '2024-11-03T08:00:00Z'],
    ]],
    ['NY HOUR inside the repeated hour', '2024-11-03T06:30:00Z', '2024-11-03T07:30:00Z', 'HOUR', { timeZone: NY }, [
      ['2024-11-03T06:00:00Z', '2024-11-03T06:30:00Z', '2024-11-03T07:00:00Z'],
      ['2024-11-03T07:00:00Z', '2024-11-03T07:00:00Z', '2024-11-03T07:30:00Z'],
    ]],
    ['NY 15MIN across fall back', '2024-11-03T05:50:00Z', '2024-11-03T06:20:00Z', '15MIN', { timeZone: NY }, [
      ['2024-11-03T05:45:00Z', '2024-11-03T05:50:00Z', '2024-11-03T06:00:00Z'],
      ['2024-11-03T06:00:00Z', '2024-11-03T06:00:00Z', '2024-11-03T06:15:00Z'],
      ['2024-11-03T06:15:00Z', '2024-11-03T06:15:00Z', '2024-11-03T06:20:00Z'],
    ]],
    // Local 00:00-03:00 is 2 h on the spring day and 4 h on the fall day.
    ['NY 3HOUR spring forward', '2024-03-10T05:00:00Z', '2024-03-10T13:00:00Z', '3HOUR', { timeZone: NY }, [
      ['2024-03-10T05:00:00Z', '2024-03-10T05:00:00Z', '2024-03-10T07:00:00Z'],
      ['2024-03-10T07:00:00Z', '2024-03-10T07:00:00Z', '2024-03-10T10:00:00Z'],
      ['2024-03-10T10:00:00Z', '2024-03-10T10:00:00Z', '2024-03-10T13:00:00Z'],
    ]],
    ['NY 3HOUR fall back', '2024-11-03T04:00:00Z', '2024-11-03T14:00:00Z', '3HOUR', { timeZone: NY }, [
      ['2024-11-03T04:00:00Z', '2024-11-03T04:00:00Z', '2024-11-03T08:00:00Z'],
      ['2024-11-03T08:00:00Z', '2024-11-03T08:00:00Z', '2024-11-03T11:00:00Z'],
      ['2024-11-03T11:00:00Z', '2024-11-03T11:00:00Z', '2024-11-03T14:00:00Z'],
    ]],
    ['NY 3HOUR starting in the repeated hour', '2024-11-03T06:30:00Z', '2024-11-03T09:00:00Z', '3HOUR', { timeZone: NY }, [
      ['2024-11-03T04:00:00Z', '2024-11-03T06:30:00Z', '2024-11-03T08:00:00Z'],
      ['2024-11-03T08:00:00Z', '2024-11-03T08:00:00Z', '2024-11-03T09:00:00Z'],
    ]],
    ['NY WEEK across spring forward', '2024-03-06T12:00:00Z', '2024-03-13T12:00:00Z', 'WEEK', { timeZone: NY }, [
      ['2024-03-04T05:00:00Z', '2024-03-06T12:00:00Z', '2024-03-11T04:00:00Z'],
      ['2024-03-11T04:00:00Z', '2024-03-11T04:00:00Z', '2024-03-13T12:00:00Z'],
    ]],
    ['NY MONTH calendar', '2024-02-15T00:00:00Z', '2024-04-15T00:00:00Z', 'MONTH', { timeZone: NY }, [
      ['2024-02-01T05:00:00Z', '2024-02-15T00:00:00Z', '2024-03-01T05:00:00Z'],
      ['2024-03-01T05:00:00Z', '2024-03-01T05:00:00Z', '2024-04-01T04:00:00Z'],
      ['2024-04-01T04:00:00Z', '2024-04-01T04:00:00Z', '2024-04-15T00:00:00Z'],
    ]],
    ['NY MONTH anchored Jan 31 10:30 local', '2024-02-01T00:00:00Z', '2024-04-01T00:00:00Z', 'MONTH', { timeZone: NY, billingAnchor: d('2024-01-31T15:30:00Z') }, [
      ['2024-01-31T15:30:00Z', '2024-02-01T00:00:00Z', '2024-02-29T15:30:00Z'],
      ['2024-02-29T15:30:00Z', '2024-02-29T15:30:00Z', '2024-03-31T14:30:00Z'],
      ['2024-03-31T14:30:00Z', '2024-03-31T14:30:00Z', '2024-04-01T00:00:00Z'],
    ]],

    // Berlin: 2024-03-31 02:00 CET -> 03:00 CEST (01:00Z); 2024-10-27 03:00 CEST -> 02:00 CET (01:00Z).
    ['Berlin DAY spring forward (23 h)', '2024-03-30T23:00:00Z', '2024-04-01T22:00:00Z', 'DAY', { timeZone: BERLIN }, [
      ['2024-03-30T23:00:00Z', '2024-03-30T23:00:00Z', '2024-03-31T22:00:00Z'],
      ['2024-03-31T22:00:00Z', '2024-03-31T22:00:00Z', '2024-04-01T22:00:00Z'],
    ]],
    ['Berlin DAY fall back (25 h)', '2024-10-26T22:00:00Z', '2024-10-27T23:00:00Z', 'DAY', { timeZone: BERLIN }, [
      ['2024-10-26T22:00:00Z', '2024-10-26T22:00:00Z', '2024-10-27T23:00:00Z'],
    ]],
    ['Berlin HOUR fall back: 02:00 twice', '2024-10-27T00:00:00Z', '2024-10-27T02:00:00Z', 'HOUR', { timeZone: BERLIN }, [
      ['2024-10-27T00:00:00Z', '2024-10-27T00:00:00Z', '2024-10-27T01:00:00Z'],
      ['2024-10-27T01:00:00Z', '2024-10-27T01:00:00Z', '2024-10-27T02:00:00Z'],
    ]],
    ['Berlin MINUTE at the fall back', '2024-10-27T00:59:30Z', '2024-10-27T01:01:00Z', 'MINUTE', { timeZone: BERLIN }, [
      ['2024-10-27T00:59:00Z', '2024-10-27T00:59:30Z', '2024-10-27T01:00:00Z'],
      ['2024-10-27T01:00:00Z', '2024-10-27T01:00:00Z', '2024-10-27T01:01:00Z'],
    ]],
    ['Berlin 30MIN at the spring forward', '2024-03-31T00:45:00Z', '2024-03-31T01:45:00Z', '30MIN', { timeZone: BERLIN }, [
      ['2024-03-31T00:30:00Z', '2024-03-31T00:45:00Z', '2024-03-31T01:00:00Z'],
      ['2024-03-31T01:00:00Z', '2024-03-31T01:00:00Z', '2024-03-31T01:30:00Z'],
      ['2024-03-31T01:30:00Z', '2024-03-31T01:30:00Z', '2024-03-31T01:45:00Z'],
    ]],
    ['Berlin 3HOUR fall back (4 h bucket)', '2024-10-26T22:00:00Z', '2024-10-27T05:00:00Z', '3HOUR', { timeZone: BERLIN }, [
      ['2024-10-26T22:00:00Z', '2024-10-26T22:00:00Z', '2024-10-27T02:00:00Z'],
      ['2024-10-27T02:00:00Z', '2024-10-27T02:00:00Z', '2024-10-27T05:00:00Z'],
    ]],
    ['Berlin 6HOUR spring forward (5 h bucket)', '2024-03-31T00:30:00Z', '2024-03-31T06:00:00Z', '6HOUR', { timeZone: BERLIN }, [
      ['2024-03-30T23:00:00Z', '2024-03-31T00:30:00Z', '2024-03-31T04:00:00Z'],
      ['2024-03-31T04:00:00Z', '2024-03-31T04:00:00Z', '2024-03-31T06:00:00Z'],
    ]],
    // Santiago skips midnight: 2024-09-08 starts at 01:00 -03 (04:00Z); the next day starts at 00:00 again.
    ['Santiago DAY after a skipped midnight', '2024-09-08T12:00:00Z', '2024-09-10T00:00:00Z', 'DAY', { timeZone: 'America/Santiago' }, [
      ['2024-09-08T04:00:00Z', '2024-09-08T12:00:00Z', '2024-09-09T03:00:00Z'],
      ['2024-09-09T03:00:00Z', '2024-09-09T03:00:00Z', '2024-09-10T00:00:00Z'],
    ]],
    ['Berlin 12HOUR spring forward (11 h bucket)', '2024-03-30T23:00:00Z', '2024-03-31T22:00:00Z', '12HOUR', { timeZone: BERLIN }, [
      ['2024-03-30T23:00:00Z', '2024-03-30T23:00:00Z', '2024-03-31T10:00:00Z'],
      ['2024-03-31T10:00:00Z', '2024-03-31T10:00:00Z', '2024-03-31T22:00:00Z'],
    ]],
  ]
  it.each(cases)('%s', (_label, start, end, size, opts, expected) => {
    const got = usageWindows(d(start), d(end), size, opts).map((w) => [w.windowStart, w.start, w.end].map((x) => x.toISOString()))
    expect(got).toEqual(expected.map((w) => w.map(iso)))
  })

  it('covers all ten sizes', () => {
    expect(new Set(cases.map((c) => c[3]))).toEqual(new Set(WINDOW_SIZES))
  })

  it('allows exactly 100000 windows and refuses one more', () => {
    expect(usageWindows(d('2024-01-01T00:00:00Z'), d('2024-03-10T10:40:00Z'), 'MINUTE')).toHaveLength(100_000)
    expect(() => usageWindows(d('2024-01-01T00:00:00Z'), d('2024-03-10T10:40:00.001Z'), 'MINUTE')).toThrow(/more than 100000 MINUTE windows/)
    expect(() => usageWindows(d('2020-01-01T00:00:00Z'), d('2024-01-01T00:00:00Z'), 'MINUTE')).toThrow(RangeError)
  })
})

describe('daysBetween and secondsBetween', () => {
  // [start, end, timeZone, days]
  const cases: [string, string, string | undefined, number][] = [
    ['2024-01-31T10:30:00Z', '2024-02-29T10:30:00Z', undefined, 29],
    ['2023-01-31T10:30:00Z', '2023-02-28T10:30:00Z', undefined, 28],
    ['2024-01-01T23:59:59.999Z', '2024-01-02T00:00:00Z', undefined, 1],
    ['2024-01-01T03:00:00Z', '2024-01-01T06:00:00Z', undefined, 0],
    ['2024-01-01T03:00:00Z', '2024-01-01T06:00:00Z', NY, 1], // Dec 31 22:00 -> Jan 1 01:00 local
    ['2024-03-10T05:00:00Z', '2024-03-11T04:00:00Z', NY, 1], // 23 h
    ['2024-11-03T04:00:00Z', '2024-11-04T05:00:00Z', NY, 1], // 25 h
    ['2024-03-09T05:00:00Z', '2024-03-12T04:00:00Z', NY, 3],
    ['2024-03-11T04:00:00Z', '2024-03-10T05:00:00Z', NY, -1],
    ['2024-03-30T23:00:00Z', '2024-04-01T22:00:00Z', BERLIN, 2],
    ['2024-10-26T22:00:00Z', '2024-10-27T23:00:00Z', BERLIN, 1],
  ]
  it.each(cases)('%s -> %s in %s is %i days', (start, end, tz, days) => {
    expect(daysBetween(d(start), d(end), tz)).toBe(days)
  })

  it('counts whole elapsed seconds', () => {
    expect(secondsBetween(d('2024-03-10T05:00:00Z'), d('2024-03-11T04:00:00Z'))).toBe(82_800)
    expect(secondsBetween(d('2024-01-01T00:00:00.900Z'), d('2024-01-01T00:00:02.100Z'))).toBe(2)
  })
})

describe('invalid input throws RangeError', () => {
  const t0 = d('2024-01-01T00:00:00Z')
  const t1 = d('2024-01-02T00:00:00Z')
  const cases: [string, () => unknown, RegExp][] = [
    ['count 0', () => periodBoundary(t0, 'MONTHLY', 0, 1), /count must be an integer >= 1/],
    ['count -1', () => periodContaining(t0, 'MONTHLY', -1, t1), /count must be an integer >= 1/],
    ['count 1.5', () => periodsBetween(t0, 'MONTHLY', 1.5, t0, t1), /count must be an integer >= 1/],
    ['count NaN', () => periodBoundary(t0, 'MONTHLY', NaN, 1), /count must be an integer >= 1/],
    ['fractional n', () => periodBoundary(t0, 'MONTHLY', 1, 0.5), /n must be an integer/],
    ['unknown period', () => periodBoundary(t0, 'YEARLY' as BillingPeriod, 1, 1), /unknown billing period/],
    ['unknown period (calendar)', () => calendarAnchor(t0, 'BIWEEKLY' as BillingPeriod), /unknown billing period/],
    ['unknown size', () => usageWindows(t0, t1, 'SECOND' as WindowSize), /unknown window size/],
    ['unknown zone (boundary)', () => periodBoundary(t0, 'MONTHLY', 1, 1, 'Mars/Olympus_Mons'), /unknown time zone/],
    ['unknown zone (windows)', () => usageWindows(t0, t1, 'DAY', { timeZone: 'Europe/Atlantis' }), /unknown time zone/],
    ['unknown zone (days)', () => daysBetween(t0, t1, 'Nowhere'), /unknown time zone/],
    ['invalid date', () => periodContaining(t0, 'MONTHLY', 1, d('not a date')), /must be a valid Date/],
    ['end == start', () => usageWindows(t0, t0, 'HOUR'), /must be after start/],
    ['end < start', () => usageWindows(t1, t0, 'HOUR'), /must be after start/],
  ]
  it.each(cases)('%s', (_label, call, message) => {
    expect(call).toThrow(RangeError)
    expect(call).toThrow(message)
  })
})
