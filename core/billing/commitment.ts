// Commitment: the customer commits to spend `amount` M on usage per period. Usage up to M is billed as
// is; usage above it is billed at `overage_factor` f; with true-up, a shortfall below M is billed as a
// separate true-up line, so the period never costs less than M. A commitment covers one usage line
// (a line's commitment_info) or all usage lines of a subscription together (the subscription's
// commitment_amount): M is then used up by the lines in invoice order.
import { validationError } from '../errors.ts'
import { D, roundMoney, sumMoney, type Decimal } from '../money.ts'
import { prorate } from '../proration.ts'
import { decimalField, moneyAmount } from './amounts.ts'

/** The configuration half of the spec's commitment_info. */
export type Commitment = {
  amount: string
  /** ≥ 1; default 1. */
  overage_factor?: string | null
  true_up_enabled?: boolean
}

/** How one line's charge met the commitment. */
export type CommittedLine = {
  /** What the line bills, rounded once: its part within the commitment plus the overage. */
  amount: Decimal
  computed_commitment_utilized_amount: Decimal
  computed_overage_amount: Decimal
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
 * Applies a commitment to the unrounded usage charges C₁…Cₙ of the lines it covers, in order. Each
 * line takes what is left of M first (billed as is) and bills the rest of its charge × f, rounded once.
 * M is whole minor units, so for one line rounding M + (C − M) × f equals M + round((C − M) × f). The
 * true-up is M − Σ rounded lines (never below 0), so the lines and the true-up add up to exactly M.
 */
export function applySharedCommitment(charges: Decimal[], commitment: Commitment, currency: string): { lines: CommittedLine[]; true_up_amount: Decimal } {
  for (const c of charges) if (!c.isFinite() || c.isNeg()) throw new RangeError(`usage charge must be a non-negative amount, got ${c.toString()}`)
  const m = moneyAmount(commitment.amount, currency, 'commitment_amount')
  const f = overageFactor(commitment.overage_factor)
  let left = m
  const lines = charges.map((c) => {
    const within = D.min(c, left)
    left = left.minus(within)
    const amount = roundMoney(within.plus(c.minus(within).times(f)), currency)
    const utilized = roundMoney(within, currency)
    return { amount, computed_commitment_utilized_amount: utilized, computed_overage_amount: amount.minus(utilized) }
  })
  const short = commitment.true_up_enabled && sumMoney(charges).lt(m)
  return { lines, true_up_amount: short ? D.max(0, m.minus(sumMoney(lines.map((l) => l.amount)))) : new D(0) }
}

/** A commitment on one usage line with unrounded charge C. */
export function applyCommitment(usage: Decimal, commitment: Commitment, currency: string): CommitmentResult {
  const { lines: [line], true_up_amount } = applySharedCommitment([usage], commitment, currency)
  return {
    computed_commitment_utilized_amount: line.computed_commitment_utilized_amount,
    computed_overage_amount: line.computed_overage_amount,
    computed_true_up_amount: true_up_amount,
    usage_amount: line.amount,
    true_up_amount,
  }
}

/**
 * The commitment for a part [from, to) of the period [start, end): M × the used share, by day as fixed
 * charges are prorated, rounded to the minor unit (so a partial first or last period commits to its
 * share of M). A whole period keeps M.
 */
export function periodCommitment(c: Commitment, period: { start: Date; end: Date }, part: { start: Date; end: Date }, currency: string): Commitment {
  const m = moneyAmount(c.amount, currency, 'commitment_amount')
  const { amount } = prorate({ amount: m, periodStart: period.start, periodEnd: period.end, from: part.start, to: part.end })
  return { ...c, amount: roundMoney(amount, currency).toFixed() }
}
