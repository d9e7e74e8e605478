// Coupons: fixed or percentage discounts, once, repeated for some periods, or forever (the amounts are
// core/billing/coupons.ts's). A coupon is redeemed by associating it with a subscription (the whole of
// it or one line item), or by a one-off invoice; max_redemptions and the redemption window are checked
// then, under the coupon's row lock.
import { assertRedeemable, type Coupon } from '../../../core/billing/coupons.ts'
import { checkCouponRules, type CouponRules } from '../../../core/billing/coupon-rules.ts'
import { moneyAmount, percentage } from '../../../core/billing/amounts.ts'
import { AppError, invalidOperation, validationError } from '../../../core/errors.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Db, Tx } from '../../../infra/postgres.ts'
import { filterConditions, findRecords, insertRecord, listRecords, publishedIn, requireRecord, updateRecord, type Audit } from '../../../infra/records.ts'
import { type ListRequest, type Page, page } from '../../../core/list.ts'
import { auditOf, referenced, transaction, uniquely } from '../../records/service.ts'
import { requireOffering } from '../../catalog/offerings/kinds.ts'
import { getPrice } from '../../catalog/prices/service.ts'
import { toWire } from '../../records/wire.ts'
import { requireLineItem, requireSubscription } from '../../subscriptions/read.ts'
import { subscriptionReferences } from '../../subscriptions/service.ts'
import { recordService } from '../../records/crud.ts'
import * as store from './store.ts'

export type { AssociationRow, CouponRow } from './store.ts'
export const FILTERS = store.FILTERS
export const ASSOCIATION_FILTERS = store.ASSOCIATION_FILTERS

export interface CreateCouponInput {
  name: string
  type: 'fixed' | 'percentage'
  cadence: 'once' | 'repeated' | 'forever'
  amount_off?: string
  percentage_off?: string
  currency?: string
  duration_in_periods?: number
  max_redemptions?: number
  redeem_after?: string
  redeem_before?: string
  rules?: CouponRules
  metadata?: Record<string, string>
}

export interface UpdateCouponInput {
  name?: string
  metadata?: Record<string, string>
  version?: number
}

/** The engine's view of a stored coupon (amounts as decimal strings). */
export const engineCoupon = (row: store.CouponRow): Coupon => toWire(row) as unknown as Coupon

/** A fixed coupon is money in one currency; a percentage is 0–100; repeated needs its number of periods. */
function checked(input: CreateCouponInput) {
  const fixed = input.type === 'fixed'
  if (fixed && (input.amount_off === undefined || input.currency === undefined)) throw validationError(input.amount_off === undefined ? 'amount_off' : 'currency', 'is required for a fixed coupon')
  if (fixed && input.percentage_off !== undefined) throw validationError('percentage_off', 'is only for percentage coupons')
  if (!fixed && input.percentage_off === undefined) throw validationError('percentage_off', 'is required for a percentage coupon')
  if (!fixed && (input.amount_off !== undefined || input.currency !== undefined)) throw validationError(input.amount_off !== undefined ? 'amount_off' : 'currency', 'is only for fixed coupons (a percentage has no currency)')
  if ((input.cadence === 'repeated') !== (input.duration_in_periods !== undefined)) throw validationError('duration_in_periods', input.cadence === 'repeated' ? 'is required for a repeated coupon' : 'is only for repeated coupons')
  if (input.redeem_after && input.redeem_before && input.redeem_before <= input.redeem_after) throw validationError('redeem_before', 'must be after redeem_after')
  return {
    ...input,
    currency: input.currency?.toUpperCase(),
    amount_off: fixed ? moneyAmount(input.amount_off!, input.currency!, 'amount_off') : undefined,
    percentage_off: fixed ? undefined : percentage(input.percentage_off, 'percentage_off'),
    rules: checkCouponRules(input.rules ?? {}, input),
    metadata: input.metadata ?? {},
  }
}

/** The plans and prices a coupon's rules name must be this environment's (plans published; prices in any status, as invoice lines may bill a retired one). */
async function checkRuleReferences(deps: Deps, actor: Actor, rules: CouponRules): Promise<void> {
  for (const [i, planId] of (rules.plan_ids ?? []).entries()) await referenced(`rules.plan_ids[${i}]`, requireOffering(deps.sql, actor, 'PLAN', planId))
  for (const [i, priceId] of (rules.price_ids ?? []).entries()) await referenced(`rules.price_ids[${i}]`, getPrice(deps, actor, priceId))
}

/**
 * Only the name and metadata change: invoices and associations were made under the coupon's terms.
 * Deleting stops new redemptions; existing associations keep their promised discounts.
 */
export const coupons = recordService<store.CouponRow, CreateCouponInput, UpdateCouponInput>({
  table: store.COUPONS,
  filters: store.FILTERS,
  async checkCreate(deps, actor, input) {
    const fields = checked(input)
    await checkRuleReferences(deps, actor, fields.rules)
    return fields
  },
})

// A subscription's coupons must be published coupons of its environment.
subscriptionReferences.register(async (db, scope, input) => {
  for (const [i, id] of (input.coupons ?? []).entries()) await referenced(`coupons[${i}]`, requireRecord<store.CouponRow>(db, store.COUPONS, scope, id, { published: true }))
})

/**
 * Counts one redemption of a coupon at `at` in the caller's transaction: under its row lock, the
 * redemption window and max_redemptions are checked, then total_redemptions grows by one.
 */
