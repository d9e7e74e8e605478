import { describe, expect, it } from 'vitest'
import { aggregateRows, DAY, HOUR, MINUTE, queryWindows, sliceValue, slicesOf, splitUnits, windowValues, type TimedRow } from './usage.ts'

const d = (s: string) => new Date(s)
const ms = (s: string) => d(s).getTime()

describe('slices', () => {
  it('cut each window by the buckets, aligned to the bucket size and clipped to the window', () => {
    const windows = queryWindows(d('2024-01-01T10:30:00Z'), d('2024-01-02T01:00:00Z'), 'DAY', {})
    const slices = slicesOf(windows, '12HOUR', {})
    expect(slices.map((s) => [s.start.toISOString(), s.end.toISOString(), s.window])).toEqual([
      ['2024-01-01T10:30:00.000Z', '2024-01-01T12:00:00.000Z', 0],
      ['2024-01-01T12:00:00.000Z', '2024-01-02T00:00:00.000Z', 0],
      ['2024-01-02T00:00:00.000Z', '2024-01-02T01:00:00.000Z', 1],
    ])
  })

  it('without a window size the whole range is one window', () => {
    expect(queryWindows(d('2024-01-01T00:00:00Z'), d('2024-01-05T00:00:00Z'), undefined, {})).toEqual([
      { windowStart: d('2024-01-01T00:00:00Z'), start: d('2024-01-01T00:00:00Z'), end: d('2024-01-05T00:00:00Z') },
    ])
  })

  it('splitUnits lists the minutes (or hours) holding a boundary off the unit, once', () => {
    const slices = [
      { start: d('2024-01-01T00:00:30.500Z'), end: d('2024-01-01T00:05:00Z'), window: 0 },
      { start: d('2024-01-01T00:05:00Z'), end: d('2024-01-01T00:09:59.999Z'), window: 0 },
      { start: d('2024-01-01T00:09:59.999Z'), end: d('2024-01-01T00:10:00Z'), window: 1 },
    ]
    expect(splitUnits(slices, MINUTE).map((m) => m.toISOString())).toEqual(['2024-01-01T00:00:00.000Z', '2024-01-01T00:09:00.000Z'])
    expect(splitUnits(slices, HOUR).map((m) => m.toISOString())).toEqual(['2024-01-01T00:00:00.000Z'])
    expect(splitUnits(slices, DAY).map((m) => m.toISOString())).toEqual(['2024-01-01T00:00:00.000Z'])
  })

  it('splitUnits of days: a New York midnight cuts the UTC day holding it, a UTC midnight none', () => {
    const days = slicesOf(queryWindows(d('2024-03-09T05:00:00Z'), d('2024-03-11T04:00:00Z'), 'DAY', { timeZone: 'America/New_York' }), undefined, {})
    expect(splitUnits(days, DAY).map((m) => m.toISOString())).toEqual(['2024-03-09T00:00:00.000Z', '2024-03-10T00:00:00.000Z', '2024-03-11T00:00:00.000Z'])
    expect(splitUnits(slicesOf(queryWindows(d('2024-03-01T00:00:00Z'), d('2024-05-01T00:00:00Z'), 'MONTH', {}), undefined, {}), DAY)).toEqual([])
  })
})

describe('values', () => {
  const slices = slicesOf(queryWindows(d('2024-01-01T00:00:00Z'), d('2024-01-01T02:00:00Z'), 'HOUR', {}), undefined, {})
  const base = ms('2024-01-01T00:00:00Z')
  const rows: TimedRow[] = [
    { at: ms('2024-01-01T00:15:00Z'), eventId: 'b', value: '4', groupValue: 'x', uniqueValue: 'u1' },
    { at: ms('2024-01-01T00:45:00Z'), eventId: 'a', value: '2', groupValue: 'x', uniqueValue: 'u2' },
    { at: ms('2024-01-01T00:45:00Z'), eventId: 'c', value: '6', groupValue: 'y', uniqueValue: 'u1' },
    { at: ms('2024-01-01T01:00:00Z'), eventId: 'd', value: '1.5', groupValue: 'x', uniqueValue: 'u1' },
  ]
  const aggregates = aggregateRows(rows, slices, base)

  it.each([
    ['COUNT', ['3', '1']],
    ['SUM', ['12', '1.5']],
    ['AVG', ['9', '1.5']], // groups x: (4+2)/2 = 3, y: 6 → 9
    ['MIN', ['8', '1.5']], // x 2 + y 6
    ['MAX', ['10', '1.5']], // x 4 + y 6
    ['COUNT_UNIQUE', ['3', '1']], // x {u1,u2} + y {u1}
    ['LATEST', ['8', '1.5']], // x: a at 00:45 (2), y: 6
    // x: 4 × 45/60 + 2 × 15/60 = 3.5, y: 6 × 15/60 = 1.5 → 5; second hour 1.5 × 60/60
    ['WEIGHTED_SUM', ['5', '1.5']],
  ] as const)('%s per window', (type, expected) => {
    expect(windowValues({ type }, slices, aggregates, 2, base).map((w) => w.value.toFixed())).toEqual(expected)
  })

  it('SUM_WITH_MULTIPLIER multiplies exactly', () => {
    expect(windowValues({ type: 'SUM_WITH_MULTIPLIER', multiplier: '0.001' }, slices, aggregates, 2, base).map((w) => w.value.toFixed())).toEqual(['0.012', '0.0015'])
  })

  it('LATEST breaks a tie on time by the larger event id', () => {
    const tie = aggregateRows([rows[1], { ...rows[1], eventId: 'z', value: '9' }], slices, base)
    expect(windowValues({ type: 'LATEST' }, slices, tie, 2, base)[0].value.toFixed()).toBe('9')
  })

  it('AVG and WEIGHTED_SUM round to 12 places', () => {
    const third = aggregateRows([{ at: ms('2024-01-01T00:20:00Z'), eventId: 'a', value: '1', groupValue: '', uniqueValue: '' }], slices, base)
    expect(sliceValue({ type: 'WEIGHTED_SUM' }, third[0], slices[0], base).toFixed()).toBe('0.666666666667')
  })
})
