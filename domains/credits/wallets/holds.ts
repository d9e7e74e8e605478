// Credit holds: credits set aside for work in flight (an AI request), so that two requests cannot both
// spend the same balance. A hold is created only when the wallet's available balance (balance less the
// active holds, core/credits/holds.ts) covers it, under the wallet's row lock; settling posts one debit for
// what was used and frees the rest, releasing frees it all, and an expired hold stops counting at its
// expiry instant (the hold-expiry job then marks it and announces wallet.hold.expired). Creates, settles and
// releases of one wallet run in group-committed batches (holds-batch.ts); this prices and validates them.
import { creditsForCharge, fitHold } from '../../../core/credits/holds.ts'
import type { WalletBalance } from '../../../core/credits/ledger.ts'
import { notFound, validationError } from '../../../core/errors.ts'
import { parseDecimal, type Decimal } from '../../../core/money.ts'
import { priceAmount, type PriceInput } from '../../../core/pricing/index.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import { recordEvents } from '../../../infra/outbox.ts'
import type { Db, Tx } from '../../../infra/postgres.ts'
import { requireRecord, type Audit } from '../../../infra/records.ts'
import { requireFeature } from '../../catalog/features/service.ts'
import { transaction } from '../../records/service.ts'
import { inHoldBatch, insufficientAvailable } from './holds-batch.ts'
import { expireHoldsOf, findHold, heldOn, holdsOf, walletsWithExpiredHolds, type HoldStatus } from './holds-store.ts'
import { holdEvent, holdView, type HoldView } from './holds-view.ts'
import { balanceAt } from './ledger.ts'
import { usageLinesOf } from './realtime.ts'
import * as store from './store.ts'
import { settle } from './watch.ts'

const requireWallet = (db: Db, scope: Scope, id: string): Promise<store.WalletRow> => requireRecord<store.WalletRow>(db, store.WALLETS, scope, id)

export const MAX_HOLD_SECONDS = 86_400
const DEFAULT_HOLD_SECONDS = 600

export type { HoldView }

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
  if (!fit.ok) throw insufficientAvailable(fit.available, held, amount)
  return { balance, held }
}

/** Holds made by this process, and their wallets: a settle or release of one goes to its wallet's batch without a read first. */
const walletOfHold = new Map<string, string>()
const REMEMBERED_HOLDS = 100_000

function remember(hold: HoldView): HoldView {
  walletOfHold.set(hold.id, hold.wallet_id)
  if (walletOfHold.size > REMEMBERED_HOLDS) walletOfHold.delete(walletOfHold.keys().next().value!)
  return hold
}

/** POST /v1/wallets/{id}/holds. A replayed idempotency_key answers the hold it made. */
export async function createHold(deps: Deps, actor: Actor, walletId: string, input: CreateHoldInput): Promise<HoldView> {
  if ((input.amount === undefined) === (input.feature_id === undefined)) throw validationError('amount', 'give amount, or feature_id with quantity, not both')
  if (input.feature_id !== undefined && input.quantity === undefined) throw validationError('quantity', 'is required with feature_id')
  const seconds = input.expires_in_seconds ?? DEFAULT_HOLD_SECONDS
  const given = input.amount !== undefined ? amountOf(input.amount, 'amount', false) : undefined
  const quantity = input.quantity !== undefined ? amountOf(input.quantity, 'quantity', false) : null
  // Priced before the batch: on embedded Postgres the batch's transaction holds the one connection these reads need.
  const priced = given ?? (await creditsForQuantity(deps, actor, await requireWallet(deps.sql, actor, walletId), input.feature_id!, quantity!, deps.clock.now()))
  if (!priced.gt(0)) throw validationError('quantity', 'costs nothing: a hold must be for more than 0 credits')
  const job = { kind: 'create' as const, by: actor.keyId, amount: priced, feature_id: input.feature_id ?? null, quantity, seconds, idempotency_key: input.idempotency_key ?? null, metadata: input.metadata ?? {} }
  return remember(await inHoldBatch(deps, actor, walletId, job))
}

export interface SettleHoldInput {
  amount?: string
  quantity?: string
  allow_overage?: boolean
}

/** The wallet of a hold of the scope: remembered if this process made it, else read. */
async function walletOf(deps: Deps, actor: Actor, id: string): Promise<string> {
  const known = walletOfHold.get(id)
  if (known) return known
  const hold = await findHold(deps.sql, actor, id)
  if (!hold) throw notFound('wallet hold', id)
  return hold.wallet_id
}

/**
 * POST /v1/wallets/holds/{id}/settle: one debit for what was used (amount in credits, or quantity priced as the
 * hold was), the rest freed. Settling twice answers the first result; a released or expired hold is refused.
 */
export async function settleHold(deps: Deps, actor: Actor, id: string, input: SettleHoldInput): Promise<HoldView> {
  if ((input.amount === undefined) === (input.quantity === undefined)) throw validationError('amount', 'give amount or quantity, not both')
  let credits: Decimal
  let walletId: string
  if (input.amount !== undefined) {
    credits = amountOf(input.amount, 'amount', true)
    walletId = await walletOf(deps, actor, id)
  } else {
    const hold = await findHold(deps.sql, actor, id)
    if (!hold) throw notFound('wallet hold', id)
    if (!hold.feature_id) throw validationError('quantity', 'only a hold made for a feature settles by quantity; give amount')
    const quantity = amountOf(input.quantity!, 'quantity', true)
    const wallet = await requireWallet(deps.sql, actor, hold.wallet_id)
    credits = quantity.isZero() ? quantity : await creditsForQuantity(deps, actor, wallet, hold.feature_id, quantity, deps.clock.now())
    walletId = hold.wallet_id
  }
  return inHoldBatch(deps, actor, walletId, { kind: 'settle', by: actor.keyId, hold: id, credits, allow_overage: input.allow_overage === true })
}

/** POST /v1/wallets/holds/{id}/release: the whole hold is freed, nothing debited. Releasing twice answers the first result. */
export const releaseHold = async (deps: Deps, actor: Actor, id: string): Promise<HoldView> =>
  inHoldBatch(deps, actor, await walletOf(deps, actor, id), { kind: 'release', by: actor.keyId, hold: id })

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
        await recordEvents(tx, scope, expired.map((row) => holdEvent('expired', row, now)))
        summary.expired += expired.length
        await settle(deps, tx, scope, audit, wallet)
      })
      summary.wallets++
    }
    if (due.length < BATCH) return summary
  }
}
