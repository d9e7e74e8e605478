// Subscriptions as the API shows them (with their customer, plan, line items, phases and addons), their
// locks, and the lists and searches over them and their line items.
import { notFound } from '../../core/errors.ts'
import type { Actor, Scope } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import type { Db, Tx } from '../../infra/postgres.ts'
import { checkVersion, filterConditions, findRecords, listRecords, requireRecord } from '../../infra/records.ts'
import { customerViews, getCustomer, type CustomerView } from '../customers/service.ts'
import { type ListRequest, type Page, page } from '../../core/list.ts'
import type { OfferingRow } from '../catalog/offerings/service.ts'
import { findOfferings } from '../catalog/offerings/kinds.ts'
import { pricesOf } from '../catalog/prices/service.ts'
import { matchPrices } from '../../core/subscriptions.ts'
import { inReach } from '../customers/reach.ts'
import * as store from './store.ts'

export type { SubscriptionRow, LineItemRow } from './store.ts'
export const FILTERS = store.FILTERS
export const LINE_ITEM_FILTERS = store.LINE_ITEM_FILTERS

export interface SubscriptionView extends store.SubscriptionRow {
  customer: CustomerView
  plan: OfferingRow
  line_items?: store.LineItemRow[]
  phases?: store.PhaseRow[]
  addons?: store.AddonAssociationRow[]
}

/**
 * A line item as answered: Flexprice's per-line commitment fields are empty, since a commitment here is the
 * subscription's (commitment_amount, overage_factor, enable_true_up) over its usage lines together; a price unit's
 * code and id are its price snapshot's (null for a fiat price).
 */
const lineItemView = (row: store.LineItemRow) => ({
  ...row,
  price_unit: (row.price.price_unit as string | undefined) ?? null,
  price_unit_id: (row.price.price_unit_id as string | undefined) ?? null,
  commitment_amount: null,
  commitment_quantity: null,
  commitment_type: null,
  commitment_duration: null,
  commitment_overage_factor: null,
  commitment_true_up_enabled: false,
  commitment_windowed: false,
})

async function views(db: Db, scope: Scope, rows: store.SubscriptionRow[], full: boolean): Promise<SubscriptionView[]> {
  const ids = rows.map((r) => r.id)
  const customers = new Map((await customerViews(db, scope, rows.map((r) => r.customer_id))).map((c) => [c.id, c]))
  const plans = new Map((await findOfferings(db, scope, 'PLAN', rows.map((r) => r.plan_id))).map((p) => [p.id, p]))
  const children = full
    ? {
        line_items: await store.childrenOf<store.LineItemRow>(db, store.LINE_ITEMS, scope, ids),
        phases: await store.childrenOf<store.PhaseRow>(db, store.PHASES, scope, ids),
        addons: await store.childrenOf<store.AddonAssociationRow>(db, store.ADDON_ASSOCIATIONS, scope, ids),
      }
    : undefined
  return rows.map((row) => ({
    ...row,
    customer: customers.get(row.customer_id)!,
    plan: plans.get(row.plan_id)!,
    ...(children && {
      line_items: children.line_items.filter((l) => l.subscription_id === row.id).map(lineItemView),
      phases: children.phases.filter((p) => p.subscription_id === row.id),
      addons: children.addons.filter((a) => a.subscription_id === row.id),
    }),
  }))
}

/** One subscription with its customer, plan, line items, phases and addons. */
export async function viewOf(db: Db, scope: Scope, row: store.SubscriptionRow): Promise<SubscriptionView> {
  return (await views(db, scope, [row], true))[0]
}

/** Every scope's published subscriptions but drafts, in id order after `afterId`, a page at a time (for the billing run). */
export const subscriptionsAfter = (deps: Deps, afterId: string, limit: number): Promise<store.SubscriptionRow[]> => store.pageAcrossScopes(deps.sql, afterId, limit, inReach(deps.sql, deps, 'subscriptions.customer_id'))

export const requireSubscription = (db: Db, scope: Scope, id: string): Promise<store.SubscriptionRow> =>
  requireRecord<store.SubscriptionRow>(db, store.SUBSCRIPTIONS, scope, id)

/** Subscriptions of the scope by id, whatever their status (requireSubscription for many); absent ids are left out. */
export const findSubscriptions = (db: Db, scope: Scope, ids: string[]): Promise<store.SubscriptionRow[]> => findRecords<store.SubscriptionRow>(db, store.SUBSCRIPTIONS, scope, ids)

