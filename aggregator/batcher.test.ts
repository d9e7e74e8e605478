import { describe, expect, it } from 'vitest'
import { Batcher } from './batcher.ts'

const limits = { maxRows: 5, maxBytes: 1_000_000, lingerMs: 20, maxPendingRows: 12 }

describe('Batcher', () => {
  it('writes concurrent requests together after the linger time, each request whole', async () => {
    const writes: number[][] = []
    const b = new Batcher<number>(limits, async (items) => void writes.push(items))
    await Promise.all([b.add([1, 2], 10), b.add([3], 10)])
    expect(writes).toEqual([[1, 2, 3]])
  })

  it('writes at once when a batch is full, never splitting a request', async () => {
    const writes: number[][] = []
    const b = new Batcher<number>(limits, async (items) => void writes.push(items))
    await Promise.all([b.add([1, 2, 3], 10), b.add([4, 5, 6], 10), b.add([7], 10)])
    expect(writes).toEqual([[1, 2, 3], [4, 5, 6, 7]])
  })

  it('fails every request of a failed batch and refuses work beyond the pending limit', async () => {
    let fail: (err: Error) => void = () => {}
    const b = new Batcher<number>(limits, () => new Promise((_, reject) => (fail = reject)))
    // The first request is being written, the second waits (6 of 12 pending), the third would exceed 12.
    const settled = Promise.allSettled([b.add([1, 2, 3, 4, 5, 6], 1), b.add([7, 8, 9, 10, 11, 12], 1), b.add([13, 14, 15, 16, 17, 18, 19], 1)])
    fail(new Error('down'))
    await new Promise((r) => setTimeout(r, 50))
    fail(new Error('down'))
    const results = await settled
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected'])
    expect((results[2] as PromiseRejectedResult).reason.code).toBe('service_unavailable')
    expect((results[0] as PromiseRejectedResult).reason.message).toBe('down')
  })

  it('drain writes what is queued', async () => {
    const writes: number[][] = []
    const b = new Batcher<number>({ ...limits, lingerMs: 60_000 }, async (items) => void writes.push(items))
    const pending = b.add([1], 1)
    await b.drain()
    await pending
    expect(writes).toEqual([[1]])
  })
})
