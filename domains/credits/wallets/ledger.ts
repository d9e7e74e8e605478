// Writing the ledger inside the caller's transaction, which holds the wallet's row lock: every credit,
// debit and expiry is a new row, planned by core/credits/ledger.ts and announced in the same transaction.
import { applyConsumption, balanceOf, expiredAt, planDebit, type Consumption, type CreditTx, type WalletBalance } from '../../../core/credits/ledger.ts'
import { D, type Decimal } from '../../../core/money.ts'
import type { Scope } from '../../../core/scope.ts'
import { recordEvent, type OutboundEvent } from '../../../infra/outbox.ts'
import type { Db, Tx } from '../../../infra/postgres.ts'
import { insertRecord, insertRecords, type Audit } from '../../../infra/records.ts'
import { toWire } from '../../records/wire.ts'
import * as store from './store.ts'

/** A stored credit as the pure ledger reads it. */
const asCredit = (row: store.OpenCredit): CreditTx => ({
  id: row.id,
  type: 'credit',
  reason: row.transaction_reason as CreditTx['reason'],
  credits: row.credit_amount,
  credits_available: row.credits_available,
  expiry_date: row.expiry_date,
  priority: row.priority,
  created_at: row.created_at,
})

/** The wallet's open credits (expired ones included), as the consumption order reads them. */
export async function creditsOf(db: Db, walletId: string): Promise<CreditTx[]> {
  return (await store.openCredits(db, walletId)).map(asCredit)
}

const EPOCH = new Date(0)

/** Balances of several wallets at `at`, from their open credits summed by reason and expiry (which is all balanceOf reads). */
export async function balancesAt(db: Db, walletIds: string[], at: Date): Promise<Map<string, WalletBalance>> {
  const totals = await store.openCreditTotals(db, walletIds)
  const credits = (id: string): CreditTx[] =>
    totals
      .filter((t) => t.wallet_id === id)
      .map((t, i) => ({ id: String(i), type: 'credit', reason: t.transaction_reason as CreditTx['reason'], credits: t.credits_available, credits_available: t.credits_available, expiry_date: t.expiry_date, priority: null, created_at: EPOCH }))
  return new Map(walletIds.map((id) => [id, balanceOf(credits(id), at)]))
}

export async function balanceAt(db: Db, walletId: string, at: Date): Promise<WalletBalance> {
  return (await balancesAt(db, [walletId], at)).get(walletId)!
}

interface EntryFields {
  reference_type?: store.ReferenceType | null
  reference_id?: string | null
  idempotency_key?: string | null
  description?: string | null
  metadata?: Record<string, string>
}

export interface CreditInput extends EntryFields {
  credits: Decimal
  reason: store.CreditReason
  /** pending: bought by an invoice not paid yet; it counts once completed. */
  transaction_status?: 'pending' | 'completed'
  expiry_date?: Date | null
  priority?: number | null
  auto_topup?: boolean
  parent_transaction_id?: string | null
}

export interface DebitInput extends EntryFields {
  credits: Decimal
  reason: store.DebitReason
  /** Take what there is instead of refusing a debit the credits cannot cover (paying an invoice). */
  partial?: boolean
}

const PURCHASES: readonly store.CreditReason[] = ['PURCHASED_CREDIT_DIRECT', 'PURCHASED_CREDIT_INVOICED']

const transactionCreated = (row: store.TransactionRow): OutboundEvent => ({
  eventType: 'wallet.transaction.created',
  entityType: 'wallet_transaction',
  entityId: row.id,
  payload: { transaction: toWire(row) },
})

async function append(tx: Tx, scope: Scope, audit: Audit, fields: object): Promise<store.TransactionRow> {
  const row = await insertRecord<store.TransactionRow>(tx, store.TRANSACTIONS, scope, audit, fields)
  await recordEvent(tx, scope, transactionCreated(row))
  return row
}

/** Adds credits. A purchase is worth credits × topup_conversion_rate (what was paid), anything else × conversion_rate. */
export function appendCredit(tx: Tx, scope: Scope, audit: Audit, wallet: store.WalletRow, input: CreditInput): Promise<store.TransactionRow> {
  const { credits, reason, transaction_status = 'completed', ...rest } = input
  const purchase = PURCHASES.includes(reason)
  return append(tx, scope, audit, {
    ...rest,
    wallet_id: wallet.id,
    customer_id: wallet.customer_id,
    type: 'credit',
    transaction_reason: reason,
    transaction_status,
    credit_amount: credits,
    credits_available: credits,
    amount: credits.times(purchase ? wallet.topup_conversion_rate : wallet.conversion_rate),
    currency: wallet.currency,
    conversion_rate: wallet.conversion_rate,
    topup_conversion_rate: purchase ? wallet.topup_conversion_rate : null,
  })
}

