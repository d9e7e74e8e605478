// Wallets: prepaid credits as an append-only ledger (ledger.ts), with balances derived from it at read
// time, top-ups, debits, termination, and the checks that follow every ledger change (watch.ts: alerts and
// auto top-up). Every change is one transaction under the wallet's row lock, with its outbox events.
import { invalidOperation, validationError } from '../../../core/errors.ts'
import { D, parseDecimal, type Decimal } from '../../../core/money.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Db, Tx } from '../../../infra/postgres.ts'
import { filterConditions, insertRecord, listRecords, requireRecord, updateRecord, type Audit } from '../../../infra/records.ts'
import { findCustomerByExternalId, requireCustomer } from '../../customers/service.ts'
import { inReach } from '../../customers/reach.ts'
import { checkAlerts } from '../../catalog/features/service.ts'
import { type ListRequest, type Page, page } from '../../../core/list.ts'
import { announce, auditOf, referenced, transaction, uniquely } from '../../records/service.ts'
import { appendCredit, appendDebit, balanceAt, expireCredits } from './ledger.ts'
import { refuseHeldCredits } from './holds.ts'
import { purchaseByInvoice } from './purchase.ts'
import * as store from './store.ts'
import { views, viewOf, type WalletView } from './view.ts'
import { usePrepaidWallet } from '../../invoicing/invoices/prepaid.ts'
import { applyWalletCredits, prepareWallets, returnWalletCredits, walletCreditsFor, walletPurchasePaid, type PreparedWallets } from './invoices.ts'
import { settle } from './watch.ts'


export const FILTERS = store.FILTERS
export const TRANSACTION_FILTERS = store.TRANSACTION_FILTERS
export type { WalletView } from './view.ts'
export { checkBalanceAlerts } from './sentinel.ts'

// ---- input ------------------------------------------------------------------------------------------------

/** A plain decimal string from the wire, greater than 0. */
function positive(value: string, field: string): Decimal {
  const d = decimal(value, field)
  if (!d.gt(0)) throw validationError(field, 'must be greater than 0')
  return d
}

function decimal(value: string, field: string): Decimal {
  try {
    return parseDecimal(value)
  } catch {
    throw validationError(field, 'must be a plain decimal number, e.g. "10.5"')
  }
}

function futureDate(value: string | null | undefined, field: string, now: Date): Date | null {
  if (value == null) return null
  const d = new Date(value)
  if (!(d > now)) throw validationError(field, 'must be in the future')
  return d
}

interface WalletFields {
  name?: string
  description?: string | null
  metadata?: Record<string, string>
  config?: { allowed_price_types: store.PriceTypeAllowed[] }
  auto_topup?: store.AutoTopupSettings | null
  alert_settings?: store.AlertSettingsRow | null
}

export interface CreateWalletInput extends WalletFields {
  customer_id?: string
  external_customer_id?: string
  currency: string
  wallet_type?: 'PRE_PAID' | 'POST_PAID'
  conversion_rate?: string
  topup_conversion_rate?: string
  initial_credits_to_load?: string
  initial_credits_expiry_date_utc?: string
}

export interface UpdateWalletInput extends WalletFields {
  version?: number
}

async function customerOf(deps: Deps, scope: Scope, input: CreateWalletInput) {
  if (input.customer_id) return referenced('customer_id', requireCustomer(deps, scope, input.customer_id))
  if (input.external_customer_id) return referenced('external_customer_id', findCustomerByExternalId(deps, scope, input.external_customer_id))
  throw validationError('customer_id', 'customer_id or external_customer_id is required')
}

const activeCurrencyKey = (currency: string) => [{ index: store.ACTIVE_CURRENCY_INDEX, field: 'currency', value: currency }]

// ---- wallets ----------------------------------------------------------------------------------------------

