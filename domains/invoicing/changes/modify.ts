// POST /v1/subscriptions/{id}/modify/preview and /modify/execute. One function works out the change
// (what ends, what starts, what it costs for the rest of the period, computed by the billing engine's
// own proration code); preview returns it and writes nothing, execute applies it in one transaction,
// bumps the subscription's version and announces it. With always_invoice, execute also makes the
// SUBSCRIPTION_UPDATE invoice that preview shows.
// It stands with invoicing, above subscriptions, because a change is settled by invoices.
import type { ProrationBehavior } from '../../../core/billing/cycle.ts'
import { AppError, invalidOperation, validationError } from '../../../core/errors.ts'
import type { Decimal } from '../../../core/money.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import { effectiveAt, parseQuantity } from '../../../core/subscriptions.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Db, Tx } from '../../../infra/postgres.ts'
import { insertRecords, updateRecord } from '../../../infra/records.ts'
import { changeCharges, settlementOf, updateInvoice, updateTaxes } from '../invoices/billing.ts'
import { previewOf, storeSubscriptionInvoices } from '../invoices/subscription-invoices.ts'
import { viewOf as invoiceView } from '../invoices/read.ts'
import { type PointInvoice } from '../invoices/billing.ts'
import type { ResolvedRate } from '../taxes/service.ts'
import { announce, auditOf, transaction } from '../../records/service.ts'
import { toWire } from '../../records/wire.ts'
import { successor } from '../../subscriptions/line-items.ts'
import { assertEndOpen, assertLive, groupableChildren, regroup } from '../../subscriptions/service.ts'
import { lockSubscription, requireSubscription, viewOf } from '../../subscriptions/read.ts'
import { prorationLines, totalOf, type ProrationLine } from './proration-lines.ts'
import * as store from '../../subscriptions/store.ts'

export interface ModifyInput {
  type: 'quantity_change' | 'grouped_invoicing_add' | 'grouped_invoicing_remove'
  quantity_change_params?: {
    line_items: { id: string; quantity: string; effective_date?: string }[]
    proration_behavior?: ProrationBehavior
  }
  grouped_invoicing_params?: { child_subscription_ids: string[] }
  version?: number
}

interface QuantityChange {
  line: store.LineItemRow
  quantity: Decimal
  at: Date
}

/** The change worked out, before anything is written. */
interface Plan {
  sub: store.SubscriptionRow
  quantities: QuantityChange[]
  /** How the quantity changes are settled (Stripe's proration_behavior). */
  behavior: ProrationBehavior
  proration: ProrationLine[]
  group?: { add: store.SubscriptionRow[]; remove: store.SubscriptionRow[] }
}

const PARAMS = { quantity_change: 'quantity_change_params', grouped_invoicing_add: 'grouped_invoicing_params', grouped_invoicing_remove: 'grouped_invoicing_params' } as const

/**
 * The line items a quantity change ends and starts, as they are stored after it: the old line ends at
 * its effective date, its successor (named `ids[i]` once made, else after the old line) starts there,
 * both carrying the change's proration behavior. The successor keeps the old line's end (a scheduled
 * cancellation) and how that end is settled.
 */
function changedRows(quantities: QuantityChange[], behavior: ProrationBehavior, ids: string[] = []): store.LineItemRow[] {
  return quantities.flatMap(({ line, quantity, at }, i) => [
    { ...line, end_date: at, end_proration_behavior: behavior },
    { ...line, ...successorOf(line, quantity, at, behavior), id: ids[i] ?? line.id },
  ])
}

const successorOf = (line: store.LineItemRow, quantity: Decimal, at: Date, behavior: ProrationBehavior) => ({ ...successor(line, { quantity, start_date: at }), proration_behavior: behavior })

/**
 * A new quantity replaces an in-force fixed line from its effective date. Paid in advance, the old
 * quantity's unused rest is credited and the new one's charged (each line rounded once), as the
 * billing engine computes them: on the next invoice (create_prorations), on an invoice now
 * (always_invoice), or not at all (none: the next invoice simply bills the new quantity).
 */
