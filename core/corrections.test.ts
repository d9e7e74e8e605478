import { describe, expect, it } from 'vitest'
import { correctable, correctionKey, nextStep, type ChainLink } from './corrections.ts'

const link = (sequence: number, action: ChainLink['action'], extra: Partial<ChainLink> = {}): ChainLink => ({
  id: `c${sequence}`,
  sequence,
  correction_key: `k${sequence}`,
  action,
  cancelled_id: sequence === 1 ? 'e1' : `r${sequence - 1}`,
  replacement_id: action === 'amend' ? `r${sequence}` : null,
  ...extra,
})

describe('correction chain', () => {
  it('the first correction of an event cancels the event itself', () => {
    expect(nextStep('e1', [], 'k')).toEqual({ kind: 'apply', sequence: 1, cancelledId: 'e1' })
  })

  it('after two amends the next correction cancels the second replacement', () => {
    expect(nextStep('e1', [link(2, 'amend'), link(1, 'amend')], 'k3')).toEqual({ kind: 'apply', sequence: 3, cancelledId: 'r2' })
  })

  it('a resent item replays its correction, even after later ones', () => {
    const chain = [link(1, 'amend'), link(2, 'cancel')]
    expect(nextStep('e1', chain, 'k1')).toEqual({ kind: 'replay', link: chain[0] })
  })

  it('nothing follows a cancel', () => {
    const step = nextStep('e1', [link(1, 'amend'), link(2, 'cancel')], 'other')
    expect(step).toMatchObject({ kind: 'refused', status: 409 })
    expect((step as { message: string }).message).toContain('e1 is already cancelled (correction c2)')
  })
})

describe('correction key', () => {
  it('is the same for the same item whatever the order of its keys, and differs with its content', () => {
    const a = correctionKey({ event_id: 'e1', action: 'amend', event: { event_name: 'x', properties: { a: 1, b: 2 } } })
    const b = correctionKey({ event_id: 'e1', action: 'amend', event: { properties: { b: 2, a: 1 }, event_name: 'x' } })
    expect(a).toBe(b)
    expect(correctionKey({ event_id: 'e1', action: 'amend', event: { event_name: 'x', properties: { a: 1, b: 3 } } })).not.toBe(a)
    expect(correctionKey({ event_id: 'e1', action: 'cancel' })).not.toBe(correctionKey({ event_id: 'e1', action: 'cancel', reason: 'dup' }))
  })
})

describe('correctable aggregations', () => {
  it('sums and counts are; minimum, maximum, unique counts and latest values are not', () => {
    expect(['COUNT', 'SUM', 'AVG', 'SUM_WITH_MULTIPLIER', 'WEIGHTED_SUM'].every((t) => correctable(t as never))).toBe(true)
    expect(['MIN', 'MAX', 'COUNT_UNIQUE', 'LATEST'].some((t) => correctable(t as never))).toBe(false)
  })
})
