// Commitment: the customer commits to spend `amount` M on a usage line per period. Usage up to M is
// billed as is; usage above it is billed at `overage_factor` f; with true-up, a shortfall below M is
// billed as a separate true-up line, so the period never costs less than M.
import { validationError } from '../errors.ts'
import { D, roundMoney, type Decimal } from '../money.ts'
import { decimalField, moneyAmount } from './amounts.ts'

/** The configuration half of the spec's commitment_info. */
export type Commitment = {
  amount: string
  /** ≥ 1; default 1. */
  overage_factor?: string | null
  true_up_enabled?: boolean
}

export type CommitmentResult = {
  computed_commitment_utilized_amount: Decimal
  computed_overage_amount: Decimal
  computed_true_up_amount: Decimal
  /** What the usage line bills: utilized + overage. */
  usage_amount: Decimal
  /** What the separate true-up line bills; 0 without true-up. */
  true_up_amount: Decimal
}

function overageFactor(s: string | null | undefined): Decimal {
  if (s == null) return new D(1)
  const f = decimalField(s, 'overage_factor')
  if (f.lt(1)) throw validationError('overage_factor', 'must be at least 1')
  return f
}

/**
 * Applies a commitment to the unrounded usage charge C of a line. Every result is rounded to the minor
 * unit. M is whole minor units, so rounding only the overage equals rounding the line M + (C − M) × f
 * once; and the true-up is M − round(C), so the usage line and the true-up add up to exactly M.
 */
export function applyCommitment(usage: Decimal, commitment: Commitment, currency: string): CommitmentResult {
  if (!usage.isFinite() || usage.isNeg()) throw new RangeError(`usage charge must be a non-negative amount, got ${usage.toString()}`)
  const m = moneyAmount(commitment.amount, currency, 'commitment_amount')
  const f = overageFactor(commitment.overage_factor)
  const zero = new D(0)
  if (usage.lte(m)) {
    const utilized = roundMoney(usage, currency)
    const trueUp = commitment.true_up_enabled ? m.minus(utilized) : zero
    return {
      computed_commitment_utilized_amount: utilized,
      computed_overage_amount: zero,
      computed_true_up_amount: trueUp,
      usage_amount: utilized,
      true_up_amount: trueUp,
    }
  }
  const overage = roundMoney(usage.minus(m).times(f), currency)
  return {
    computed_commitment_utilized_amount: m,
    computed_overage_amount: overage,
    computed_true_up_amount: zero,
    usage_amount: m.plus(overage),
    true_up_amount: zero,
  }
}
