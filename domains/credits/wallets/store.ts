// Wallets and their ledger (wallet_transactions). The one UPDATE the ledger allows is the guarded take
// below: credits_available only ever goes down, and never below zero.
import { invalidOperation, notFound } from '../../../core/errors.ts'
import type { Consumption, CreditReason, DebitReason } from '../../../core/credits/ledger.ts'
import type { Decimal } from '../../../core/money.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Db } from '../../../infra/postgres.ts'
import { decodeRow, type FilterSpec, type Fragment, type RecordRow, type RecordTable } from '../../../infra/records.ts'

export const WALLETS: RecordTable = { name: 'wallets', noun: 'wallet', prefix: 'wallet', decimals: ['conversion_rate', 'topup_conversion_rate'] }
export const TRANSACTIONS: RecordTable = {
  name: 'wallet_transactions',
  noun: 'wallet_transaction',
  prefix: 'wtx',
  decimals: ['credit_amount', 'amount', 'credits_available', 'conversion_rate', 'topup_conversion_rate'],
}

export const ACTIVE_CURRENCY_INDEX = 'wallets_active_currency'

export const FILTERS: FilterSpec = {
  wallet_ids: { column: 'id', op: 'in' },
  customer_id: { column: 'customer_id', op: 'eq' },
  currency: { column: 'currency', op: 'eq' },
  wallet_status: { column: 'wallet_status', op: 'eq' },
}

export const TRANSACTION_FILTERS: FilterSpec = {
  type: { column: 'type', op: 'eq' },
  transaction_reason: { column: 'transaction_reason', op: 'in' },
  transaction_status: { column: 'transaction_status', op: 'eq' },
  reference_type: { column: 'reference_type', op: 'eq' },
  reference_id: { column: 'reference_id', op: 'eq' },
  created_at_gte: { column: 'created_at', op: 'gte' },
  created_at_lt: { column: 'created_at', op: 'lt' },
  // Flexprice's names: one transaction, its wallet, and the creation range as start_time / end_time.
  id: { column: 'id', op: 'eq' },
  wallet_id: { column: 'wallet_id', op: 'eq' },
  start_time: { column: 'created_at', op: 'gte' },
  end_time: { column: 'created_at', op: 'lt' },
}

export type PriceTypeAllowed = 'ALL' | 'USAGE' | 'FIXED'
export type AlertState = 'ok' | 'info' | 'warning' | 'in_alarm'

/** As sent and shown: thresholds and amounts are JSON numbers (the spec's shape), made Decimal when used. */
export interface AutoTopupSettings {
  enabled: boolean
  threshold: number
  amount: number
  invoicing: boolean
}
export interface AlertLevelSettings {
  condition: 'above' | 'below'
  threshold: number
}
export interface AlertSettingsRow {
  alert_enabled: boolean
  info?: AlertLevelSettings
  warning?: AlertLevelSettings
  critical?: AlertLevelSettings
}

export interface WalletRow extends RecordRow {
  customer_id: string
  name: string
  description: string | null
  currency: string
  wallet_status: 'active' | 'closed'
  wallet_type: 'PRE_PAID' | 'POST_PAID'
  conversion_rate: Decimal
  topup_conversion_rate: Decimal
  config: { allowed_price_types: PriceTypeAllowed[] }
  auto_topup: AutoTopupSettings | null
  alert_settings: AlertSettingsRow | null
  alert_state: AlertState
  ongoing_alert_state: AlertState
}

export type { CreditReason, DebitReason }
export type ReferenceType = 'INVOICE' | 'CREDIT_GRANT_APPLICATION' | 'WALLET_TRANSACTION' | 'WALLET_HOLD'

export interface TransactionRow extends RecordRow {
  wallet_id: string
  customer_id: string
  type: 'credit' | 'debit'
  transaction_reason: CreditReason | DebitReason
  transaction_status: 'pending' | 'completed' | 'failed'
  credit_amount: Decimal
  amount: Decimal
  currency: string
  credits_available: Decimal
  expiry_date: Date | null
  priority: number | null
  conversion_rate: Decimal
  topup_conversion_rate: Decimal | null
  auto_topup: boolean
  reference_type: ReferenceType | null
  reference_id: string | null
  parent_transaction_id: string | null
  consumption_breakdown: { credit_id: string; credits: string }[] | null
  idempotency_key: string | null
  description: string | null
}

const decodeWallet = (row: Record<string, unknown>) => decodeRow<WalletRow>(WALLETS, row as never)
const decodeTransaction = (row: Record<string, unknown>) => decodeRow<TransactionRow>(TRANSACTIONS, row as never)

