import { describe, expect, it } from 'vitest'
import { D } from '../money.ts'
import { availableCredits, creditsForCharge, fitHold, heldAt, planSettle } from './holds.ts'

const at = new Date('2025-01-01T00:00:00Z')
const hold = (amount: string, expires: string) => ({ amount: new D(amount), expires_at: new Date(expires) })

describe('heldAt and availableCredits', () => {
  it('counts only holds whose expiry is after the instant', () => {
    const holds = [hold('10', '2025-01-01T00:00:01Z'), hold('2.5', '2025-01-02T00:00:00Z'), hold('7', '2025-01-01T00:00:00Z')]
    // 10 + 2.5; the third expires exactly now and holds nothing.
    expect(heldAt(holds, at).toFixed()).toBe('12.5')
    expect(availableCredits(new D('100'), heldAt(holds, at)).toFixed()).toBe('87.5')
  })
  it('is the balance when nothing is held', () => {
    expect(availableCredits(new D('3'), heldAt([], at)).toFixed()).toBe('3')
  })
})

describe('fitHold', () => {
  it.each([
    ['100', '99', '1', true, '0'],
    ['100', '99', '1.000001', false, '1'],
    ['100', '0', '100', true, '0'],
    ['5', '8', '1', false, '0'], // credits expired under holds: nothing is free, never negative
  ])('balance %s, held %s, hold %s → %s', (balance, held, amount, ok, available) => {
    const v = fitHold(new D(balance), new D(held), new D(amount))
    expect(v.ok).toBe(ok)
    if (!v.ok) expect(v.available.toFixed()).toBe(available)
  })
})

describe('planSettle', () => {
  it('settles part of a hold and frees the rest (the AI-token example: 20 held, 17.34 used)', () => {
    const p = planSettle(new D('20'), new D('17.34'), false, new D('100'))
    expect(p).toMatchObject({ ok: true })
    if (p.ok) expect([p.debit.toFixed(), p.freed.toFixed(), p.overage.toFixed()]).toEqual(['17.34', '2.66', '0'])
  })
  it('settles zero: all freed, nothing debited', () => {
    const p = planSettle(new D('20'), new D('0'), false, new D('20'))
    if (p.ok) expect([p.debit.toFixed(), p.freed.toFixed()]).toEqual(['0', '20'])
  })
  it('refuses more than the hold without allow_overage', () => {
    expect(planSettle(new D('20'), new D('20.01'), false, new D('100'))).toMatchObject({ ok: false, reason: 'exceeds_hold' })
  })
  it('takes an overage from what is free besides the hold', () => {
    // available besides the other holds = 30, of which this hold is 20: 10 free for the overage.
    const p = planSettle(new D('20'), new D('30'), true, new D('30'))
    if (p.ok) expect([p.debit.toFixed(), p.freed.toFixed(), p.overage.toFixed()]).toEqual(['30', '0', '10'])
    const q = planSettle(new D('20'), new D('30.5'), true, new D('30'))
    expect(q.ok).toBe(false)
    if (!q.ok) expect([q.reason, q.most.toFixed()]).toEqual(['exceeds_available', '30'])
  })
})

describe('creditsForCharge', () => {
  it.each([
    ['20', '1', '20'],
    ['20', '0.5', '40'],
    ['1', '3', '0.333333333334'], // rounded up at 12 places
  ])('%s of currency at %s a credit is %s credits', (charge, rate, credits) => {
    expect(creditsForCharge(new D(charge), new D(rate)).toFixed()).toBe(credits)
  })
})