async function planQuantities(db: Db, scope: Scope, sub: store.SubscriptionRow, now: Date, input: NonNullable<ModifyInput['quantity_change_params']>): Promise<Plan> {
  const lines = new Map((await store.childrenOf<store.LineItemRow>(db, store.LINE_ITEMS, scope, [sub.id])).map((l) => [l.id, l]))
  const period = { start: sub.current_period_start, end: sub.current_period_end }
  const behavior = settlementOf(sub, input.proration_behavior ?? (sub.proration_behavior as ProrationBehavior), now, now)
  const quantities: QuantityChange[] = []
  for (const [i, change] of input.line_items.entries()) {
    const field = `quantity_change_params.line_items[${i}]`
    const line = lines.get(change.id)
    if (!line) throw new AppError('not_found', `${field}.id: subscription ${sub.id} has no line item ${change.id}`, { id: change.id, [`${field}.id`]: change.id })
    if (line.price_type !== 'FIXED') throw validationError(`${field}.id`, 'only fixed line items have a quantity; usage is measured')
    const at = effectiveAt(change.effective_date ? new Date(change.effective_date) : undefined, now, period, `${field}.effective_date`)
    if (line.start_date > at || (line.end_date && line.end_date <= at)) throw validationError(`${field}.id`, 'the line item is not in force at the effective date')
    assertEndOpen(line, now, `${field}.id`)
    const quantity = parseQuantity(change.quantity, `${field}.quantity`)
    if (quantity.eq(line.quantity)) throw validationError(`${field}.quantity`, 'is the quantity the line item already has')
    quantities.push({ line, quantity, at })
  }
  const charges = changeCharges(sub, changedRows(quantities, behavior), quantities.map((q) => q.at), behavior)
  return { sub, quantities, behavior, proration: prorationLines(sub, charges) }
}

async function planGrouping(db: Db, scope: Scope, sub: store.SubscriptionRow, input: ModifyInput): Promise<Plan> {
  const ids = input.grouped_invoicing_params!.child_subscription_ids
  const field = 'grouped_invoicing_params.child_subscription_ids'
  if (input.type === 'grouped_invoicing_add') {
    if (sub.subscription_type !== 'standalone' && sub.subscription_type !== 'parent') throw validationError(field, `a ${sub.subscription_type} subscription cannot be a parent`)
    if (sub.auto_invoice_threshold) throw validationError(field, 'this subscription has an auto_invoice_threshold and must stay standalone')
    return { sub, quantities: [], behavior: 'none', proration: [], group: { add: await groupableChildren(db, scope, ids, field, sub.currency, sub.id), remove: [] } }
  }
  const grouped = new Map((await store.childSubscriptions(db, scope, sub.id)).filter((c) => c.subscription_type === 'grouped_invoicing').map((c) => [c.id, c]))
  const remove = ids.map((id) => {
    const child = grouped.get(id)
    if (!child) throw validationError(field, `subscription ${id} is not grouped under ${sub.id}`)
    return child
  })
  return { sub, quantities: [], behavior: 'none', proration: [], group: { add: [], remove } }
}

async function planChange(db: Db, scope: Scope, sub: store.SubscriptionRow, now: Date, input: ModifyInput): Promise<Plan> {
  if (!input[PARAMS[input.type]]) throw validationError(PARAMS[input.type], `is required for type ${input.type}`)
  assertLive(sub)
  return input.type === 'quantity_change' ? planQuantities(db, scope, sub, now, input.quantity_change_params!) : planGrouping(db, scope, sub, input)
}

/** What the change does; `createdIds` names the new line items once execute made them. */
function summary(plan: Plan, input: ModifyInput, createdIds: string[] = []) {
  const ended = plan.quantities.map((q) => ({ id: q.line.id, price_id: q.line.price_id, quantity: q.line.quantity, end_date: q.at, change_action: 'ended' }))
  const started = plan.quantities.map((q, i) => ({ id: createdIds[i] ?? null, price_id: q.line.price_id, quantity: q.quantity, start_date: q.at, change_action: 'created' }))
  const children = [
    ...(plan.group?.add ?? []).map((c) => ({ id: c.id, subscription_type: 'grouped_invoicing', parent_subscription_id: plan.sub.id })),
    ...(plan.group?.remove ?? []).map((c) => ({ id: c.id, subscription_type: 'standalone', parent_subscription_id: null })),
  ]
  return {
    subscription_id: plan.sub.id,
    type: input.type,
    changed_resources: { line_items: [...ended, ...started], subscriptions: children },
    proration: { currency: plan.sub.currency, lines: plan.proration, total: totalOf(plan.proration, plan.sub.currency) },
  }
}

