// A batch of hold changes on one wallet, decided in order against the balance and holds read once under the
// wallet's lock (domains/credits/wallets/holds-batch.ts): each request is judged as if it ran alone right
// after the ones before it, so a batch can never promise more than the wallet has, and each request gets its
// own verdict. Pure: the caller reads the state and writes what is decided.
import { D, type Decimal } from '../money.ts'
import { fitHold, planSettle } from './holds.ts'

type HoldState = 'active' | 'settled' | 'released' | 'expired'

export interface KnownHold {
  amount: Decimal
  status: HoldState
  expires_at: Date
}

export type HoldChange =
  | { kind: 'create'; amount: Decimal; key: string | null }
  | { kind: 'settle'; hold: string; credits: Decimal; allow_overage: boolean }
  | { kind: 'release'; hold: string }

export type HoldDecision =
  /** create: a new hold of the amount. */
  | { kind: 'make' }
  /** create with an idempotency key already used (stored, or earlier in the batch): answer that hold. */
  | { kind: 'replay'; key: string }
  | { kind: 'insufficient'; available: Decimal; held: Decimal }
  /** settle: debit `debit` (0: nothing posted) and close the hold; release: close it. */
  | { kind: 'close'; debit: Decimal }
  /** Closed the same way before (settle or release twice): answer it as it is. */
  | { kind: 'answer' }
  | { kind: 'not_found' }
  | { kind: 'not_active'; status: HoldState }
  | { kind: 'exceeds'; reason: 'exceeds_hold' | 'exceeds_available'; most: Decimal }
  /** Credits expired under the hold: the wallet cannot pay the debit. */
  | { kind: 'uncovered'; available: Decimal }

export interface BatchState {
  /** credit_balance at `at`. */
  balance: Decimal
  /** Active holds not past their expiry, summed. */
  held: Decimal
  /** The holds the batch's settles and releases name, as stored (absent: not found). */
  holds: ReadonlyMap<string, KnownHold>
  /** Idempotency keys of the wallet's stored holds that the batch's creates name. */
  keys: ReadonlySet<string>
  at: Date
}

/** Each change's decision, in order, and the balance and held credits once they are all applied. */
export function decideHoldBatch(state: BatchState, changes: readonly HoldChange[]): { decisions: HoldDecision[]; balance: Decimal; held: Decimal } {
  let { balance, held } = state
  const keys = new Set(state.keys)
  const closed = new Map<string, HoldState>()
  const decisions = changes.map((c): HoldDecision => {
    if (c.kind === 'create') {
      if (c.key !== null && keys.has(c.key)) return { kind: 'replay', key: c.key }
      const fit = fitHold(balance, held, c.amount)
      if (!fit.ok) return { kind: 'insufficient', available: fit.available, held }
      held = held.plus(c.amount)
      if (c.key !== null) keys.add(c.key)
      return { kind: 'make' }
    }
    const hold = state.holds.get(c.hold)
    if (!hold) return { kind: 'not_found' }
    const to: HoldState = c.kind === 'settle' ? 'settled' : 'released'
    const stored = closed.get(c.hold) ?? hold.status
    if (stored === to) return { kind: 'answer' }
    const status = stored === 'active' && hold.expires_at <= state.at ? 'expired' : stored
    if (status !== 'active') return { kind: 'not_active', status }
    let debit = new D(0)
    if (c.kind === 'settle') {
      const plan = planSettle(hold.amount, c.credits, c.allow_overage, balance.minus(held.minus(hold.amount)))
      if (!plan.ok) return { kind: 'exceeds', reason: plan.reason, most: plan.most }
      if (plan.debit.gt(balance)) return { kind: 'uncovered', available: balance }
      debit = plan.debit
    }
    balance = balance.minus(debit)
    held = held.minus(hold.amount)
    closed.set(c.hold, to)
    return { kind: 'close', debit }
  })
  return { decisions, balance, held }
}
