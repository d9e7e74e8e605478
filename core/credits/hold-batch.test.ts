import { describe, expect, it } from 'vitest'
import { D } from '../money.ts'
import { decideHoldBatch, type BatchState, type HoldChange, type KnownHold } from './hold-batch.ts'

const at = new Date('2025-01-01T00:00:00Z')
const later = new Date('2025-01-01T00:10:00Z')
const active = (amount: string, expires = later): KnownHold => ({ amount: new D(amount), status: 'active', expires_at: expires })
const state = (balance: string, held: string, holds: Record<string, KnownHold> = {}, keys: string[] = []): BatchState => ({
  balance: new D(balance),
  held: new D(held),
  holds: new Map(Object.entries(holds)),
  keys: new Set(keys),
  at,
})
const create = (amount: string, key: string | null = null): HoldChange => ({ kind: 'create', amount: new D(amount), key })
const settle = (hold: string, credits: string, allow_overage = false): HoldChange => ({ kind: 'settle', hold, credits: new D(credits), allow_overage })
const show = (r: ReturnType<typeof decideHoldBatch>) => ({
  decisions: r.decisions.map((d) => JSON.parse(JSON.stringify(d))),
  balance: r.balance.toFixed(),
  held: r.held.toFixed(),
})

describe('decideHoldBatch', () => {
  it('makes holds in order until the available balance is used, then refuses each with what is left', () => {
    // 10 available: 4 + 4 fit (8 held), 3 does not (2 left), 2 fits exactly (10 held), 0.5 does not (0 left).
    const r = decideHoldBatch(state('10', '0'), [create('4'), create('4'), create('3'), create('2'), create('0.5')])
    expect(show(r)).toEqual({
      decisions: [{ kind: 'make' }, { kind: 'make' }, { kind: 'insufficient', available: '2', held: '8' }, { kind: 'make' }, { kind: 'insufficient', available: '0', held: '10' }],
      balance: '10',
      held: '10',
    })
  })

  it('a settle frees its hold for the creates after it in the same batch', () => {
    // Balance 100, hold h of 20 among 95 held (5 free). Settling 17.34 debits 17.34: balance 82.66, held 75, free 7.66.
    const r = decideHoldBatch(state('100', '95', { h: active('20') }), [create('7'), settle('h', '17.34'), create('7.66'), create('0.01')])
    expect(show(r)).toEqual({
      decisions: [{ kind: 'insufficient', available: '5', held: '95' }, { kind: 'close', debit: '17.34' }, { kind: 'make' }, { kind: 'insufficient', available: '0', held: '82.66' }],
      balance: '82.66',
      held: '82.66',
    })
  })

  it('settling or releasing twice answers the first; the other way is refused with the status', () => {
    const r = decideHoldBatch(state('50', '30', { a: active('10'), b: active('20') }), [
      settle('a', '4'),
      settle('a', '9'),
      { kind: 'release', hold: 'a' },
      { kind: 'release', hold: 'b' },
      { kind: 'release', hold: 'b' },
      settle('b', '1'),
    ])
    // a: debit 4 (balance 46, held 20); b released (held 0).
    expect(show(r)).toEqual({
      decisions: [{ kind: 'close', debit: '4' }, { kind: 'answer' }, { kind: 'not_active', status: 'settled' }, { kind: 'close', debit: '0' }, { kind: 'answer' }, { kind: 'not_active', status: 'released' }],
      balance: '46',
      held: '0',
    })
  })

  it('refuses a hold past its expiry, an unknown hold, and more than the hold without allow_overage', () => {
    const r = decideHoldBatch(state('50', '10', { old: active('5', at), h: active('10') }), [settle('old', '1'), settle('nope', '1'), settle('h', '10.5')])
    expect(show(r).decisions).toEqual([{ kind: 'not_active', status: 'expired' }, { kind: 'not_found' }, { kind: 'exceeds', reason: 'exceeds_hold', most: '10' }])
  })

  it('takes an overage only from what is free besides the other holds', () => {
    // Balance 30, holds h 10 and another 15 (held 25): 5 free besides them, so h settles for at most 15.
    const r = decideHoldBatch(state('30', '25', { h: active('10') }), [settle('h', '15.01', true), settle('h', '15', true)])
    expect(show(r)).toEqual({ decisions: [{ kind: 'exceeds', reason: 'exceeds_available', most: '15' }, { kind: 'close', debit: '15' }], balance: '15', held: '15' })
  })

  it('refuses a debit the credits cannot pay (credits expired under the hold)', () => {
    // The hold of 10 outlived 7 of the wallet's 10 credits: balance 3.
    const r = decideHoldBatch(state('3', '10', { h: active('10') }), [settle('h', '4'), settle('h', '3')])
    expect(show(r)).toEqual({ decisions: [{ kind: 'uncovered', available: '3' }, { kind: 'close', debit: '3' }], balance: '0', held: '0' })
  })

  it('replays an idempotency key stored or used earlier in the batch, without holding twice', () => {
    const r = decideHoldBatch(state('10', '0', {}, ['k1']), [create('4', 'k1'), create('4', 'k2'), create('4', 'k2'), create('4', 'k3')])
    expect(show(r)).toEqual({ decisions: [{ kind: 'replay', key: 'k1' }, { kind: 'make' }, { kind: 'replay', key: 'k2' }, { kind: 'make' }], balance: '10', held: '8' })
  })

  it('1,000 holds of 1 on a wallet of 100: exactly 100 made', () => {
    const r = decideHoldBatch(state('100', '0'), Array.from({ length: 1000 }, () => create('1')))
    expect(r.decisions.filter((d) => d.kind === 'make')).toHaveLength(100)
    expect(r.held.toFixed()).toBe('100')
  })
})
