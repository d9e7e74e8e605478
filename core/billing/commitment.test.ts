import { describe, expect, it } from 'vitest'
import { D } from '../money.ts'
import { applyCommitment, type Commitment } from './commitment.ts'

const USD: Commitment = { amount: '100.00', overage_factor: '1.5', true_up_enabled: true }

describe('applyCommitment: utilized, overage × factor, true-up', () => {
  // Columns: usage C, commitment, currency -> utilized, overage, true-up, usage line.
  it.each([
    // No usage: the whole commitment is trued up.
    ['0', USD, 'USD', '0', '0', '100.00', '0'],
    // 60.004 → 60.00 billed; true-up 100.00 − 60.00 = 40.00, so the two lines make exactly 100.00.
    ['60.004', USD, 'USD', '60.00', '0', '40.00', '60.00'],
    // Half away from zero: 60.005 → 60.01, true-up 39.99 (not 39.995 → 40.00, which would bill 100.01).
    ['60.005', USD, 'USD', '60.01', '0', '39.99', '60.01'],
    // Exactly the commitment: no overage, nothing to true up.
    ['100', USD, 'USD', '100.00', '0', '0', '100.00'],
    // (150.005 − 100) × 1.5 = 75.0075 → 75.01; line 100.00 + 75.01 = 175.01.
    ['150.005', USD, 'USD', '100.00', '75.01', '0', '175.01'],
    // (100.004 − 100) × 1.25 = 0.005 → 0.01 (half away from zero).
    ['100.004', { ...USD, overage_factor: '1.25' }, 'USD', '100.00', '0.01', '0', '100.01'],
    // Without true-up a shortfall is simply not billed.
    ['60.004', { ...USD, true_up_enabled: false }, 'USD', '60.00', '0', '0', '60.00'],
    // Factor defaults to 1: 150.005 − 100 = 50.005 → 50.01.
    ['150.005', { amount: '100.00' }, 'USD', '100.00', '50.01', '0', '150.01'],
    // JPY: (12345.5 − 10000) × 1.2 = 2814.6 → 2815 yen.
    ['12345.5', { amount: '10000', overage_factor: '1.2' }, 'JPY', '10000', '2815', '0', '12815'],
    // JPY: 9999.5 is below the commitment but rounds to 10000, so nothing is left to true up.
    ['9999.5', { amount: '10000', true_up_enabled: true }, 'JPY', '10000', '0', '0', '10000'],
    // KWD: (50.0005 − 50) × 2 = 0.001.
    ['50.0005', { amount: '50.000', overage_factor: '2' }, 'KWD', '50.000', '0.001', '0', '50.001'],
    // KWD: 12.3455 → 12.346; true-up 50.000 − 12.346 = 37.654.
    ['12.3455', { amount: '50.000', true_up_enabled: true }, 'KWD', '12.346', '0', '37.654', '12.346'],
  ] as const)('C=%s %j %s', (usage, commitment, currency, utilized, overage, trueUp, line) => {
    const r = applyCommitment(new D(usage), commitment, currency)
    expect(r.computed_commitment_utilized_amount.toFixed()).toBe(new D(utilized).toFixed())
    expect(r.computed_overage_amount.toFixed()).toBe(new D(overage).toFixed())
    expect(r.computed_true_up_amount.toFixed()).toBe(new D(trueUp).toFixed())
    expect(r.true_up_amount.toFixed()).toBe(new D(trueUp).toFixed())
    expect(r.usage_amount.toFixed()).toBe(new D(line).toFixed())
  })

  it.each([
    [{ amount: '100.00', overage_factor: '0.9' }, /overage_factor/],
    [{ amount: '100.00', overage_factor: 'x' }, /overage_factor/],
    [{ amount: '100.005' }, /commitment_amount/],
    [{ amount: '-1' }, /commitment_amount/],
  ])('rejects %j', (commitment, message) => expect(() => applyCommitment(new D(1), commitment, 'USD')).toThrow(message))

  it('rejects a negative usage charge', () => expect(() => applyCommitment(new D(-1), USD, 'USD')).toThrow(RangeError))
})