export async function redeem(tx: Tx, scope: Scope, couponId: string, at: Date, field: string): Promise<store.CouponRow> {
  const coupon = await store.lockCoupon(tx, scope, couponId)
  if (!coupon || coupon.status !== 'published') throw new AppError('not_found', `${field}: coupon ${couponId} not found`, { id: couponId, [field]: couponId })
  assertRedeemable(engineCoupon(coupon), at)
  await store.countRedemption(tx, scope, couponId)
  return { ...coupon, total_redemptions: coupon.total_redemptions + 1 }
}

export interface AssociateInput {
  subscription_id: string
  subscription_line_item_id?: string
  start_date?: string
  end_date?: string
  metadata?: Record<string, string>
}

/** Redeems a coupon for a subscription (the whole or one of its line items). */
export async function associateCoupon(deps: Deps, actor: Actor, couponId: string, input: AssociateInput): Promise<store.AssociationRow> {
  const sub = await referenced('subscription_id', requireSubscription(deps.sql, actor, input.subscription_id))
  if (input.subscription_line_item_id) await referenced('subscription_line_item_id', requireLineItem(deps.sql, actor, sub.id, input.subscription_line_item_id))
  const coupon = await coupons.get(deps, actor, couponId)
  if (coupon.currency && coupon.currency !== sub.currency) throw validationError('subscription_id', `coupon ${couponId} is in ${coupon.currency}, the subscription in ${sub.currency}`)
  const audit = auditOf(deps, actor)
  const start = input.start_date ? new Date(input.start_date) : audit.at
  if (input.end_date && new Date(input.end_date) <= start) throw validationError('end_date', 'must be after start_date')
  return uniquely('coupon association', [{ index: store.ONCE_INDEX, field: 'coupon_id', value: couponId }], () =>
    transaction(deps, (tx) => associateIn(tx, actor, audit, couponId, { ...input, start }, 'coupon_id')),
  )
}

/** One association, redeemed in the caller's transaction. */
async function associateIn(
  tx: Tx,
  scope: Scope,
  audit: Audit,
  couponId: string,
  input: Omit<AssociateInput, 'start_date'> & { start: Date },
  field: string,
): Promise<store.AssociationRow> {
  await redeem(tx, scope, couponId, input.start, field)
  return insertRecord<store.AssociationRow>(tx, store.ASSOCIATIONS, scope, audit, {
    coupon_id: couponId,
    subscription_id: input.subscription_id,
    subscription_line_item_id: input.subscription_line_item_id ?? null,
    start_date: input.start,
    end_date: input.end_date ? new Date(input.end_date) : null,
    metadata: input.metadata ?? {},
  })
}

export async function listAssociations(deps: Deps, actor: Actor, { params, filters }: ListRequest): Promise<Page<store.AssociationRow>> {
  const where = filterConditions(deps.sql, store.ASSOCIATION_FILTERS, filters)
  const { rows, total } = await listRecords<store.AssociationRow>(deps.sql, store.ASSOCIATIONS, actor, params, where)
  return page(rows, total, params)
}

export async function endAssociation(deps: Deps, actor: Actor, id: string): Promise<store.AssociationRow> {
  return transaction(deps, async (tx) => {
    const row = await requireRecord<store.AssociationRow>(tx, store.ASSOCIATIONS, actor, id, { published: true })
    if (row.end_date && row.end_date <= deps.clock.now()) throw invalidOperation(`coupon association ${id} has already ended`)
    return updateRecord<store.AssociationRow>(tx, store.ASSOCIATIONS, actor, id, { end_date: deps.clock.now() }, { audit: auditOf(deps, actor) })
  })
}

/** The published associations of some subscriptions with their coupons (any status: a deleted coupon keeps its promise). */
export async function associationsOf(db: Db, scope: Scope, subscriptionIds: string[]): Promise<{ association: store.AssociationRow; coupon: store.CouponRow }[]> {
  const associations = await publishedIn<store.AssociationRow>(db, store.ASSOCIATIONS, scope, 'subscription_id', subscriptionIds, ['start_date', 'created_at'])
  const coupons = new Map((await findRecords<store.CouponRow>(db, store.COUPONS, scope, associations.map((a) => a.coupon_id))).map((c) => [c.id, c]))
  return associations.map((association) => ({ association, coupon: coupons.get(association.coupon_id)! }))
}

/**
 * Subscriptions name coupons at creation (their `coupons`): each is redeemed here once, as an
 * association from the subscription's start, before the subscription is first billed. A coupon that
 * cannot be redeemed any more (window passed, redemptions used up) is left out and logged.
 */
export async function redeemSubscriptionCoupons(deps: Deps, scope: Scope, subs: { id: string; start_date: Date; coupons: string[] }[]): Promise<void> {
  const wanted = subs.filter((s) => s.coupons.length > 0)
  if (wanted.length === 0) return
  const existing = await associationsOf(deps.sql, scope, wanted.map((s) => s.id))
  const audit: Audit = { by: 'system', at: deps.clock.now() }
  for (const sub of wanted) {
    for (const couponId of sub.coupons.filter((c) => !existing.some((e) => e.association.subscription_id === sub.id && e.coupon.id === c))) {
      try {
        await uniquely('coupon association', [{ index: store.ONCE_INDEX, field: 'coupon_id', value: couponId }], () =>
          transaction(deps, (tx) => associateIn(tx, scope, audit, couponId, { subscription_id: sub.id, start: sub.start_date }, 'coupons')),
        )
      } catch (err) {
        deps.logger.warn({ err, subscription_id: sub.id, coupon_id: couponId }, 'subscription coupon not redeemed')
      }
    }
  }
}