/** The wallet under a row lock: every ledger change of one wallet runs one after the other. */
export async function lockWallet(db: Db, scope: Scope, id: string): Promise<WalletRow | undefined> {
  const [row] = await db`SELECT * FROM wallets
    WHERE id = ${id} AND tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND status <> 'deleted'
    FOR UPDATE`
  return row ? decodeWallet(row) : undefined
}

/** Locks the wallet for a ledger change; closed wallets take none. */
export async function lockActive(tx: Db, scope: Scope, id: string): Promise<WalletRow> {
  const wallet = await lockWallet(tx, scope, id)
  if (!wallet) throw notFound('wallet', id)
  if (wallet.wallet_status !== 'active') throw invalidOperation(`wallet ${id} is ${wallet.wallet_status}`, { wallet_id: id, wallet_status: wallet.wallet_status })
  return wallet
}

/** The customer's active wallet in `currency`, if any, locked like lockWallet. */
export async function lockActiveWallet(db: Db, scope: Scope, customerId: string, currency: string): Promise<WalletRow | undefined> {
  const [row] = await db`SELECT * FROM wallets
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND customer_id = ${customerId}
      AND currency = ${currency} AND wallet_status = 'active' AND status <> 'deleted'
    FOR UPDATE`
  return row ? decodeWallet(row) : undefined
}

/** lockActiveWallet for many (customer, currency) pairs, locked in id order: by `customer|currency`, when exactly one is active. */
export async function lockActiveWallets(db: Db, scope: Scope, pairs: { customerId: string; currency: string }[]): Promise<Map<string, WalletRow>> {
  if (pairs.length === 0) return new Map()
  const rows = await db`SELECT * FROM wallets
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND wallet_status = 'active' AND status <> 'deleted'
      AND (customer_id, currency) IN (SELECT * FROM unnest(${pairs.map((p) => p.customerId)}::text[], ${pairs.map((p) => p.currency)}::text[]))
    ORDER BY id FOR UPDATE`
  const found = new Map<string, WalletRow[]>()
  for (const w of rows.map(decodeWallet)) found.set(`${w.customer_id}|${w.currency}`, [...(found.get(`${w.customer_id}|${w.currency}`) ?? []), w])
  return new Map([...found].flatMap(([key, ws]) => (ws.length === 1 ? [[key, ws[0]] as const] : [])))
}

/** findByIdempotencyKey for many keys of some wallets, by `wallet_id|key`. */
export async function findByIdempotencyKeys(db: Db, walletIds: string[], keys: string[]): Promise<Map<string, TransactionRow>> {
  if (walletIds.length === 0 || keys.length === 0) return new Map()
  const rows = await db`SELECT * FROM wallet_transactions WHERE wallet_id = ANY(${walletIds}::text[]) AND idempotency_key = ANY(${keys}::text[])`
  return new Map(rows.map(decodeTransaction).map((t) => [`${t.wallet_id}|${t.idempotency_key}`, t]))
}

/** What the consumption order reads of a credit. */
export type OpenCredit = Pick<TransactionRow, 'id' | 'wallet_id' | 'transaction_reason' | 'credit_amount' | 'credits_available' | 'expiry_date' | 'priority' | 'created_at'>

const OPEN = (db: Db, walletIds: string[]) =>
  db`wallet_id = ANY(${walletIds}::text[]) AND type = 'credit' AND credits_available > 0 AND transaction_status = 'completed'`

/** Completed credits of a wallet with something left (expired ones included: balances leave them out by date). */
export async function openCredits(db: Db, walletId: string): Promise<OpenCredit[]> {
  const rows = await db`SELECT id, wallet_id, transaction_reason, credit_amount, credits_available, expiry_date, priority, created_at
    FROM wallet_transactions WHERE ${OPEN(db, [walletId])}`
  return rows.map((row) => decodeRow<OpenCredit>(TRANSACTIONS, row))
}

/**
 * The same credits summed by wallet, reason and expiry: all a balance needs (what is free, what expires
 * when), in a few rows however many credits a wallet holds.
 */
export async function openCreditTotals(db: Db, walletIds: string[]): Promise<Pick<OpenCredit, 'wallet_id' | 'transaction_reason' | 'credits_available' | 'expiry_date'>[]> {
  if (walletIds.length === 0) return []
  const rows = await db`SELECT wallet_id, transaction_reason, expiry_date, sum(credits_available) AS credits_available
    FROM wallet_transactions WHERE ${OPEN(db, walletIds)}
    GROUP BY wallet_id, transaction_reason, expiry_date`
  return rows.map((row) => decodeRow<OpenCredit>(TRANSACTIONS, row))
}

/**
 * Lowers credits_available by what each consumption takes, only where that much is left. A credit that has
 * less (another debit took it since it was read) fails the whole change instead of going negative.
 */
