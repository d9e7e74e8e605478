import { describe, expect, it } from 'vitest'
import { GroupCommit, type Outcome } from './group-commit.ts'

/** A committer that records its batches and answers each number doubled, refusing odd ones. */
function doubling(options?: { max?: number; gatherMs?: number }) {
  const batches: number[][] = []
  const gc = new GroupCommit<number, number>(async (_key, requests) => {
    batches.push(requests)
    await new Promise((r) => setTimeout(r, 5))
    return requests.map((n): Outcome<number> => (n % 2 === 0 ? { ok: true, value: n * 2 } : { ok: false, error: new Error(`odd ${n}`) }))
  }, options)
  return { gc, batches }
}

describe('GroupCommit', () => {
  it('answers each request its own outcome; requests of one tick form one batch', async () => {
    const { gc, batches } = doubling()
    const answers = await Promise.allSettled([2, 3, 4].map((n) => gc.submit('k', n)))
    expect(answers.map((a) => (a.status === 'fulfilled' ? a.value : (a.reason as Error).message))).toEqual([4, 'odd 3', 8])
    expect(batches).toEqual([[2, 3, 4]])
  })

  it('queues what arrives while a batch of its key is in flight into the next batch; other keys run apart', async () => {
    const { gc, batches } = doubling()
    const first = gc.submit('a', 2)
    await new Promise((r) => setTimeout(r, 1))
    const later = [gc.submit('a', 4), gc.submit('a', 6), gc.submit('b', 8)]
    expect(await Promise.all([first, ...later])).toEqual([4, 8, 12, 16])
    expect(batches).toEqual([[2], [8], [4, 6]])
  })

  it('takes at most `max` a batch', async () => {
    const { gc, batches } = doubling({ max: 2 })
    await Promise.all([2, 4, 6, 8, 10].map((n) => gc.submit('k', n)))
    expect(batches).toEqual([[2, 4], [6, 8], [10]])
  })

  it('fails every request of a batch whose run throws, and runs the next', async () => {
    let calls = 0
    const gc = new GroupCommit<number, number>(async (_key, requests) => {
      if (calls++ === 0) throw new Error('down')
      return requests.map((n) => ({ ok: true, value: n }))
    })
    const failed = await Promise.allSettled([gc.submit('k', 1), gc.submit('k', 2)])
    expect(failed.map((f) => f.status)).toEqual(['rejected', 'rejected'])
    expect(await gc.submit('k', 3)).toBe(3)
  })

  it('with gatherMs, waits for the callers just answered before the next batch', async () => {
    const { gc, batches } = doubling({ gatherMs: 50 })
    // Two callers in a loop, the second starting while the first's batch runs: without gathering they would alternate.
    const caller = async (start: number) => {
      for (let n = start; n < start + 6; n += 2) await gc.submit('k', n)
    }
    const one = caller(0)
    await new Promise((r) => setTimeout(r, 1))
    await Promise.all([one, caller(100)])
    expect(batches).toEqual([[0], [100, 2], [102, 4], [104]])
  })
})