/** A line item of this subscription; one of another subscription, environment or tenant is not found. */
export async function requireLineItem(db: Db, scope: Scope, subscriptionId: string, id: string): Promise<store.LineItemRow> {
  const row = await requireRecord<store.LineItemRow>(db, store.LINE_ITEMS, scope, id)
  if (row.subscription_id !== subscriptionId) throw notFound('line item of subscription', id)
  return row
}

/**
 * Takes the subscription's row lock for the rest of the transaction (a second change waits, then sees
 * this one's result) and refuses a stale `version`.
 */
export async function lockSubscription(tx: Tx, scope: Scope, id: string, version?: number): Promise<store.SubscriptionRow> {
  await checkVersion(tx, store.SUBSCRIPTIONS.name, scope, id, version)
  return requireSubscription(tx, scope, id)
}

export async function getSubscription(deps: Deps, actor: Actor, id: string): Promise<SubscriptionView> {
  return viewOf(deps.sql, actor, await requireSubscription(deps.sql, actor, id))
}

/**
 * The line items a subscription bills its plan's prices from last: its plan's own (not a phase's or an addon's;
 * a plan change ended the old plan's), those running to the latest end (a plan sync or quantity change ended
 * the ones they replaced).
 */
export function latestPlanLines(view: { plan_id: string; line_items?: store.LineItemRow[] }): store.LineItemRow[] {
  const own = (view.line_items ?? []).filter((l) => l.entity_type === 'plan' && l.entity_id === view.plan_id && !l.subscription_phase_id && !l.addon_association_id)
  const last = own.some((l) => l.end_date === null) ? null : Math.max(...own.map((l) => l.end_date!.getTime()))
  return own.filter((l) => (l.end_date === null ? last === null : l.end_date.getTime() === last))
}

/**
 * Full views (with their line items) with plan_prices_out_of_sync (Flexprice's v2 read; here on every full
 * view): true when the plan's prices for the subscription's currency and period are no longer the ones its
 * plan line items were made from. The plans' prices are read at once.
 */
export async function withPlanSync<V extends SubscriptionView>(db: Db, scope: Scope, views: V[]): Promise<(V & { plan_prices_out_of_sync: boolean })[]> {
  const prices = await pricesOf(db, scope, [...new Set(views.map((v) => v.plan_id))])
  return views.map((view) => {
    const current = matchPrices(prices.filter((p) => p.entity_id === view.plan_id), view.currency, view.billing_period, view.billing_period_count)
    const used = new Set(latestPlanLines(view).map((l) => l.price_id))
    return { ...view, plan_prices_out_of_sync: current.length !== used.size || current.some((p) => !used.has(p.id)) }
  })
}

/** A subscription's addon associations (live and ended), each with its addon. */
export async function addonAssociations(deps: Deps, actor: Actor, id: string): Promise<(store.AddonAssociationRow & { addon?: OfferingRow })[]> {
  const sub = await requireSubscription(deps.sql, actor, id)
  const rows = await store.childrenOf<store.AddonAssociationRow>(deps.sql, store.ADDON_ASSOCIATIONS, actor, [sub.id])
  const addons = new Map((await findOfferings(deps.sql, actor, 'ADDON', rows.map((r) => r.addon_id))).map((a) => [a.id, a]))
  return rows.map((r) => ({ ...r, addon: addons.get(r.addon_id) }))
}

/** Lists carry each subscription's customer and plan; GET by id adds line items, phases and addons. */
export async function listSubscriptions(deps: Deps, actor: Actor, { params, filters }: ListRequest): Promise<Page<SubscriptionView>> {
  const where = filterConditions(deps.sql, store.FILTERS, filters)
  const { rows, total } = await listRecords<store.SubscriptionRow>(deps.sql, store.SUBSCRIPTIONS, actor, params, where)
  return page(await views(deps.sql, actor, rows, false), total, params)
}

export async function listCustomerSubscriptions(deps: Deps, actor: Actor, customerId: string, request: ListRequest): Promise<Page<SubscriptionView>> {
  await getCustomer(deps, actor, customerId)
  return listSubscriptions(deps, actor, { ...request, filters: { ...request.filters, customer_id: customerId } })
}

/** POST /v1/subscriptions/lineitems/search: line items across subscriptions; `active_at` keeps those in force then. */
export async function searchLineItems(deps: Deps, actor: Actor, { params, filters }: ListRequest): Promise<Page<store.LineItemRow>> {
  const where = filterConditions(deps.sql, store.LINE_ITEM_FILTERS, filters)
  if (filters.active_at) where.push(store.activeAt(deps.sql, new Date(filters.active_at as string)))
  const { rows, total } = await listRecords<store.LineItemRow>(deps.sql, store.LINE_ITEMS, actor, params, where)
  return page(rows.map(lineItemView), total, params)
}