/** A new wallet, in one transaction with its initial credits (a free grant) and their transaction. */
export async function createWallet(deps: Deps, actor: Actor, input: CreateWalletInput): Promise<WalletView> {
  const customer = await customerOf(deps, actor, input)
  const currency = input.currency.toUpperCase()
  const audit = auditOf(deps, actor)
  const rate = input.conversion_rate === undefined ? new D(1) : positive(input.conversion_rate, 'conversion_rate')
  const topupRate = input.topup_conversion_rate === undefined ? rate : positive(input.topup_conversion_rate, 'topup_conversion_rate')
  const initial = input.initial_credits_to_load === undefined ? new D(0) : decimal(input.initial_credits_to_load, 'initial_credits_to_load')
  if (initial.lt(0)) throw validationError('initial_credits_to_load', 'must not be negative')
  const expiry = futureDate(input.initial_credits_expiry_date_utc, 'initial_credits_expiry_date_utc', audit.at)
  checkAlerts(input.alert_settings)
  return uniquely('active wallet for this customer', activeCurrencyKey(currency), () =>
    transaction(deps, async (tx) => {
      let wallet = await insertRecord<store.WalletRow>(tx, store.WALLETS, actor, audit, {
        customer_id: customer.id,
        name: input.name ?? `Prepaid Wallet - ${currency}`,
        description: input.description ?? null,
        currency,
        wallet_type: input.wallet_type ?? 'PRE_PAID',
        conversion_rate: rate,
        topup_conversion_rate: topupRate,
        config: input.config ?? { allowed_price_types: ['ALL'] },
        auto_topup: input.auto_topup ?? null,
        alert_settings: input.alert_settings ?? null,
        metadata: input.metadata ?? {},
      })
      await announce(tx, actor, 'wallet.created', store.WALLETS, await viewOf(tx, wallet, audit.at))
      if (initial.gt(0)) {
        await appendCredit(tx, actor, audit, wallet, { credits: initial, reason: 'FREE_CREDIT_GRANT', expiry_date: expiry, description: 'initial credits' })
      }
      wallet = await settle(deps, tx, actor, audit, wallet)
      return viewOf(tx, wallet, audit.at)
    }),
  )
}

const requireWallet = (db: Db, scope: Scope, id: string): Promise<store.WalletRow> => requireRecord<store.WalletRow>(db, store.WALLETS, scope, id)

export async function getWallet(deps: Deps, actor: Actor, id: string): Promise<WalletView> {
  return viewOf(deps.sql, await requireWallet(deps.sql, actor, id), deps.clock.now())
}

export async function listWallets(deps: Deps, actor: Actor, { params, filters }: ListRequest): Promise<Page<WalletView>> {
  const { rows, total } = await listRecords<store.WalletRow>(deps.sql, store.WALLETS, actor, params, filterConditions(deps.sql, store.FILTERS, filters))
  return page(await views(deps.sql, rows, deps.clock.now()), total, params)
}

/** Every wallet of one customer, named by id or external id, newest first (Flexprice's customer wallet reads answer a plain array). */
export async function customerWallets(deps: Deps, actor: Actor, customer: { id: string } | { external_id: string }): Promise<WalletView[]> {
  const row = 'id' in customer ? await requireCustomer(deps, actor, customer.id) : await findCustomerByExternalId(deps, actor, customer.external_id)
  const where = [deps.sql`customer_id = ${row.id}`]
  const { rows } = await listRecords<store.WalletRow>(deps.sql, store.WALLETS, actor, { limit: 1000, offset: 0, sort: 'created_at', order: 'desc', status: 'published', metadata: {} }, where)
  return views(deps.sql, rows, deps.clock.now())
}

/** Settings change here; a new alert or auto top-up setting is judged against the balance at once. */
export async function updateWallet(deps: Deps, actor: Actor, id: string, input: UpdateWalletInput): Promise<WalletView> {
  const { version, ...fields } = input
  checkAlerts(fields.alert_settings)
  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    await store.lockActive(tx, actor, id)
    let wallet = await updateRecord<store.WalletRow>(tx, store.WALLETS, actor, id, fields, { version, audit })
    await announce(tx, actor, 'wallet.updated', store.WALLETS, await viewOf(tx, wallet, audit.at))
    wallet = await settle(deps, tx, actor, audit, wallet)
    return viewOf(tx, wallet, audit.at)
  })
}

