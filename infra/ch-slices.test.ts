import { describe, expect, it } from 'vitest'
import { evenStep, sliceSql } from './ch-slices.ts'

const d = (s: string) => new Date(s)

describe('slice SQL', () => {
  it('finds equal slices by arithmetic: UTC days, and a range of whole hours', () => {
    const days = [d('2024-03-01T00:00:00Z'), d('2024-03-02T00:00:00Z'), d('2024-03-03T00:00:00Z')]
    expect(evenStep(days, d('2024-03-04T00:00:00Z'))).toBe(86_400_000)
    // A last slice cut short by the range's end is still found by the same division.
    expect(evenStep(days, d('2024-03-03T05:00:00Z'))).toBe(86_400_000)
    expect(sliceSql(days, d('2024-03-04T00:00:00Z'))).toEqual({ of: expect.any(Function), join: '' })
    expect(sliceSql(days, d('2024-03-04T00:00:00Z')).of('u.t')).toBe('toUInt32(intDiv(toUnixTimestamp64Milli(u.t) - 1709251200000, 86400000))')
  })

  it('counts the starts of uneven slices: months, a first slice cut by the range, a last one longer than the rest', () => {
    const months = [d('2024-01-01T00:00:00Z'), d('2024-02-01T00:00:00Z'), d('2024-03-01T00:00:00Z')]
    expect(evenStep(months, d('2024-04-01T00:00:00Z'))).toBeUndefined()
    expect(sliceSql(months, d('2024-04-01T00:00:00Z')).of('t')).toMatch(/^toUInt32\(arrayCount\(s -> s <= t, \[toDateTime64\('2024-01-01 00:00:00.000'/)
    // From 10:30: [10:30, 11:00) then [11:00, 11:45): a division by 30 minutes would put 11:40 in a third slice.
    expect(evenStep([d('2024-03-01T10:30:00Z'), d('2024-03-01T11:00:00Z')], d('2024-03-01T11:45:00Z'))).toBeUndefined()
  })

  it('joins many uneven starts rather than count them per row', () => {
    const starts = Array.from({ length: 40 }, (_, i) => new Date(Date.UTC(2024, i, 1)))
    const slicing = sliceSql(starts, new Date(Date.UTC(2024, 40, 1)))
    expect(slicing.of('u.t')).toBe('b.slice')
    expect(slicing.join).toMatch(/^ASOF INNER JOIN/)
    expect(sliceSql([d('2024-03-01T00:00:00Z')], d('2024-03-05T00:00:00Z')).of('t')).toBe('toUInt32(0)')
  })
})