/** A debit's row: what `consumed` took, in credits and in the wallet's currency. */
function debitRow(wallet: store.WalletRow, consumed: Consumption[], fields: EntryFields & { reason: store.DebitReason }): object {
  const { reason, ...rest } = fields
  const credits = consumed.reduce<Decimal>((acc, c) => acc.plus(c.credits), new D(0))
  return {
    ...rest,
    wallet_id: wallet.id,
    customer_id: wallet.customer_id,
    type: 'debit',
    transaction_reason: reason,
    credit_amount: credits,
    amount: credits.times(wallet.conversion_rate),
    currency: wallet.currency,
    conversion_rate: wallet.conversion_rate,
    consumption_breakdown: consumed.map((c) => ({ credit_id: c.credit_id, credits: c.credits.toFixed() })),
  }
}

async function appendConsumption(tx: Tx, scope: Scope, audit: Audit, wallet: store.WalletRow, consumed: Consumption[], fields: EntryFields & { reason: store.DebitReason }): Promise<store.TransactionRow> {
  await store.takeCredits(tx, consumed, audit.at)
  return append(tx, scope, audit, debitRow(wallet, consumed, fields))
}

/**
 * Takes credits in consumption order (priority, then earliest expiry, then oldest). Refused when the open
 * credits cannot cover it, unless `partial`; undefined when there was nothing to take.
 */
export async function appendDebit(tx: Tx, scope: Scope, audit: Audit, wallet: store.WalletRow, input: DebitInput): Promise<store.TransactionRow | undefined> {
  const { credits, partial, ...fields } = input
  const plan = planDebit(await creditsOf(tx, wallet.id), credits, audit.at, { partial })
  if (plan.debited.isZero()) return undefined
  return appendConsumption(tx, scope, audit, wallet, plan.consumed, fields)
}

/**
 * Several debits of `credits` (the wallet's open credits, read under its lock), each taken in consumption order
 * after the ones before it. Each must be covered (the caller decided so). Planned at once: `credits` is what they
 * leave; `written` resolves once the takes (one per credit) and the one insert, sent together, are done, with the
 * rows in order and their wallet.transaction.created events, which the caller records with its own. An input may
 * bring its row's id.
 */
export function appendDebits(
  tx: Tx,
  scope: Scope,
  audit: Audit,
  wallet: store.WalletRow,
  credits: CreditTx[],
  inputs: (EntryFields & { id?: string; credits: Decimal; reason: store.DebitReason })[],
): { credits: CreditTx[]; written: Promise<{ rows: store.TransactionRow[]; events: OutboundEvent[] }> } {
  if (inputs.length === 0) return { credits, written: Promise.resolve({ rows: [], events: [] }) }
  const taken = new Map<string, Decimal>()
  const fields = inputs.map(({ credits: amount, ...entry }) => {
    const { consumed } = planDebit(credits, amount, audit.at)
    credits = applyConsumption(credits, consumed)
    for (const c of consumed) taken.set(c.credit_id, (taken.get(c.credit_id) ?? new D(0)).plus(c.credits))
    return debitRow(wallet, consumed, entry)
  })
  const written = Promise.all([
    store.takeCredits(tx, [...taken].map(([credit_id, amount]) => ({ credit_id, credits: amount })), audit.at),
    insertRecords<store.TransactionRow>(tx, store.TRANSACTIONS, scope, audit, fields),
  ]).then(([, rows]) => ({ rows, events: rows.map(transactionCreated) }))
  return { credits, written }
}

/** What is left on credits expired at `audit.at` leaves the wallet: one CREDIT_EXPIRED debit per credit, naming it. */
export async function expireCredits(tx: Tx, scope: Scope, audit: Audit, wallet: store.WalletRow): Promise<store.TransactionRow[]> {
  const out: store.TransactionRow[] = []
  for (const c of expiredAt(await creditsOf(tx, wallet.id), audit.at)) {
    const description = `credits of ${c.credit_id} expired`
    out.push(await appendConsumption(tx, scope, audit, wallet, [c], { reason: 'CREDIT_EXPIRED', reference_type: 'WALLET_TRANSACTION', reference_id: c.credit_id, description }))
  }
  return out
}