/**
 * Closes the wallet: expired credits leave as usual, what is left is debited (WALLET_TERMINATION). Refused
 * while credits bought by invoice are unpaid: their invoice is paid or voided first, so no payment is lost.
 */
export async function terminateWallet(deps: Deps, actor: Actor, id: string): Promise<WalletView> {
  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    const wallet = await store.lockActive(tx, actor, id)
    const unpaid = (await store.pendingPurchases(tx, wallet.id)).map((t) => t.reference_id)
    if (unpaid.length > 0) throw invalidOperation(`wallet ${id} has credits bought by unpaid invoices (${unpaid.join(', ')}): pay or void them first`, { invoice_ids: unpaid })
    await expireCredits(tx, actor, audit, wallet)
    const left = (await balanceAt(tx, wallet.id, audit.at)).credit_balance
    if (left.gt(0)) await appendDebit(tx, actor, audit, wallet, { credits: left, reason: 'WALLET_TERMINATION', description: 'wallet terminated' })
    const closed = await updateRecord<store.WalletRow>(tx, store.WALLETS, actor, id, { wallet_status: 'closed' }, { audit })
    const view = await viewOf(tx, closed, audit.at)
    await announce(tx, actor, 'wallet.terminated', store.WALLETS, view)
    return view
  })
}

// ---- the ledger -------------------------------------------------------------------------------------------

export async function listTransactions(deps: Deps, actor: Actor, walletId: string, { params, filters }: ListRequest): Promise<Page<store.TransactionRow>> {
  await requireWallet(deps.sql, actor, walletId)
  const where = [deps.sql`wallet_id = ${walletId}`, ...filterConditions(deps.sql, store.TRANSACTION_FILTERS, filters)]
  const { rows, total } = await listRecords<store.TransactionRow>(deps.sql, store.TRANSACTIONS, actor, params, where)
  return page(rows, total, params)
}

/** POST /v1/wallets/transactions/search: the ledger of every wallet of the environment, by the same filters. */
export async function searchTransactions(deps: Deps, actor: Actor, { params, filters }: ListRequest): Promise<Page<store.TransactionRow>> {
  const { rows, total } = await listRecords<store.TransactionRow>(deps.sql, store.TRANSACTIONS, actor, params, filterConditions(deps.sql, store.TRANSACTION_FILTERS, filters))
  return page(rows, total, params)
}

type TopupReason = 'FREE_CREDIT_GRANT' | 'PURCHASED_CREDIT_DIRECT' | 'PURCHASED_CREDIT_INVOICED'

export interface TopUpInput {
  credits_to_add?: string
  amount?: string
  transaction_reason: TopupReason
  expiry_date_utc?: string
  priority?: number
  idempotency_key?: string
  description?: string
  metadata?: Record<string, string>
}

export interface TopUpResult {
  wallet_transaction: store.TransactionRow
  invoice_id: string | null
  wallet: WalletView
}

/** Credits bought for `amount` of the wallet's currency at its topup_conversion_rate, to 12 places, never more than paid for. */
const creditsFor = (amount: Decimal, wallet: store.WalletRow): Decimal => amount.div(wallet.topup_conversion_rate).toDecimalPlaces(12, D.ROUND_DOWN)

/**
 * Adds credits: credits_to_add, or amount in the wallet's currency. A replay of an idempotency_key answers
 * the first top-up. An invoiced purchase is recorded pending; its credits count once the invoice is paid.
 */
