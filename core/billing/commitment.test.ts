import { describe, expect, it } from 'vitest'
import { D } from '../money.ts'
import { applyCommitment, applySharedCommitment, periodCommitment, type Commitment } from './commitment.ts'

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

describe('applySharedCommitment: one commitment used up by several lines in order', () => {
  // Columns: charges, commitment -> per line [amount, utilized, overage], true-up.
  it.each([
    // 80.00 within; the second line takes the 20.00 left and bills (50 − 20) × 1.5 = 45.00 above: 65.00.
    [['80', '50'], { amount: '100.00', overage_factor: '1.5' }, [['80.00', '80.00', '0'], ['65.00', '20.00', '45.00']], '0'],
    // The commitment left is unrounded (39.995): 39.995 + 10.005 × 2 = 60.005 → 60.01, of which round(39.995) = 40.00 utilized.
    [['60.005', '50'], { amount: '100.00', overage_factor: '2' }, [['60.01', '60.01', '0'], ['60.01', '40.00', '20.01']], '0'],
    // 0.98 used: 0.51 + 0.48 = 0.99 billed, the true-up brings the lines to exactly 1.00.
    [['0.505', '0.475'], { amount: '1.00', true_up_enabled: true }, [['0.51', '0.51', '0'], ['0.48', '0.48', '0']], '0.01'],
    // 0.99 used but 1.00 billed after rounding each line: nothing is left to true up, never a negative true-up.
    [['0.505', '0.485'], { amount: '1.00', true_up_enabled: true }, [['0.51', '0.51', '0'], ['0.49', '0.49', '0']], '0'],
    // No usage line at all: the whole commitment is trued up.
    [[], { amount: '100.00', true_up_enabled: true }, [], '100.00'],
  ] as const)('%j %j', (charges, commitment, lines, trueUp) => {
    const r = applySharedCommitment(charges.map((c) => new D(c)), commitment, 'USD')
    expect(r.lines.map((l) => [l.amount, l.computed_commitment_utilized_amount, l.computed_overage_amount].map((d) => d.toFixed()))).toEqual(lines.map((l) => l.map((x) => new D(x).toFixed())))
    expect(r.true_up_amount.toFixed()).toBe(new D(trueUp).toFixed())
  })
})

describe('periodCommitment: a partial period commits to its share by day', () => {
  it.each([
    // 20 of April's 30 days: 90.00 × 20 / 30 = 60.00.
    ['90.00', '2024-04-01', '2024-05-01', '2024-04-11', '2024-05-01', 'USD', '60.00'],
    // 15 of January's 31 days: 100.00 × 15 / 31 = 48.387… → 48.39.
    ['100.00', '2025-01-01', '2025-02-01', '2025-01-17', '2025-02-01', 'USD', '48.39'],
    // JPY: 10000 × 15 / 31 = 4838.7… → 4839.
    ['10000', '2025-01-01', '2025-02-01', '2025-01-17', '2025-02-01', 'JPY', '4839'],
    // A whole period keeps the commitment.
    ['90.00', '2024-04-01', '2024-05-01', '2024-04-01', '2024-05-01', 'USD', '90.00'],
  ])('%s over %s–%s, billed %s–%s', (amount, start, end, from, to, currency, expected) => {
    const c = periodCommitment({ amount, overage_factor: '1.5', true_up_enabled: true }, { start: new Date(start), end: new Date(end) }, { start: new Date(from), end: new Date(to) }, currency)
    expect(c).toEqual({ amount: new D(expected).toFixed(), overage_factor: '1.5', true_up_enabled: true })
  })
})
