import { describe, expect, it } from 'vitest'
import { AppError } from '../errors.ts'
import { D } from '../money.ts'
import { checkCommitmentInfo } from './commitment-info.ts'

const field = 'line_items[0].commitment_info'

/** The field a rejection names. */
function refused(run: () => unknown): string {
  try {
    run()
  } catch (err) {
    expect(err).toBeInstanceOf(AppError)
    return Object.keys((err as AppError).details)[0]
  }
  throw new Error('accepted')
}

describe('checkCommitmentInfo', () => {
  it('keeps a line billed under a commitment whose computed parts make up its amount', () => {
    // A 100.00 commitment, 70.00 used, and no overage: the true-up bills the 30.00 left, so the line is 100.00.
    const info = { amount: '100.00', computed_commitment_utilized_amount: '70.00', computed_overage_amount: '0', computed_true_up_amount: '30.00', true_up_enabled: true }
    expect(checkCommitmentInfo(info, new D('100'), 'USD', field)).toEqual({ ...info, type: 'amount' })
    // 120.00 used of 100.00 at overage factor 1.5: 100.00 + 20.00 × 1.5 = 130.00; a part not given counts 0.
    expect(checkCommitmentInfo({ amount: '100', overage_factor: '1.5', computed_commitment_utilized_amount: '100', computed_overage_amount: '30' }, new D('130'), 'USD', field).type).toBe('amount')
    // Without computed parts nothing is summed: the info describes the commitment only.
    expect(checkCommitmentInfo({ type: 'quantity', quantity: '1000' }, new D('5'), 'USD', field)).toEqual({ type: 'quantity', quantity: '1000' })
  })

  it('refuses parts that do not make up the line, amounts finer than the currency, and a quantity commitment without a quantity', () => {
    // 70.00 + 20.00 = 90.00, not the line's 100.00.
    expect(refused(() => checkCommitmentInfo({ computed_commitment_utilized_amount: '70', computed_true_up_amount: '20' }, new D('100'), 'USD', field))).toBe(field)
    expect(refused(() => checkCommitmentInfo({ computed_overage_amount: '0.005' }, new D('0.005'), 'USD', field))).toBe(`${field}.computed_overage_amount`)
    expect(refused(() => checkCommitmentInfo({ amount: '10.5' }, new D('1'), 'JPY', field))).toBe(`${field}.amount`)
    expect(refused(() => checkCommitmentInfo({ type: 'quantity' }, new D('1'), 'USD', field))).toBe(`${field}.quantity`)
  })
})