export async function topUpWallet(deps: Deps, actor: Actor, id: string, input: TopUpInput): Promise<TopUpResult> {
  if ((input.credits_to_add === undefined) === (input.amount === undefined)) throw validationError('credits_to_add', 'give credits_to_add or amount, not both')
  const audit = auditOf(deps, actor)
  const expiry = futureDate(input.expiry_date_utc, 'expiry_date_utc', audit.at)
  const given = input.credits_to_add !== undefined ? positive(input.credits_to_add, 'credits_to_add') : positive(input.amount!, 'amount')
  return transaction(deps, async (tx) => {
    let wallet = await store.lockActive(tx, actor, id)
    const replay = input.idempotency_key ? await store.findByIdempotencyKey(tx, wallet.id, input.idempotency_key) : undefined
    if (replay) return { wallet_transaction: replay, invoice_id: replay.reference_type === 'INVOICE' ? replay.reference_id : null, wallet: await viewOf(tx, wallet, audit.at) }
    const credits = input.credits_to_add !== undefined ? given : creditsFor(given, wallet)
    if (!credits.gt(0)) throw validationError('amount', `buys no credits at topup_conversion_rate ${wallet.topup_conversion_rate.toFixed()}`)
    const fields = {
      credits,
      expiry_date: expiry,
      priority: input.priority ?? null,
      idempotency_key: input.idempotency_key ?? null,
      description: input.description ?? null,
      metadata: input.metadata ?? {},
    }
    const row =
      input.transaction_reason === 'PURCHASED_CREDIT_INVOICED'
        ? await purchaseByInvoice(deps, tx, actor, audit, wallet, fields)
        : await appendCredit(tx, actor, audit, wallet, { ...fields, reason: input.transaction_reason })
    wallet = await settle(deps, tx, actor, audit, wallet)
    return { wallet_transaction: row, invoice_id: row.reference_type === 'INVOICE' ? row.reference_id : null, wallet: await viewOf(tx, wallet, audit.at) }
  })
}

export interface DebitWalletInput {
  credits: string
  idempotency_key?: string
  description?: string
  metadata?: Record<string, string>
}

/** A manual debit, in consumption order; refused (400) when the open credits cannot cover it, or only with credits active holds keep. */
export async function debitWallet(deps: Deps, actor: Actor, id: string, input: DebitWalletInput): Promise<{ wallet_transaction: store.TransactionRow; wallet: WalletView }> {
  const credits = positive(input.credits, 'credits')
  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    let wallet = await store.lockActive(tx, actor, id)
    const replay = input.idempotency_key ? await store.findByIdempotencyKey(tx, wallet.id, input.idempotency_key) : undefined
    if (!replay) await refuseHeldCredits(tx, wallet, credits, audit.at)
    const row =
      replay ??
      (await appendDebit(tx, actor, audit, wallet, {
        credits,
        reason: 'MANUAL_DEBIT',
        idempotency_key: input.idempotency_key ?? null,
        description: input.description ?? null,
        metadata: input.metadata ?? {},
      }))!
    if (!replay) wallet = await settle(deps, tx, actor, audit, wallet)
    return { wallet_transaction: row, wallet: await viewOf(tx, wallet, audit.at) }
  })
}

// ---- for other domains and jobs ---------------------------------------------------------------------------

export interface GrantCreditsInput {
  customer_id: string
  currency: string
  /** The grant's conversion rate, for a wallet made for it; an existing wallet keeps its own. */
  conversion_rate: Decimal | null
  credits: Decimal
  expiry_date: Date | null
  priority: number | null
  reference_id: string
  idempotency_key: string
  description: string
}

/**
 * Wallets (locked) and idempotency keys read at once for a batch of grants in one transaction (prepareGrants). A
 * wallet serves the first grant into it only: that grant may change it (its alert state), so a later one locks and
 * reads it again, as without the batch.
 */
export interface GrantBatch {
  wallets: Map<string, store.WalletRow>
  replays: Map<string, store.TransactionRow>
}

export async function prepareGrants(tx: Tx, scope: Scope, grants: { customer_id: string; currency: string; idempotency_key: string }[]): Promise<GrantBatch> {
  const wallets = await store.lockActiveWallets(tx, scope, grants.map((g) => ({ customerId: g.customer_id, currency: g.currency })))
  const replays = await store.findByIdempotencyKeys(tx, [...wallets.values()].map((w) => w.id), grants.map((g) => g.idempotency_key))
  return { wallets, replays }
}