/** The update invoice of an always_invoice change: its proration lines, billed now. */
function changeInvoice(deps: Deps, plan: Plan, taxes: ResolvedRate[], now: Date, ids?: string[]) {
  if (plan.behavior !== 'always_invoice') return undefined
  const charges = changeCharges(plan.sub, changedRows(plan.quantities, plan.behavior, ids), plan.quantities.map((q) => q.at), plan.behavior)
  return charges.length > 0 ? updateInvoice(plan.sub, charges, taxes, now, deps.config.invoicing.graceMs) : undefined
}

/** An always_invoice change's tax rates, read before any transaction (the tax service reads on its own connection). */
const changeTaxes = async (deps: Deps, actor: Actor, sub: store.SubscriptionRow, input: ModifyInput, now: Date) =>
  input.quantity_change_params?.proration_behavior === 'always_invoice' ? updateTaxes(deps, actor, sub, now) : []

export async function previewModification(deps: Deps, actor: Actor, id: string, input: ModifyInput) {
  const now = deps.clock.now()
  const sub = await requireSubscription(deps.sql, actor, id)
  const plan = await planChange(deps.sql, actor, sub, now, input)
  const invoice = changeInvoice(deps, plan, await changeTaxes(deps, actor, sub, input, now), now)
  return toWire({ ...summary(plan, input), invoice: invoice ? await previewOf(deps.sql, actor, invoice, now) : null })
}

/**
 * Applies the change in one transaction; with always_invoice its SUBSCRIPTION_UPDATE invoice is made in
 * the same transaction (a draft for the grace period, or finalized at once), so the change and its
 * invoice exist together or not at all.
 */
export async function executeModification(deps: Deps, actor: Actor, id: string, input: ModifyInput) {
  const now = deps.clock.now()
  const audit = auditOf(deps, actor)
  const taxes = await changeTaxes(deps, actor, await requireSubscription(deps.sql, actor, id), input, now)
  return transaction(deps, async (tx) => {
    // Worked out under the subscription's lock, so two changes cannot both act on the same state.
    const plan = await planChange(tx, actor, await lockSubscription(tx, actor, id, input.version), now, input)
    for (const { line, at } of plan.quantities) await updateRecord(tx, store.LINE_ITEMS, actor, line.id, { end_date: at, end_proration_behavior: plan.behavior }, { audit })
    const successors = plan.quantities.map(({ line, quantity, at }) => successorOf(line, quantity, at, plan.behavior))
    const createdLines = await insertRecords<store.LineItemRow>(tx, store.LINE_ITEMS, actor, audit, successors)
    const invoice = await storeChangeInvoice(deps, tx, actor, changeInvoice(deps, plan, taxes, now, createdLines.map((l) => l.id)))
    let type = plan.sub.subscription_type
    if (plan.group) {
      await regroup(tx, actor, audit, plan.group.add, { subscription_type: 'grouped_invoicing', parent_subscription_id: id })
      await regroup(tx, actor, audit, plan.group.remove, { subscription_type: 'standalone', parent_subscription_id: null })
      // A parent keeps the name while any child (grouped or inherited) remains.
      const children = await store.childSubscriptions(tx, actor, id)
      type = children.length > 0 ? 'parent' : type === 'parent' ? 'standalone' : type
    }
    const row = await updateRecord<store.SubscriptionRow>(tx, store.SUBSCRIPTIONS, actor, id, { subscription_type: type }, { audit })
    const result = { ...summary(plan, input, createdLines.map((l) => l.id)), invoice_id: invoice?.id ?? null }
    const view = await viewOf(tx, actor, row)
    const announced = { ...view, modification: toWire(result) }
    await announce(tx, actor, 'subscription.updated', store.SUBSCRIPTIONS, announced)
    return toWire({ ...result, invoice, subscription: view })
  })
}

/** Stores an update invoice; a second one for the same instant would bill nothing, so the change is refused instead. */
export async function storeChangeInvoice(deps: Deps, tx: Tx, actor: Actor, invoice: PointInvoice | undefined) {
  if (!invoice) return null
  const [row] = await storeSubscriptionInvoices(deps, tx, actor, [invoice])
  if (!row) throw invalidOperation(`subscription ${invoice.subscription.id} already has an update invoice from ${invoice.header.period_start.toISOString()}; make the change effective at another time`)
  return invoiceView(tx, actor, row)
}
