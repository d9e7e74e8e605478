import { describe, expect, it } from 'vitest'
import { runs } from './runs.ts'

describe('runs', () => {
  it('cuts where the next item would go over the weight limit, keeping the order', () => {
    // 3 + 4 = 7 ≤ 8; + 2 = 9 > 8: a new run from 2; 2 + 5 = 7; + 1 = 8 ≤ 8.
    expect(runs([3, 4, 2, 5, 1], (n) => n, (_, w) => w <= 8)).toEqual([[3, 4], [2, 5, 1]])
  })

  it('an item heavier than the limit is a run of its own', () => {
    expect(runs([1, 20, 1], (n) => n, (_, w) => w <= 8)).toEqual([[1], [20], [1]])
  })

  it('limits the count as well as the weight', () => {
    expect(runs(['a', 'b', 'c', 'd', 'e'], () => 0, (count) => count <= 2)).toEqual([['a', 'b'], ['c', 'd'], ['e']])
  })

  it('nothing in, nothing out', () => {
    expect(runs([], () => 1, () => true)).toEqual([])
  })
})
