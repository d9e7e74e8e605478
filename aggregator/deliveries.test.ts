// Records delivered twice by kafkajs after a seek are handed on once; a stale fetch from before a seek is skipped.
import { describe, expect, it } from 'vitest'
import { Deliveries } from './deliveries.ts'

const batch = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => ({ offset: String(from + i) }))
const offsets = (ms: { offset: string }[]) => ms.map((m) => Number(m.offset))

describe('deliveries', () => {
  it('hands on every record of a partition once in a run', () => {
    const d = new Deliveries()
    expect(offsets(d.fresh(3, batch(0, 4)))).toEqual([0, 1, 2, 3, 4])
    d.handed(3, '4')
    // The same records again (overlapping the next ones): only the new ones.
    expect(offsets(d.fresh(3, batch(2, 7)))).toEqual([5, 6, 7])
    expect(d.fresh(3, batch(0, 4))).toEqual([])
    // Another partition is its own.
    expect(offsets(d.fresh(1, batch(2, 3)))).toEqual([2, 3])
  })

  it('after a seek, skips the stale fetch that starts past it, then takes the records from the seek on', () => {
    const d = new Deliveries()
    d.handed(3, '61')
    d.seek(3, '58')
    // Fetched from 62 before the seek, answered after the new leader's fetch applied it.
    expect(d.fresh(3, batch(62, 125))).toEqual([])
    expect(offsets(d.fresh(3, batch(58, 60)))).toEqual([58, 59, 60])
    d.handed(3, '60')
    expect(offsets(d.fresh(3, batch(61, 62)))).toEqual([61, 62])
  })

  it('takes a gap that keeps coming back after a seek as real (records gone to retention)', () => {
    const d = new Deliveries()
    d.seek(0, '10')
    expect(d.fresh(0, batch(500, 501))).toEqual([])
    expect(d.fresh(0, batch(500, 501))).toEqual([])
    expect(offsets(d.fresh(0, batch(500, 501)))).toEqual([500, 501])
  })

  it('forgets the positions at a new assignment', () => {
    const d = new Deliveries()
    d.handed(2, '99')
    d.reset()
    expect(offsets(d.fresh(2, batch(40, 41)))).toEqual([40, 41])
  })
})
