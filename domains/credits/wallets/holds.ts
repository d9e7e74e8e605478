// Credit holds: credits set aside for work in flight (an AI request), so that two requests cannot both
// spend the same balance. A hold is created only when the wallet's available balance (balance less the
// active holds, core/credits/holds.ts) covers it, under the wallet's row lock; settling posts one debit for
// what was used and frees the rest, releasing frees it all, and an expired hold stops counting at its
// expiry instant (the hold-expiry job then marks it and announces wallet.hold.expired).
import { creditsForCharge, fitHold, planSettle } from '../../../core/credits/holds.ts'
import type { WalletBalance } from '../../../core/credits/ledger.ts'
import { invalidOperation, notFound, validationError } from '../../../core/errors.ts'
import { parseDecimal, type Decimal } from '../../../core/money.ts'
import { priceAmount, type PriceInput } from '../../../core/pricing/index.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import { recordEvent } from '../../../infra/outbox.ts'
import type { Db, Tx } from '../../../infra/postgres.ts'
import { insertRecord, requireRecord, type Audit } from '../../../infra/records.ts'
import { requireFeature } from '../../catalog/features/service.ts'
import { auditOf, transaction } from '../../records/service.ts'
import { toWire } from '../../records/wire.ts'
import { HOLDS, closeHold, expireHoldsOf, findHold, findHoldByKey, heldOn, holdsOf, walletsWithExpiredHolds, type HoldRow, type HoldStatus } from './holds-store.ts'
import { appendDebit, balanceAt } from './ledger.ts'
import { usageLinesOf } from './realtime.ts'
import * as store from './store.ts'
import { settle } from './watch.ts'

const requireWallet = (db: Db, scope: Scope, id: string): Promise<store.WalletRow> => requireRecord<store.WalletRow>(db, store.WALLETS, scope, id)

export const MAX_HOLD_SECONDS = 86_400
const DEFAULT_HOLD_SECONDS = 600

/** A hold as the API shows it: `status` is its state; an active hold past its expiry shows as expired. */
export interface HoldView extends Omit<HoldRow, 'status' | 'hold_status'> {
  status: HoldStatus
}

function holdView(row: HoldRow, at: Date): HoldView {
  const { status: _record, hold_status, ...rest } = row
  return { ...rest, status: hold_status === 'active' && row.expires_at <= at ? 'expired' : hold_status }
}

const announceHold = (db: Db, scope: Scope, event: 'created' | 'settled' | 'released' | 'expired', row: HoldRow, at: Date) =>
  recordEvent(db, scope, { eventType: `wallet.hold.${event}`, entityType: 'wallet_hold', entityId: row.id, payload: { wallet_hold: toWire(holdView(row, at)) } })

function amountOf(value: string, field: string, zeroAllowed: boolean): Decimal {
  let d: Decimal
  try {
    d = parseDecimal(value)
  } catch {
    throw validationError(field, 'must be a plain decimal number, e.g. "10.5"')
  }
  if (zeroAllowed ? d.lt(0) : !d.gt(0)) throw validationError(field, zeroAllowed ? 'must not be negative' : 'must be greater than 0')
  return d
}

/**
 * Credits `quantity` of a feature costs the customer: its active usage price for the feature's meter in the
 * wallet's currency, for that quantity alone, at the wallet's conversion_rate.
 */
async function creditsForQuantity(deps: Deps, scope: Scope, wallet: store.WalletRow, featureId: string, quantity: Decimal, at: Date): Promise<Decimal> {
  const feature = await requireFeature(deps.sql, scope, featureId)
  const { lines } = feature.meter_id ? await usageLinesOf(deps, scope, wallet.customer_id, wallet.currency, at) : { lines: [] }
  const line = lines.find((l) => l.meter_id === feature.meter_id)
  if (!line) throw validationError('feature_id', `the customer has no active usage price in ${wallet.currency} for feature ${featureId}`)
  return creditsForCharge(priceAmount(line.price as unknown as PriceInput, quantity).amount, wallet.conversion_rate)
}

export interface CreateHoldInput {
  amount?: string
  feature_id?: string
  quantity?: string
  expires_in_seconds?: number
  idempotency_key?: string
  metadata?: Record<string, string>
}

