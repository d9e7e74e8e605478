// A one-off invoice line's commitment_info (POST /v1/invoices): how the caller billed the line under a commitment,
// kept with the line as given. Its computed parts are money of the invoice's currency and, as Flexprice defines
// them, make up the line: utilized + overage + true-up = the line's amount (a part not given counts 0).
import { validationError } from '../errors.ts'
import { formatMoney, sumMoney, type Decimal } from '../money.ts'
import { moneyAmount } from './amounts.ts'

export type CommitmentInfoInput = {
  type?: 'amount' | 'quantity'
  amount?: string
  quantity?: string
  duration?: string
  overage_factor?: string
  true_up_enabled?: boolean
  is_windowed?: boolean
  computed_commitment_utilized_amount?: string
  computed_overage_amount?: string
  computed_true_up_amount?: string
}

const PARTS = ['computed_commitment_utilized_amount', 'computed_overage_amount', 'computed_true_up_amount'] as const

/** The commitment_info to store with a line of `lineAmount`; validation errors name `field`'s members. */
export function checkCommitmentInfo(info: CommitmentInfoInput, lineAmount: Decimal, currency: string, field: string): CommitmentInfoInput {
  const type = info.type ?? 'amount'
  if (type === 'amount' && info.amount !== undefined) moneyAmount(info.amount, currency, `${field}.amount`)
  if (type === 'quantity' && info.quantity === undefined) throw validationError(`${field}.quantity`, 'is required for a quantity commitment')
  const given = PARTS.filter((p) => info[p] !== undefined)
  if (given.length > 0) {
    const sum = sumMoney(given.map((p) => moneyAmount(info[p]!, currency, `${field}.${p}`)))
    if (!sum.eq(lineAmount)) {
      throw validationError(field, `its computed amounts add up to ${formatMoney(sum, currency)} but the line's amount is ${formatMoney(lineAmount, currency)}`)
    }
  }
  return { ...info, type }
}