/** The wallet a grant goes into, locked; from the batch (`prepared`) if it has it, with the grant's replay if any. */
async function grantTarget(tx: Tx, scope: Scope, input: GrantCreditsInput, batch?: GrantBatch): Promise<{ wallet?: store.WalletRow; prepared?: { replay?: store.TransactionRow } }> {
  const key = `${input.customer_id}|${input.currency}`
  const wallet = batch?.wallets.get(key)
  if (!wallet) return { wallet: await store.lockActiveWallet(tx, scope, input.customer_id, input.currency) }
  batch!.wallets.delete(key)
  return { wallet, prepared: { replay: batch!.replays.get(`${wallet.id}|${input.idempotency_key}`) } }
}

/**
 * Free credits from a credit grant application, in the caller's transaction, into the customer's active
 * wallet in that currency (made when there is none). The idempotency key makes a repeat a no-op.
 */
export async function grantCredits(deps: Deps, tx: Tx, scope: Scope, audit: Audit, input: GrantCreditsInput, batch?: GrantBatch): Promise<store.TransactionRow> {
  const target = await grantTarget(tx, scope, input, batch)
  let wallet = target.wallet
  if (!wallet) {
    const rate = input.conversion_rate ?? new D(1)
    wallet = await insertRecord<store.WalletRow>(tx, store.WALLETS, scope, audit, {
      customer_id: input.customer_id,
      name: `Prepaid Wallet - ${input.currency}`,
      currency: input.currency,
      conversion_rate: rate,
      topup_conversion_rate: rate,
      config: { allowed_price_types: ['ALL'] },
    })
    await announce(tx, scope, 'wallet.created', store.WALLETS, await viewOf(tx, wallet, audit.at))
  }
  const replay = target.prepared ? target.prepared.replay : await store.findByIdempotencyKey(tx, wallet.id, input.idempotency_key)
  if (replay) return replay
  const row = await appendCredit(tx, scope, audit, wallet, {
    credits: input.credits,
    reason: 'FREE_CREDIT_GRANT',
    expiry_date: input.expiry_date,
    priority: input.priority,
    reference_type: 'CREDIT_GRANT_APPLICATION',
    reference_id: input.reference_id,
    idempotency_key: input.idempotency_key,
    description: input.description,
  })
  await settle(deps, tx, scope, audit, wallet)
  return row
}

const BATCH = 100

/** The expiry job: every credit expired by `now` leaves its wallet by a CREDIT_EXPIRED debit, one wallet per transaction. */
export async function expireWalletCredits(deps: Deps, now: Date = deps.clock.now()): Promise<{ wallets: number; expired: number }> {
  const summary = { wallets: 0, expired: 0 }
  const audit: Audit = { by: 'system', at: now }
  for (;;) {
    const due = await store.walletsWithExpiredCredits(deps.sql, now, BATCH, inReach(deps.sql, deps, 'wallet_transactions.customer_id'))
    for (const w of due) {
      const scope: Scope = { tenantId: w.tenant_id, environmentId: w.environment_id }
      await transaction(deps, async (tx) => {
        const wallet = await store.lockWallet(tx, scope, w.id)
        if (!wallet) return
        const expired = await expireCredits(tx, scope, audit, wallet)
        summary.expired += expired.length
        await settle(deps, tx, scope, audit, wallet)
      })
      summary.wallets++
    }
    if (due.length < BATCH) return summary
  }
}

// Invoices take prepaid credits from wallets through invoicing's port; the wallet's side is invoices.ts.
usePrepaidWallet({
  prepare: prepareWallets,
  creditsFor: (deps, tx, scope, invoice, prepared) => walletCreditsFor(deps, tx, scope, invoice, prepared as PreparedWallets | undefined),
  take: applyWalletCredits,
  giveBack: returnWalletCredits,
  purchasePaid: walletPurchasePaid,
})

/** Completed wallet transactions made in [start, end) (the accounting journal's credits and debits). */
export const journalTransactions = (db: Db, scope: Scope, start: Date, end: Date): Promise<store.TransactionRow[]> => store.completedBetween(db, scope, start, end)
