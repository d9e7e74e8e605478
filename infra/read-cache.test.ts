import { describe, expect, it } from 'vitest'
import { READ_CACHE_MS, ReadCache, writeCommitted } from './read-cache.ts'

const REFRESH_AT = READ_CACHE_MS * 0.8

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

  it('in the last fifth of its life, answers at once and reads again in the background; never answers older than READ_CACHE_MS', async () => {
    const cache = new ReadCache<number>()
    let loads = 0
    let release: () => void = () => {}
    const slow = () => new Promise<number>((resolve) => (release = () => resolve(++loads)))
    const first = cache.read('k', at(0), slow)
    release()
    expect(await first).toBe(1)
    expect(await cache.read('k', at(REFRESH_AT - 1), slow)).toBe(1)
    // Four fifths of its life: the cached value, while the next load runs.
    expect(await cache.read('k', at(REFRESH_AT), slow)).toBe(1)
    expect(await cache.read('k', at(REFRESH_AT + 1), slow)).toBe(1)
    release()
    await new Promise((r) => setImmediate(r))
    // The background load, taken at four fifths, answers until READ_CACHE_MS after it.
    expect(await cache.read('k', at(READ_CACHE_MS + 10), slow)).toBe(2)
    // Past READ_CACHE_MS of the value answered, a read waits for a new load.
    const late = cache.read('k', at(REFRESH_AT + READ_CACHE_MS), slow)
    release()
    expect(await late).toBe(3)
  })

  it('a background load that fails leaves the cached value, and the next hit tries again', async () => {
    const cache = new ReadCache<number>()
    let fail = false
    let loads = 0
    const load = async () => {
      loads++
      if (fail) throw new Error('store down')
      return loads
    }
    expect(await cache.read('k', at(0), load)).toBe(1)
    fail = true
    expect(await cache.read('k', at(REFRESH_AT), load)).toBe(1)
    await new Promise((r) => setImmediate(r))
    fail = false
    expect(await cache.read('k', at(REFRESH_AT + 1), load)).toBe(1)
    await new Promise((r) => setImmediate(r))
    expect([await cache.read('k', at(REFRESH_AT + 2), load), loads]).toEqual([3, 3])
  })
})
