// Credit holds, the pure part: what a wallet can still promise (its balance less the holds not yet
// settled, released or expired), whether a new hold fits, and how a settlement splits a hold into the
// debit it posts and the credits it frees.
import { D, type Decimal } from '../money.ts'

export interface HoldAmount {
  amount: Decimal
  expires_at: Date
}

/** Credits held at `at`: the holds still active and not past their expiry (an expired hold frees itself, job or not). */
export function heldAt(holds: readonly HoldAmount[], at: Date): Decimal {
  return holds.reduce<Decimal>((sum, h) => (h.expires_at > at ? sum.plus(h.amount) : sum), new D(0))
}

/** What a new hold or debit may take: the balance less what is held (may be negative if credits expired under a hold). */
export const availableCredits = (balance: Decimal, held: Decimal): Decimal => balance.minus(held)

export type HoldVerdict = { ok: true } | { ok: false; available: Decimal }

/** A hold of `amount` fits when the available credits cover it whole. */
export function fitHold(balance: Decimal, held: Decimal, amount: Decimal): HoldVerdict {
  const available = availableCredits(balance, held)
  return available.gte(amount) ? { ok: true } : { ok: false, available: D.max(available, 0) }
}

export type SettlePlan =
  | { ok: true; debit: Decimal; freed: Decimal; overage: Decimal }
  | { ok: false; reason: 'exceeds_hold' | 'exceeds_available'; most: Decimal }

/**
 * Settling `amount` of a hold of `held`: the debit is `amount`, the rest of the hold is freed. More than the
 * hold only with `allowOverage`, and then the overage must fit in what the wallet has free besides this hold
 * (`availableBesides`: balance less the other holds), so a settlement never overdraws either.
 */
export function planSettle(held: Decimal, amount: Decimal, allowOverage: boolean, availableBesides: Decimal): SettlePlan {
  if (amount.lte(held)) return { ok: true, debit: amount, freed: held.minus(amount), overage: new D(0) }
  if (!allowOverage) return { ok: false, reason: 'exceeds_hold', most: held }
  const overage = amount.minus(held)
  const free = availableBesides.minus(held)
  if (overage.gt(free)) return { ok: false, reason: 'exceeds_available', most: held.plus(D.max(free, 0)) }
  return { ok: true, debit: amount, freed: new D(0), overage }
}

/** Credits that pay for `charge` of the wallet's currency at `conversionRate`, rounded up at 12 places: a hold never covers less than the charge. */
export const creditsForCharge = (charge: Decimal, conversionRate: Decimal): Decimal => charge.div(conversionRate).toDecimalPlaces(12, D.ROUND_UP)
