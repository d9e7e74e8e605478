import { describe, expect, it } from 'vitest'
import { partitionOf, splitByDay, windowEndAfter, windowsFrom, windowStartOf } from './export-windows.ts'

const at = (s: string) => new Date(s)
const iso = (ws: { start: Date; end: Date }[]) => ws.map((w) => `${w.start.toISOString()}/${w.end.toISOString()}`)

describe('export windows', () => {
  it('aligns windows to UTC boundaries of the interval', () => {
    expect(windowStartOf(at('2024-03-01T10:37:12Z'), '15MIN').toISOString()).toBe('2024-03-01T10:30:00.000Z')
    expect(windowStartOf(at('2024-03-01T10:37:12Z'), 'hourly').toISOString()).toBe('2024-03-01T10:00:00.000Z')
    expect(windowStartOf(at('2024-03-01T10:37:12Z'), 'daily').toISOString()).toBe('2024-03-01T00:00:00.000Z')
    // After a forced run the watermark is unaligned: the next window ends at the next boundary.
    expect(windowEndAfter(at('2024-03-01T10:37:12Z'), 'hourly').toISOString()).toBe('2024-03-01T11:00:00.000Z')
  })

  it('gives whole windows from the watermark, contiguous, at most max', () => {
    expect(iso(windowsFrom(at('2024-03-01T22:00:00Z'), at('2024-03-02T01:30:00Z'), 'hourly', { max: 10 }))).toEqual([
      '2024-03-01T22:00:00.000Z/2024-03-01T23:00:00.000Z',
      '2024-03-01T23:00:00.000Z/2024-03-02T00:00:00.000Z',
      '2024-03-02T00:00:00.000Z/2024-03-02T01:00:00.000Z',
    ])
    expect(windowsFrom(at('2024-03-01T00:00:00Z'), at('2024-03-02T00:00:00Z'), '15MIN', { max: 5 })).toHaveLength(5)
    expect(windowsFrom(at('2024-03-01T00:00:00Z'), at('2024-03-01T23:59:59Z'), 'daily', { max: 5 })).toEqual([])
  })

  it('with partial, ends the last window at the limit', () => {
    expect(iso(windowsFrom(at('2024-03-01T10:37:12Z'), at('2024-03-01T11:05:00Z'), 'hourly', { max: 10, partial: true }))).toEqual([
      '2024-03-01T10:37:12.000Z/2024-03-01T11:00:00.000Z',
      '2024-03-01T11:00:00.000Z/2024-03-01T11:05:00.000Z',
    ])
  })

  it('cuts a range at midnights, each piece in its day partition', () => {
    const pieces = splitByDay(at('2024-02-28T20:00:00Z'), at('2024-03-01T02:00:00Z'))
    expect(iso(pieces)).toEqual([
      '2024-02-28T20:00:00.000Z/2024-02-29T00:00:00.000Z',
      '2024-02-29T00:00:00.000Z/2024-03-01T00:00:00.000Z',
      '2024-03-01T00:00:00.000Z/2024-03-01T02:00:00.000Z',
    ])
    expect(pieces.map(partitionOf)).toEqual(['date=2024-02-28', 'date=2024-02-29', 'date=2024-03-01'])
  })
})