/** Refuses when the available balance cannot cover `amount` (400 naming what is available); call under the wallet lock. Returns what it read. */
export async function refuseHeldCredits(tx: Tx, wallet: store.WalletRow, amount: Decimal, at: Date): Promise<{ balance: WalletBalance; held: Decimal }> {
  const balance = await balanceAt(tx, wallet.id, at)
  const held = await heldOn(tx, wallet.id, at)
  const fit = fitHold(balance.credit_balance, held, amount)
  if (!fit.ok) {
    throw invalidOperation(`insufficient available balance: ${fit.available.toFixed()} credits available (${held.toFixed()} held), ${amount.toFixed()} requested`, {
      available: fit.available.toFixed(),
      available_balance: fit.available.toFixed(),
      held_balance: held.toFixed(),
      requested: amount.toFixed(),
    })
  }
  return { balance, held }
}

/** POST /v1/wallets/{id}/holds. A replayed idempotency_key answers the hold it made. */
export async function createHold(deps: Deps, actor: Actor, walletId: string, input: CreateHoldInput): Promise<HoldView> {
  if ((input.amount === undefined) === (input.feature_id === undefined)) throw validationError('amount', 'give amount, or feature_id with quantity, not both')
  if (input.feature_id !== undefined && input.quantity === undefined) throw validationError('quantity', 'is required with feature_id')
  const seconds = input.expires_in_seconds ?? DEFAULT_HOLD_SECONDS
  const audit = auditOf(deps, actor)
  const given = input.amount !== undefined ? amountOf(input.amount, 'amount', false) : undefined
  const quantity = input.quantity !== undefined ? amountOf(input.quantity, 'quantity', false) : null
  // Priced before the transaction: on embedded Postgres the transaction holds the one connection these reads need.
  const priced = given ?? (await creditsForQuantity(deps, actor, await requireWallet(deps.sql, actor, walletId), input.feature_id!, quantity!, audit.at))
  if (!priced.gt(0)) throw validationError('quantity', 'costs nothing: a hold must be for more than 0 credits')
  return transaction(deps, async (tx) => {
    const wallet = await store.lockActive(tx, actor, walletId)
    const replay = input.idempotency_key ? await findHoldByKey(tx, wallet.id, input.idempotency_key) : undefined
    if (replay) return holdView(replay, audit.at)
    const before = await refuseHeldCredits(tx, wallet, priced, audit.at)
    const row = await insertRecord<HoldRow>(tx, HOLDS, actor, audit, {
      wallet_id: wallet.id,
      customer_id: wallet.customer_id,
      amount: priced,
      feature_id: input.feature_id ?? null,
      quantity,
      expires_at: new Date(audit.at.getTime() + seconds * 1000),
      idempotency_key: input.idempotency_key ?? null,
      metadata: input.metadata ?? {},
    })
    await announceHold(tx, actor, 'created', row, audit.at)
    await settle(deps, tx, actor, audit, wallet, { balance: before.balance, held: before.held.plus(priced) })
    return holdView(row, audit.at)
  })
}

export interface SettleHoldInput {
  amount?: string
  quantity?: string
  allow_overage?: boolean
}

/**
 * Runs `work` on an active hold under its wallet's lock. A hold already closed the same way answers as it
 * was closed (settling or releasing twice is answered with the first result); otherwise a closed or
 * expired hold is refused.
 */
async function closing(deps: Deps, actor: Actor, id: string, as: 'settled' | 'released', work: (tx: Tx, wallet: store.WalletRow, hold: HoldRow, audit: Audit) => Promise<HoldRow>): Promise<HoldView> {
  const audit = auditOf(deps, actor)
  const found = await findHold(deps.sql, actor, id)
  if (!found) throw notFound('wallet hold', id)
  return transaction(deps, async (tx) => {
    const wallet = await store.lockWallet(tx, actor, found.wallet_id)
    const hold = (await findHold(tx, actor, id))!
    if (hold.hold_status === as) return holdView(hold, audit.at)
    const state = holdView(hold, audit.at).status
    if (state !== 'active') throw invalidOperation(`wallet hold ${id} is ${state}`, { hold_id: id, status: state })
    const closed = await work(tx, wallet!, hold, audit)
    await announceHold(tx, actor, as, closed, audit.at)
    await settle(deps, tx, actor, audit, wallet!)
    return holdView(closed, audit.at)
  })
}

