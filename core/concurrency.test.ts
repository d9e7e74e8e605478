import { describe, expect, it } from 'vitest'
import { inParallel, timeSlicer, yieldToLoop } from './concurrency.ts'

const tick = () => new Promise((resolve) => setTimeout(resolve, 1))

describe('inParallel', () => {
  it('runs every item once, never more than n at a time', async () => {
    let running = 0
    let peak = 0
    const seen: number[] = []
    await inParallel([1, 2, 3, 4, 5, 6, 7], 3, async (i) => {
      running++
      peak = Math.max(peak, running)
      await tick()
      seen.push(i)
      running--
    })
    expect(peak).toBe(3)
    expect(seen.sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7])
  })

  it('takes falsy items too, and does nothing for none', async () => {
    const seen: unknown[] = []
    await inParallel([0, undefined, ''], 2, async (x) => void seen.push(x))
    expect(seen).toEqual([0, undefined, ''])
    await inParallel([], 4, async () => void seen.push('never'))
    expect(seen).toHaveLength(3)
  })

  it('rejects with the first failure', async () => {
    await expect(inParallel([1, 2, 3], 2, async (i) => {
      if (i === 2) throw new Error('item 2')
    })).rejects.toThrow('item 2')
  })
})

describe('timeSlicer', () => {
  it('returns at once within its budget and lets waiting callbacks run once it is spent', async () => {
    const pause = timeSlicer(20)
    let ran = false
    setImmediate(() => (ran = true))
    await pause()
    expect(ran).toBe(false)
    const until = performance.now() + 25
    while (performance.now() < until) {
      // pure work past the budget
    }
    await pause()
    expect(ran).toBe(true)
  })

  it('yieldToLoop lets a callback scheduled before it run first', async () => {
    const order: string[] = []
    setImmediate(() => order.push('request'))
    await yieldToLoop()
    order.push('job')
    expect(order).toEqual(['request', 'job'])
  })
})
