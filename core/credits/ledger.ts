// A wallet is an append-only ledger: every change is a transaction, no amount is edited in place. The one
// running figure is `credits_available` on each credit, lowered only by applying a consumption (a debit, an
// expiry). Pure: the evaluation instant `at` comes from the caller. Credits are Decimals, never numbers.
import { invalidOperation } from '../errors.ts'
import { D, roundMoney, sumMoney, type Decimal } from '../money.ts'

/** Credit reasons. Invoiced purchases enter the ledger only once their invoice is paid. */
export type CreditReason = 'FREE_CREDIT_GRANT' | 'PURCHASED_CREDIT_DIRECT' | 'PURCHASED_CREDIT_INVOICED' | 'CREDIT_NOTE'
export type DebitReason = 'INVOICE_PAYMENT' | 'MANUAL_DEBIT' | 'CREDIT_EXPIRED' | 'WALLET_TERMINATION'

interface TxBase {
  id: string
  /** Amount of the transaction in credits, > 0. */
  credits: Decimal
  created_at: Date
}
export interface CreditTx extends TxBase {
  type: 'credit'
  reason: CreditReason
  /** What is left of `credits` after the consumptions applied so far. */
  credits_available: Decimal
  /** Usable strictly before this instant; null = never expires. */
  expiry_date: Date | null
  /** Lower is consumed first; null after every number. */
  priority: number | null
}
interface DebitTx extends TxBase {
  type: 'debit'
  reason: DebitReason
}
export type WalletTransaction = CreditTx | DebitTx

/** Take `credits` from the credit transaction `credit_id`. */
export type Consumption = { credit_id: string; credits: Decimal }
export type DebitPlan = { consumed: Consumption[]; debited: Decimal; shortfall: Decimal }
export type WalletBalance = { credit_balance: Decimal; credits_available_breakdown: { free: Decimal; purchased: Decimal } }

const time = (d: Date | null): number | null => (d === null ? null : d.getTime())
const nullsLast = (a: number | null, b: number | null): number => (a === b ? 0 : a === null ? 1 : b === null ? -1 : a - b)

// Priority first, then what expires soonest (so less is lost to expiry), then oldest; the id only makes ties deterministic.
function consumptionOrder(a: CreditTx, b: CreditTx): number {
  return (
    nullsLast(a.priority, b.priority) ||
    nullsLast(time(a.expiry_date), time(b.expiry_date)) ||
    a.created_at.getTime() - b.created_at.getTime() ||
    (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  )
}

const isExpired = (c: CreditTx, at: Date): boolean => c.expiry_date !== null && c.expiry_date.getTime() <= at.getTime()

/** Credits with something left and not expired at `at`, in consumption order. */
export function openCredits(transactions: readonly WalletTransaction[], at: Date): CreditTx[] {
  return transactions
    .filter((t): t is CreditTx => t.type === 'credit' && t.credits_available.gt(0) && !isExpired(t, at))
    .sort(consumptionOrder)
}

/** credit_balance and its free/purchased split at `at`. Only FREE_CREDIT_GRANT is free: every other credit stands for money paid. */
export function balanceOf(transactions: readonly WalletTransaction[], at: Date): WalletBalance {
  const open = openCredits(transactions, at)
  const free = sumMoney(open.filter((c) => c.reason === 'FREE_CREDIT_GRANT').map((c) => c.credits_available))
  const purchased = sumMoney(open.filter((c) => c.reason !== 'FREE_CREDIT_GRANT').map((c) => c.credits_available))
  return { credit_balance: free.plus(purchased), credits_available_breakdown: { free, purchased } }
}

/**
 * Which credits a debit of `amount` consumes at `at`. By default a debit the open credits cannot cover is refused
 * (invalid_operation); with `partial` (paying an invoice) it takes what there is and reports the shortfall.
 */
export function planDebit(transactions: readonly WalletTransaction[], amount: Decimal, at: Date, opts: { partial?: boolean } = {}): DebitPlan {
  if (amount.lt(0)) throw new RangeError(`debit amount must not be negative, got ${amount.toFixed()}`)
  const consumed: Consumption[] = []
  let left = new D(amount)
  for (const c of openCredits(transactions, at)) {
    if (left.isZero()) break
    const take = D.min(left, c.credits_available)
    consumed.push({ credit_id: c.id, credits: take })
    left = left.minus(take)
  }
  const debited = new D(amount).minus(left)
  if (!left.isZero() && !opts.partial)
    throw invalidOperation('insufficient credits in wallet', { requested: amount.toFixed(), available: debited.toFixed() })
  return { consumed, debited, shortfall: left }
}

/** What the expiry job removes at `at`: everything left on credits whose expiry_date <= at (a credit is usable strictly before it). */
export function expiredAt(transactions: readonly WalletTransaction[], at: Date): Consumption[] {
  return transactions
    .filter((t): t is CreditTx => t.type === 'credit' && t.credits_available.gt(0) && isExpired(t, at))
    .sort(consumptionOrder)
    .map((c) => ({ credit_id: c.id, credits: c.credits_available }))
}

/**
 * The credits after a consumption, as the store's guarded UPDATE (credits_available >= taken) leaves them.
 * A plan made from a stale read fails here instead of driving a credit below zero.
 */
export function applyConsumption<T extends WalletTransaction>(transactions: readonly T[], consumed: readonly Consumption[]): T[] {
  const taken = new Map<string, Decimal>()
  for (const c of consumed) taken.set(c.credit_id, (taken.get(c.credit_id) ?? new D(0)).plus(c.credits))
  const out = transactions.map((t) => {
    const take = taken.get(t.id)
    if (take === undefined || t.type !== 'credit') return t
    taken.delete(t.id)
    if (take.gt(t.credits_available)) throw invalidOperation('insufficient credits in wallet', { credit_id: t.id, requested: take.toFixed(), available: t.credits_available.toFixed() })
    return { ...t, credits_available: t.credits_available.minus(take) }
  })
  if (taken.size > 0) throw new RangeError(`no credit transaction ${[...taken.keys()].join(', ')}`)
  return out
}

/** Currency value of credits, unrounded (for further arithmetic). */
export function creditsToCurrency(credits: Decimal, conversionRate: Decimal): Decimal {
  if (!conversionRate.gt(0)) throw new RangeError(`conversion_rate must be greater than 0, got ${conversionRate.toFixed()}`)
  return new D(credits).times(conversionRate)
}

/** The wallet's `balance` as presented: credits × conversion_rate, rounded once to the currency's minor unit. */
export function balanceInCurrency(credits: Decimal, conversionRate: Decimal, currency: string): Decimal {
  return roundMoney(creditsToCurrency(credits, conversionRate), currency)
}
