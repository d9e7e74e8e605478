// Line items and addons added to or taken from a live subscription (Flexprice's addSubscriptionAddon,
// removeSubscriptionAddon, createSubscriptionLineItem, deleteSubscriptionLineItem). A line that starts or
// ends inside the current period is settled as the subscription prorates (its proration_behavior:
// create_prorations bills or credits the part of the period on the next invoice, none does not), the same
// way quantity changes are (modify.ts), so the billing run needs nothing new.
// It stands with invoicing, above subscriptions, because a change is settled by invoices.
import type { ProrationBehavior } from '../../../core/billing/cycle.ts'
import { invalidOperation, validationError } from '../../../core/errors.ts'
import type { Actor } from '../../../core/scope.ts'
import { effectiveAt, matchPrices, parseQuantity } from '../../../core/subscriptions.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Tx } from '../../../infra/postgres.ts'
import { deleteRecord, insertRecord, insertRecords, requireRecord, updateRecord, type Audit } from '../../../infra/records.ts'
import { findOfferings, requireOffering } from '../../catalog/offerings/kinds.ts'
import { pricesOf, requirePrice, type PriceRow } from '../../catalog/prices/service.ts'
import { announce, auditOf, referenced, transaction } from '../../records/service.ts'
import { lineItemFields, type LineOwner } from '../../subscriptions/line-items.ts'
import { lockSubscription, viewOf } from '../../subscriptions/read.ts'
import { assertEndOpen, assertLive } from '../../subscriptions/service.ts'
import * as store from '../../subscriptions/store.ts'
import { settlementOf } from '../invoices/billing.ts'

type Sub = store.SubscriptionRow

const date = (value: string | undefined): Date | undefined => (value ? new Date(value) : undefined)

/** When a change made now (or at `given`, later in the current period) takes effect, and how it is settled. */
function timing(sub: Sub, given: string | undefined, now: Date, field: string): { at: Date; behavior: ProrationBehavior } {
  const at = effectiveAt(date(given), now, { start: sub.current_period_start, end: sub.current_period_end }, field)
  return { at, behavior: settlementOf(sub, sub.proration_behavior as ProrationBehavior, at, now) }
}

/** A price a subscription can bill: its currency, and its billing period unless it is a one-time charge. */
function checkFits(sub: Sub, price: PriceRow, field: string): void {
  if (matchPrices([price], sub.currency, sub.billing_period, sub.billing_period_count).length === 0) {
    throw validationError(field, `price ${price.id} is not billed in ${sub.currency} every ${sub.billing_period_count} ${sub.billing_period} like subscription ${sub.id}`)
  }
}

async function announced(tx: Tx, actor: Actor, sub: Sub, change: Record<string, unknown>): Promise<void> {
  const view = { ...(await viewOf(tx, actor, sub)), change }
  await announce(tx, actor, 'subscription.updated', store.SUBSCRIPTIONS, view)
}

/** Ends a line at `at` (one that starts later ends as it starts), settled as `behavior`. */
async function endLine(tx: Tx, actor: Actor, audit: Audit, line: store.LineItemRow, at: Date, behavior: ProrationBehavior, now: Date): Promise<store.LineItemRow> {
  assertEndOpen(line, now, 'id')
  const end = line.start_date > at ? line.start_date : at
  return updateRecord<store.LineItemRow>(tx, store.LINE_ITEMS, actor, line.id, { end_date: end, end_proration_behavior: behavior }, { audit })
}

const live = (end: Date | null, at: Date): boolean => end === null || end > at

// ---- addons ----------------------------------------------------------------------------------------------

export interface AddAddonInput {
  subscription_id: string
  addon_id: string
  start_date?: string
  quantity?: number
  metadata?: Record<string, string>
}

/** The addon's prices for the subscription's currency and period start with it; a onetime addon is added once, quantity 1. */
export async function addAddon(deps: Deps, actor: Actor, input: AddAddonInput) {
  const now = deps.clock.now()
  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    const sub = await referenced('subscription_id', lockSubscription(tx, actor, input.subscription_id))
    assertLive(sub)
    const addon = await referenced('addon_id', requireOffering(tx, actor, 'ADDON', input.addon_id))
    const quantity = input.quantity ?? 1
    const { at, behavior } = timing(sub, input.start_date, now, 'start_date')
    if (addon.type === 'onetime') {
      if (quantity !== 1) throw validationError('quantity', 'a onetime addon is added with quantity 1')
      const current = await store.childrenOf<store.AddonAssociationRow>(tx, store.ADDON_ASSOCIATIONS, actor, [sub.id])
      if (current.some((a) => a.addon_id === addon.id && live(a.end_date, at))) throw invalidOperation(`addon ${addon.id} is onetime and subscription ${sub.id} already has it`, { addon_id: addon.id })
    }
    const all = await pricesOf(tx, actor, [addon.id])
    const prices = matchPrices(all, sub.currency, sub.billing_period, sub.billing_period_count)
    if (all.some((p) => p.billing_cadence === 'RECURRING') && !prices.some((p) => p.billing_cadence === 'RECURRING')) {
      throw validationError('addon_id', `addon ${addon.id} has no prices in ${sub.currency} billed every ${sub.billing_period_count} ${sub.billing_period}`)
    }
    const association = await insertRecord<store.AddonAssociationRow>(tx, store.ADDON_ASSOCIATIONS, actor, audit, {
      subscription_id: sub.id,
      addon_id: addon.id,
      quantity,
      start_date: at,
      end_date: sub.end_date,
      metadata: input.metadata ?? {},
    })
    const owner: LineOwner = { entity_type: 'addon', entity_id: addon.id, name: addon.name }
    const span = { start_date: at, end_date: sub.end_date, addon_association_id: association.id }
    await insertRecords(tx, store.LINE_ITEMS, actor, audit, prices.map((p) => ({ ...lineItemFields(sub, owner, p, span), proration_behavior: behavior })))
    await announced(tx, actor, sub, { addon_added: association.id })
    return { ...association, addon, subscription_id: sub.id }
  })
}

