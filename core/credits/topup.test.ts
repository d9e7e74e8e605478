import { describe, expect, it } from 'vitest'
import { D } from '../money.ts'
import { autoTopup, type AutoTopup } from './topup.ts'

const settings = (invoicing: boolean, enabled = true): AutoTopup => ({ enabled, threshold: new D(20), amount: new D(100), invoicing })
const show = (a: { kind: string; amount: { toFixed(): string } }) => `${a.kind} ${a.amount.toFixed()}`

describe('autoTopup (threshold 20, amount 100)', () => {
  // [mode, balance after the change, unpaid auto top-up invoice exists, action]
  it.each([
    ['direct', '20.01', false, 'none 0'],
    ['direct', '20', false, 'direct 100'], // at the threshold: tops up
    ['direct', '5', false, 'direct 100'],
    ['direct', '-3', false, 'direct 100'],
    ['direct', '5', true, 'direct 100'], // rule 10 is about invoicing mode only
    ['invoice', '20.01', false, 'none 0'],
    ['invoice', '20', false, 'invoice 100'],
    ['invoice', '5', false, 'invoice 100'],
    ['invoice', '20', true, 'none 0'], // rule 10: an unpaid top-up invoice blocks a second one
    ['invoice', '5', true, 'none 0'],
  ] as const)('%s mode, balance %s, unpaid invoice %s: %s', (mode, balance, unpaid, expected) => {
    expect(show(autoTopup(settings(mode === 'invoice'), new D(balance), unpaid))).toBe(expected)
  })

  it('does nothing when disabled or not configured', () => {
    expect(show(autoTopup(settings(false, false), new D(0), false))).toBe('none 0')
    expect(show(autoTopup(null, new D(0), false))).toBe('none 0')
    expect(show(autoTopup(undefined, new D(0), false))).toBe('none 0')
  })

  it.each(['0', '-5'])('rejects amount %s when enabled', (amount) => {
    expect(() => autoTopup({ ...settings(false), amount: new D(amount) }, new D(50), false)).toThrow(/auto_topup.amount/)
  })

  it('rule 10 in sequence: debit, invoice, another debit waits, payment of a too-small top-up tops up again', () => {
    const s = settings(true)
    expect(show(autoTopup(s, new D(15), false))).toBe('invoice 100') // balance 25 → 15: invoice #1, finalized
    expect(show(autoTopup(s, new D(8), true))).toBe('none 0') // 15 → 8 while #1 is unpaid
    // #1 is paid (+100) after debits took the balance to −95: the payment is a change, and 5 is still low
    expect(show(autoTopup(s, new D(5), false))).toBe('invoice 100')
    expect(show(autoTopup(s, new D(105), false))).toBe('none 0') // had it landed at 105: nothing
  })
})
