// A subscription's spending limit: a cap, in its currency, on what one billing period may cost in usage.
// What counts against it: the usage charges accrued in the current period (priced as the invoice will)
// plus the customer's active credit holds in that currency. The entitlement check refuses once they
// reach it, and subscription.spending_limit.reached fires once per period (markReached is conditional).
import { spendingReached } from '../../../core/credits/spend.ts'
import { validationError } from '../../../core/errors.ts'
import { D, parseDecimal, sumMoney, type Decimal } from '../../../core/money.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import { recordEvent } from '../../../infra/outbox.ts'
import { ReadCache } from '../../../infra/read-cache.ts'
import { transaction } from '../../records/service.ts'
import { requireSubscription, type SubscriptionRow } from '../../subscriptions/read.ts'
import { lineCharges, usageLinesOf } from '../../credits/wallets/realtime.ts'
import { customerWallets } from '../../credits/wallets/service.ts'
import * as store from './store.ts'

export interface Spending {
  limit: Decimal
  accrued: Decimal
  held: Decimal
}

/** Usage charges of the subscription's current period up to `at`, and the customer's credit holds in its currency, valued at each wallet's conversion_rate. */
async function readSpending(deps: Deps, actor: Actor, sub: SubscriptionRow, limit: Decimal, at: Date): Promise<Spending> {
  const { subs, lines } = await usageLinesOf(deps, actor, sub.customer_id, sub.currency, at)
  const mine = subs.filter((s) => s.id === sub.id)
  const accrued = sumMoney(await lineCharges(deps, actor, sub.customer_id, mine, lines.filter((l) => l.subscription_id === sub.id), at))
  const wallets = (await customerWallets(deps, actor, { id: sub.customer_id })).filter((w) => w.currency === sub.currency && w.wallet_status === 'active')
  const held = wallets.reduce<Decimal>((sum, w) => sum.plus(w.held_balance.times(w.conversion_rate)), new D(0))
  return { limit, accrued, held }
}

const limits = new WeakMap<Deps, ReadCache<store.SpendingLimitRow[]>>()
const spendings = new WeakMap<Deps, ReadCache<Spending>>()

const cacheOf = <V>(map: WeakMap<Deps, ReadCache<V>>, deps: Deps): ReadCache<V> => {
  let mine = map.get(deps)
  if (!mine) map.set(deps, (mine = new ReadCache()))
  return mine
}

/**
 * The spending of each subscription among `subs` that has a limit, read through the read cache (READ_CACHE_MS,
 * never across a write of this process: the scope's limits are read all at once); a limit found reached announces
 * itself once for its period.
 */
export async function limitedSpendings(deps: Deps, actor: Actor, subs: SubscriptionRow[]): Promise<Spending[]> {
  const at = deps.clock.now()
  const all = await cacheOf(limits, deps).read(JSON.stringify([actor.tenantId, actor.environmentId]), at, () => store.limitsOfScope(deps.sql, actor))
  const rows = all.filter((row) => subs.some((s) => s.id === row.subscription_id))
  const out: Spending[] = []
  for (const row of rows) {
    const sub = subs.find((s) => s.id === row.subscription_id)!
    const key = JSON.stringify([actor.tenantId, actor.environmentId, sub.id, row.spending_limit.toFixed()])
    const spending = await cacheOf(spendings, deps).read(key, at, () => readSpending(deps, actor, sub, row.spending_limit, at))
    if (spendingReached(spending) && row.reached_period_start?.getTime() !== sub.current_period_start.getTime()) await announceReached(deps, actor, sub, spending)
    out.push(spending)
  }
  return out
}

async function announceReached(deps: Deps, scope: Scope, sub: SubscriptionRow, s: Spending): Promise<void> {
  await transaction(deps, async (tx) => {
    if (!(await store.markReached(tx, sub.id, sub.current_period_start))) return
    await recordEvent(tx, scope, {
      eventType: 'subscription.spending_limit.reached',
      entityType: 'subscription',
      entityId: sub.id,
      payload: {
        subscription_id: sub.id,
        customer_id: sub.customer_id,
        currency: sub.currency,
        spending_limit: s.limit.toFixed(),
        accrued_charges: s.accrued.toFixed(),
        held: s.held.toFixed(),
        period_start: sub.current_period_start.toISOString(),
        period_end: sub.current_period_end.toISOString(),
      },
    })
  })
}

export interface SpendingLimitView {
  subscription_id: string
  currency: string
  spending_limit: string | null
  accrued_charges: string
  held: string
  reached: boolean
  current_period_start: Date
  current_period_end: Date
}

/** GET /v1/subscriptions/{id}/spending-limit: the limit and what counts against it now. */
export async function getSpendingLimit(deps: Deps, actor: Actor, subscriptionId: string): Promise<SpendingLimitView> {
  const sub = await requireSubscription(deps.sql, actor, subscriptionId)
  const [row] = await store.limitsOf(deps.sql, actor, [sub.id])
  const s = await readSpending(deps, actor, sub, row?.spending_limit ?? new D(0), deps.clock.now())
  return {
    subscription_id: sub.id,
    currency: sub.currency,
    spending_limit: row ? row.spending_limit.toFixed() : null,
    accrued_charges: s.accrued.toFixed(),
    held: s.held.toFixed(),
    reached: row ? spendingReached(s) : false,
    current_period_start: sub.current_period_start,
    current_period_end: sub.current_period_end,
  }
}

/** PUT /v1/subscriptions/{id}/spending-limit: sets (a decimal in the subscription's currency) or removes (null) the limit. */
export async function putSpendingLimit(deps: Deps, actor: Actor, subscriptionId: string, input: { spending_limit: string | null }): Promise<SpendingLimitView> {
  const sub = await requireSubscription(deps.sql, actor, subscriptionId)
  if (input.spending_limit === null) await transaction(deps, (tx) => store.deleteLimit(tx, actor, sub.id))
  else {
    let limit: Decimal
    try {
      limit = parseDecimal(input.spending_limit)
    } catch {
      throw validationError('spending_limit', 'must be a plain decimal number, e.g. "100.00"')
    }
    if (limit.lt(0)) throw validationError('spending_limit', 'must not be negative')
    await transaction(deps, (tx) => store.putLimit(tx, actor, sub.id, limit, sub.currency, deps.clock.now()))
  }
  return getSpendingLimit(deps, actor, sub.id)
}