export async function takeCredits(db: Db, consumed: readonly Consumption[], at: Date): Promise<void> {
  for (const c of consumed) {
    const taken = await db`UPDATE wallet_transactions
      SET credits_available = credits_available - ${c.credits.toFixed()}::numeric, updated_at = ${at}
      WHERE id = ${c.credit_id} AND credits_available >= ${c.credits.toFixed()}::numeric
      RETURNING id`
    if (taken.length !== 1) throw invalidOperation('the wallet changed while this debit was planned; retry', { credit_id: c.credit_id })
  }
}

export async function findByIdempotencyKey(db: Db, walletId: string, key: string): Promise<TransactionRow | undefined> {
  const [row] = await db`SELECT * FROM wallet_transactions WHERE wallet_id = ${walletId} AND idempotency_key = ${key}`
  return row ? decodeTransaction(row) : undefined
}

/** Transactions of the scope that refer to a record (an invoice), oldest first. */
export async function transactionsReferring(db: Db, scope: Scope, type: ReferenceType, id: string): Promise<TransactionRow[]> {
  const rows = await db`SELECT * FROM wallet_transactions
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND reference_type = ${type} AND reference_id = ${id}
    ORDER BY created_at, id`
  return rows.map(decodeTransaction)
}

/** Credits bought by invoices not paid yet. */
export async function pendingPurchases(db: Db, walletId: string): Promise<TransactionRow[]> {
  const rows = await db`SELECT * FROM wallet_transactions WHERE wallet_id = ${walletId} AND transaction_status = 'pending' ORDER BY created_at, id`
  return rows.map(decodeTransaction)
}

/** A pending purchase becomes completed (its invoice was paid) or failed (voided); once. */
export async function settlePending(db: Db, id: string, to: 'completed' | 'failed', at: Date): Promise<boolean> {
  const rows = await db`UPDATE wallet_transactions SET transaction_status = ${to}, version = version + 1, updated_at = ${at}
    WHERE id = ${id} AND transaction_status = 'pending' RETURNING id`
  return rows.length === 1
}

/** Wallets of every scope holding credits that expire by `now`. */
export async function walletsWithExpiredCredits(db: Db, now: Date, limit: number, reach: Fragment): Promise<{ id: string; tenant_id: string; environment_id: string }[]> {
  return db<{ id: string; tenant_id: string; environment_id: string }[]>`SELECT DISTINCT wallet_id AS id, tenant_id, environment_id
    FROM wallet_transactions
    WHERE type = 'credit' AND credits_available > 0 AND transaction_status = 'completed' AND expiry_date IS NOT NULL AND expiry_date <= ${now} AND ${reach}
    LIMIT ${limit}`
}

export async function transactionsById(db: Db, ids: string[]): Promise<TransactionRow[]> {
  if (ids.length === 0) return []
  const rows = await db`SELECT * FROM wallet_transactions WHERE id = ANY(${ids}::text[])`
  return rows.map(decodeTransaction)
}

/** Active wallets of every scope, a page at a time by id (the alerts job walks them all). */
export async function activeWalletsAfter(db: Db, afterId: string, limit: number, reach: Fragment): Promise<WalletRow[]> {
  const rows = await db`SELECT * FROM wallets WHERE wallet_status = 'active' AND status <> 'deleted' AND id > ${afterId} AND ${reach} ORDER BY id LIMIT ${limit}`
  return rows.map(decodeWallet)
}

export async function featureAlertState(db: Db, featureId: string, walletId: string): Promise<AlertState> {
  const [row] = await db<{ alert_state: AlertState }[]>`SELECT alert_state FROM feature_wallet_alerts WHERE feature_id = ${featureId} AND wallet_id = ${walletId}`
  return row?.alert_state ?? 'ok'
}

export async function setFeatureAlertState(db: Db, featureId: string, walletId: string, state: AlertState, at: Date): Promise<void> {
  await db`INSERT INTO feature_wallet_alerts (feature_id, wallet_id, alert_state, updated_at) VALUES (${featureId}, ${walletId}, ${state}, ${at})
    ON CONFLICT (feature_id, wallet_id) DO UPDATE SET alert_state = EXCLUDED.alert_state, updated_at = EXCLUDED.updated_at`
}

/** Completed transactions made in [start, end), oldest first. */
export async function completedBetween(db: Db, scope: Scope, start: Date, end: Date): Promise<TransactionRow[]> {
  const rows = await db`SELECT * FROM wallet_transactions
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND transaction_status = 'completed'
      AND created_at >= ${start} AND created_at < ${end}
    ORDER BY created_at, id`
  return rows.map(decodeTransaction)
}
