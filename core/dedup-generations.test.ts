// Which generation of the dedup filter lookups use, and when generations are filled and dropped, with hand-made times.
import { describe, expect, it } from 'vitest'
import { planGenerations, topUpFrom } from './dedup-generations.ts'

const HOUR = 3_600_000
const DAY = 24 * HOUR
const at = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms)
const marks = (...m: [number, number][]) => new Map(m.map(([g, t]) => [g, at(t)]))

describe('planGenerations', () => {
  it('fills generation 1 when there is none (a fresh start or an upgrade with stored ids)', () => {
    expect(planGenerations({ marked: new Map(), sets: [], views: [] }, at(0))).toEqual({ use: undefined, fill: 1, drop: [] })
  })

  it('uses the newest marked generation until it is a period old, then fills the next', () => {
    const g = { marked: marks([1, 0]), sets: [1], views: [1] }
    expect(planGenerations(g, at(DAY - 1))).toEqual({ use: 1, fill: undefined, drop: [] })
    expect(planGenerations(g, at(DAY))).toEqual({ use: 1, fill: 2, drop: [] })
  })

  it('keeps the one in use while the next fills, and fills an unmarked newest one again rather than skipping it', () => {
    expect(planGenerations({ marked: marks([1, 0]), sets: [1, 2], views: [1, 2] }, at(DAY + HOUR))).toEqual({ use: 1, fill: 2, drop: [] })
    // A fill that stopped before its view was made.
    expect(planGenerations({ marked: new Map(), sets: [3], views: [] }, at(0))).toEqual({ use: undefined, fill: 3, drop: [] })
  })

  it('drops older generations, view and table, only once the newer one has been marked for ten minutes', () => {
    const g = { marked: marks([1, 0], [2, DAY]), sets: [1, 2], views: [1, 2] }
    expect(planGenerations(g, at(DAY + 9 * 60_000)).drop).toEqual([])
    expect(planGenerations(g, at(DAY + 10 * 60_000))).toEqual({ use: 2, fill: undefined, drop: [1] })
    // What a drop cut short left: a table without its view.
    expect(planGenerations({ ...g, marked: marks([2, DAY]), views: [2] }, at(DAY + HOUR)).drop).toEqual([1])
  })

  it('never uses a generation whose table or view is missing: the one before it, or a new one', () => {
    expect(planGenerations({ marked: marks([1, 0], [2, HOUR]), sets: [1], views: [1, 2] }, at(2 * HOUR))).toEqual({ use: 1, fill: undefined, drop: [] })
    expect(planGenerations({ marked: marks([2, HOUR]), sets: [2], views: [] }, at(2 * HOUR))).toEqual({ use: undefined, fill: 3, drop: [] })
  })
})

describe('topUpFrom', () => {
  it('starts a day before the minimum dedup window after the fill', () => {
    expect(topUpFrom(at(0))).toEqual(at(34 * DAY))
  })
})
