import { describe, expect, it } from 'vitest'
import { costParts, pricesAt, type DatedPrice } from './schedule.ts'

const d = (s: string) => new Date(s)
const price = (id: string, meter: string, start: string | null, end: string | null, created = '2024-01-01T00:00:00Z'): DatedPrice => ({
  id,
  meter_id: meter,
  start_date: start ? d(start) : null,
  end_date: end ? d(end) : null,
  created_at: d(created),
})
const ids = (m: Map<string, DatedPrice>) => Object.fromEntries([...m].map(([k, v]) => [k, v.id]))

describe('costParts', () => {
  it('keeps one part when no price changes inside the range', () => {
    const parts = costParts([price('a', 'in', null, null)], d('2024-04-01T00:00:00Z'), d('2024-05-01T00:00:00Z'))
    expect(parts.map((p) => [p.start.toISOString(), p.end.toISOString(), ids(p.prices)])).toEqual([['2024-04-01T00:00:00.000Z', '2024-05-01T00:00:00.000Z', { in: 'a' }]])
  })

  it('cuts the range where a later-starting price supersedes the one before it', () => {
    // a holds for good; b starts 15 April and wins from then (the later start), without a needing an end date.
    const parts = costParts([price('a', 'in', null, null), price('b', 'in', '2024-04-15T00:00:00Z', null), price('c', 'out', null, null)], d('2024-04-01T00:00:00Z'), d('2024-05-01T00:00:00Z'))
    expect(parts.map((p) => [p.start.toISOString(), p.end.toISOString(), ids(p.prices)])).toEqual([
      ['2024-04-01T00:00:00.000Z', '2024-04-15T00:00:00.000Z', { in: 'a', out: 'c' }],
      ['2024-04-15T00:00:00.000Z', '2024-05-01T00:00:00.000Z', { in: 'b', out: 'c' }],
    ])
  })

  it('leaves a meter without a price where none is in force, and merges parts whose prices are the same', () => {
    // a ends 10 April: nothing from then until d starts on the 20th; e's dates lie outside the range and cut nothing.
    const parts = costParts([price('a', 'in', null, '2024-04-10T00:00:00Z'), price('d', 'in', '2024-04-20T00:00:00Z', null), price('e', 'out', '2024-01-01T00:00:00Z', '2024-12-01T00:00:00Z')], d('2024-04-01T00:00:00Z'), d('2024-05-01T00:00:00Z'))
    expect(parts.map((p) => [p.start.toISOString().slice(0, 10), p.end.toISOString().slice(0, 10), ids(p.prices)])).toEqual([
      ['2024-04-01', '2024-04-10', { in: 'a', out: 'e' }],
      ['2024-04-10', '2024-04-20', { out: 'e' }],
      ['2024-04-20', '2024-05-01', { in: 'd', out: 'e' }],
    ])
  })

  it('prefers the newer of two prices starting together', () => {
    const chosen = pricesAt([price('old', 'in', '2024-04-01T00:00:00Z', null, '2024-01-01T00:00:00Z'), price('new', 'in', '2024-04-01T00:00:00Z', null, '2024-02-01T00:00:00Z')], d('2024-04-02T00:00:00Z').getTime())
    expect(ids(chosen)).toEqual({ in: 'new' })
  })

  it('refuses an empty range', () => {
    expect(() => costParts([], d('2024-04-01T00:00:00Z'), d('2024-04-01T00:00:00Z'))).toThrow(RangeError)
  })
})