/** Ends an addon association now, with its line items (their unused rest settled as the subscription prorates). */
export async function removeAddon(deps: Deps, actor: Actor, input: { addon_association_id: string; reason?: string }) {
  const now = deps.clock.now()
  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    const found = await referenced('addon_association_id', requireRecord<store.AddonAssociationRow>(tx, store.ADDON_ASSOCIATIONS, actor, input.addon_association_id, { published: true }))
    const sub = await lockSubscription(tx, actor, found.subscription_id)
    assertLive(sub)
    if (!live(found.end_date, now)) throw invalidOperation(`addon association ${found.id} ended at ${found.end_date!.toISOString()}`, { addon_association_id: found.id })
    const { behavior } = timing(sub, undefined, now, 'addon_association_id')
    const lines = (await store.childrenOf<store.LineItemRow>(tx, store.LINE_ITEMS, actor, [sub.id])).filter((l) => l.addon_association_id === found.id && live(l.end_date, now))
    for (const line of lines) await endLine(tx, actor, audit, line, now, behavior, now)
    const end = found.start_date > now ? found.start_date : now
    await updateRecord(tx, store.ADDON_ASSOCIATIONS, actor, found.id, { end_date: end }, { audit })
    await announced(tx, actor, sub, { addon_removed: found.id, reason: input.reason ?? null })
    return { message: `addon association ${found.id} ended` }
  })
}

// ---- line items ------------------------------------------------------------------------------------------

export interface AddLineInput {
  price_id: string
  quantity?: string
  start_date?: string
  end_date?: string
  display_name?: string
  metadata?: Record<string, string>
}

/** One more line item from a published price of the subscription's currency and period, starting now or later this period. */
export async function addLineItem(deps: Deps, actor: Actor, subscriptionId: string, input: AddLineInput): Promise<store.LineItemRow> {
  const now = deps.clock.now()
  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    const sub = await lockSubscription(tx, actor, subscriptionId)
    assertLive(sub)
    const price = await requirePrice(tx, actor, input.price_id)
    checkFits(sub, price, 'price_id')
    const { at, behavior } = timing(sub, input.start_date, now, 'start_date')
    const end = date(input.end_date) ?? sub.end_date
    if (end && end <= at) throw validationError('end_date', 'must be after the start')
    if (sub.end_date && end && end > sub.end_date) throw validationError('end_date', `must not be after the subscription's end (${sub.end_date.toISOString()})`)
    const [offering] = await findOfferings(tx, actor, price.entity_type, [price.entity_id])
    const owner: LineOwner = { entity_type: price.entity_type === 'ADDON' ? 'addon' : 'plan', entity_id: price.entity_id, name: offering?.name ?? price.entity_id }
    const quantity = input.quantity === undefined ? undefined : parseQuantity(input.quantity, 'quantity')
    const fields = lineItemFields(sub, owner, price, { start_date: at, end_date: end, quantity })
    const line = await insertRecord<store.LineItemRow>(tx, store.LINE_ITEMS, actor, audit, {
      ...fields,
      display_name: input.display_name ?? fields.display_name,
      metadata: input.metadata ?? {},
      proration_behavior: behavior,
    })
    await announced(tx, actor, sub, { line_item_added: line.id })
    return line
  })
}

/** Ends a line item now or at `effective_from` later this period; one that has not started yet is removed. */
export async function endLineItem(deps: Deps, actor: Actor, id: string, input: { effective_from?: string }): Promise<store.LineItemRow> {
  const now = deps.clock.now()
  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    const found = await requireRecord<store.LineItemRow>(tx, store.LINE_ITEMS, actor, id, { published: true })
    const sub = await lockSubscription(tx, actor, found.subscription_id)
    assertLive(sub)
    const { at, behavior } = timing(sub, input.effective_from, now, 'effective_from')
    if (!live(found.end_date, at)) throw invalidOperation(`line item ${id} ends at ${found.end_date!.toISOString()}, before ${at.toISOString()}`, { line_item_id: id })
    const line = found.start_date >= at ? await deleteRecord<store.LineItemRow>(tx, store.LINE_ITEMS, actor, id, audit) : await endLine(tx, actor, audit, found, at, behavior, now)
    await announced(tx, actor, sub, { line_item_ended: id })
    return line
  })
}
