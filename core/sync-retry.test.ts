import { describe, expect, it } from 'vitest'
import { nextSyncAttempt } from './sync-retry.ts'

describe('provider push retries', () => {
  it('waits 1, 2, 4 … minutes, at most an hour, and gives up after the 10th failure', () => {
    const now = new Date('2026-01-01T00:00:00Z')
    const waits = Array.from({ length: 9 }, (_, i) => (nextSyncAttempt(i + 1, now)!.getTime() - now.getTime()) / 60_000)
    expect(waits).toEqual([1, 2, 4, 8, 16, 32, 60, 60, 60])
    expect(nextSyncAttempt(10, now)).toBeNull()
  })
})
