import { describe, expect, it } from 'vitest'
import { READ_CACHE_MS, ReadCache, writeCommitted } from './read-cache.ts'

const at = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms)

function counted() {
  let loads = 0
  return { load: async () => ++loads, loads: () => loads }
}

describe('the hot-read cache', () => {
  it('answers from memory within READ_CACHE_MS, and reads again once it has passed', async () => {
    const cache = new ReadCache<number>()
    const c = counted()
    expect(await cache.read('k', at(0), c.load)).toBe(1)
    expect(await cache.read('k', at(READ_CACHE_MS - 1), c.load)).toBe(1)
    expect(await cache.read('k', at(READ_CACHE_MS), c.load)).toBe(2)
    expect(await cache.read('other', at(READ_CACHE_MS), c.load)).toBe(3)
  })

  it('never answers across a write of this process', async () => {
    const cache = new ReadCache<number>()
    const c = counted()
    await cache.read('k', at(0), c.load)
    writeCommitted()
    expect(await cache.read('k', at(1), c.load)).toBe(2)
  })

  it('shares a load in flight, keeps no failure, and trusts no entry from a clock set back', async () => {
    const cache = new ReadCache<number>()
    const c = counted()
    const [a, b] = await Promise.all([cache.read('k', at(0), c.load), cache.read('k', at(0), c.load)])
    expect([a, b, c.loads()]).toEqual([1, 1, 1])
    await expect(cache.read('bad', at(0), () => Promise.reject(new Error('store down')))).rejects.toThrow('store down')
    expect(await cache.read('bad', at(1), c.load)).toBe(2)
    expect(await cache.read('k', at(-1), c.load)).toBe(3)
  })
})