/** POST /v1/wallets/holds/{id}/settle: one debit for what was used (amount in credits, or quantity priced as the hold was), the rest freed. */
export async function settleHold(deps: Deps, actor: Actor, id: string, input: SettleHoldInput): Promise<HoldView> {
  if ((input.amount === undefined) === (input.quantity === undefined)) throw validationError('amount', 'give amount or quantity, not both')
  let credits: Decimal
  if (input.amount !== undefined) credits = amountOf(input.amount, 'amount', true)
  else {
    const hold = await findHold(deps.sql, actor, id)
    if (!hold) throw notFound('wallet hold', id)
    if (!hold.feature_id) throw validationError('quantity', 'only a hold made for a feature settles by quantity; give amount')
    const quantity = amountOf(input.quantity!, 'quantity', true)
    const wallet = await requireWallet(deps.sql, actor, hold.wallet_id)
    credits = quantity.isZero() ? quantity : await creditsForQuantity(deps, actor, wallet, hold.feature_id, quantity, deps.clock.now())
  }
  return closing(deps, actor, id, 'settled', async (tx, wallet, hold, audit) => {
    const balance = (await balanceAt(tx, wallet.id, audit.at)).credit_balance
    const others = (await heldOn(tx, wallet.id, audit.at)).minus(hold.amount)
    const plan = planSettle(hold.amount, credits, input.allow_overage === true, balance.minus(others))
    if (!plan.ok) {
      const why = plan.reason === 'exceeds_hold' ? `is more than the ${hold.amount.toFixed()} credits held (allow_overage to take more)` : `is more than the wallet can cover`
      throw invalidOperation(`settling ${credits.toFixed()} credits ${why}: at most ${plan.most.toFixed()}`, { field: 'amount', requested: credits.toFixed(), most: plan.most.toFixed() })
    }
    const debit = plan.debit.isZero()
      ? undefined
      : await appendDebit(tx, actor, audit, wallet, { credits: plan.debit, reason: 'MANUAL_DEBIT', reference_type: 'WALLET_HOLD', reference_id: hold.id, description: `settles hold ${hold.id}` })
    return (await closeHold(tx, hold.id, 'settled', { settled_amount: plan.debit, transaction_id: debit?.id ?? null }, audit))!
  })
}

/** POST /v1/wallets/holds/{id}/release: the whole hold is freed, nothing debited. */
export const releaseHold = (deps: Deps, actor: Actor, id: string): Promise<HoldView> =>
  closing(deps, actor, id, 'released', async (tx, _wallet, hold, audit) => (await closeHold(tx, hold.id, 'released', {}, audit))!)

export async function getHold(deps: Deps, actor: Actor, id: string): Promise<HoldView> {
  const hold = await findHold(deps.sql, actor, id)
  if (!hold) throw notFound('wallet hold', id)
  return holdView(hold, deps.clock.now())
}

export async function listHolds(deps: Deps, actor: Actor, walletId: string, q: { status?: HoldStatus; limit: number; offset: number }) {
  await requireWallet(deps.sql, actor, walletId)
  const at = deps.clock.now()
  const { rows, total } = await holdsOf(deps.sql, actor, walletId, q.status, at, q.limit, q.offset)
  return { items: rows.map((r) => holdView(r, at)), pagination: { limit: q.limit, offset: q.offset, total } }
}

const BATCH = 100

/** The hold-expiry job: active holds past their expiry are marked expired and announced, one wallet per transaction. */
export async function expireHolds(deps: Deps, now: Date = deps.clock.now()): Promise<{ wallets: number; expired: number }> {
  const summary = { wallets: 0, expired: 0 }
  const audit: Audit = { by: 'system', at: now }
  for (;;) {
    const due = await walletsWithExpiredHolds(deps.sql, now, BATCH)
    for (const w of due) {
      const scope: Scope = { tenantId: w.tenant_id, environmentId: w.environment_id }
      await transaction(deps, async (tx) => {
        const wallet = await store.lockWallet(tx, scope, w.id)
        if (!wallet) return
        const expired = await expireHoldsOf(tx, wallet.id, now)
        for (const row of expired) await announceHold(tx, scope, 'expired', row, now)
        summary.expired += expired.length
        await settle(deps, tx, scope, audit, wallet)
      })
      summary.wallets++
    }
    if (due.length < BATCH) return summary
  }
}
