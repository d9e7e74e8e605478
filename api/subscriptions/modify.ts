// POST /v1/subscriptions/{id}/modify/preview and /modify/execute. One function works out the change
// (what ends, what starts, what it costs for the rest of the period); preview returns it and writes
// nothing, execute applies it in one transaction, bumps the subscription's version and announces it.
import { validationError } from '../../core/errors.ts'
import type { Decimal } from '../../core/money.ts'
import { prorationCharge, prorationCredit } from '../../core/proration.ts'
import type { Actor, Scope } from '../../core/scope.ts'
import { effectiveAt, parseQuantity } from '../../core/subscriptions.ts'
import type { Deps } from '../../infra/deps.ts'
import type { Db } from '../../infra/postgres.ts'
import { insertRecords, updateRecord } from '../../infra/records.ts'
import { announce, auditOf, transaction } from '../records/service.ts'
import { toWire } from '../records/wire.ts'
import { periodAmount, successor } from './line-items.ts'
import { assertLive, groupableChildren, lockSubscription, paidInAdvance, prorationLine, regroup, requireSubscription, totalOf, viewOf, type ProrationLine } from './service.ts'
import * as store from './store.ts'

export interface ModifyInput {
  type: 'quantity_change' | 'grouped_invoicing_add' | 'grouped_invoicing_remove'
  quantity_change_params?: {
    line_items: { id: string; quantity: string; effective_date?: string }[]
    proration_behavior?: 'create_prorations' | 'none'
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
  proration: ProrationLine[]
  group?: { add: store.SubscriptionRow[]; remove: store.SubscriptionRow[] }
}

const PARAMS = { quantity_change: 'quantity_change_params', grouped_invoicing_add: 'grouped_invoicing_params', grouped_invoicing_remove: 'grouped_invoicing_params' } as const

/**
 * A new quantity replaces an in-force fixed line from its effective date. Paid in advance with
 * create_prorations, the old quantity's unused rest is credited and the new one's charged, each line
 * rounded once; otherwise the next invoice simply bills the new quantity.
 */
async function planQuantities(db: Db, scope: Scope, sub: store.SubscriptionRow, now: Date, input: NonNullable<ModifyInput['quantity_change_params']>): Promise<Plan> {
  const lines = new Map((await store.childrenOf<store.LineItemRow>(db, store.LINE_ITEMS, scope, [sub.id])).map((l) => [l.id, l]))
  const period = { start: sub.current_period_start, end: sub.current_period_end }
  const prorate = (input.proration_behavior ?? sub.proration_behavior) === 'create_prorations' && sub.subscription_status === 'active'
  const quantities: QuantityChange[] = []
  const proration: ProrationLine[] = []
  for (const [i, change] of input.line_items.entries()) {
    const field = `quantity_change_params.line_items[${i}]`
    const line = lines.get(change.id)
    if (!line) throw validationError(`${field}.id`, `subscription ${sub.id} has no line item ${change.id}`)
    if (line.price_type !== 'FIXED') throw validationError(`${field}.id`, 'only fixed line items have a quantity; usage is measured')
    const at = effectiveAt(change.effective_date ? new Date(change.effective_date) : undefined, now, period, `${field}.effective_date`)
    if (line.start_date > at || (line.end_date && line.end_date <= at)) throw validationError(`${field}.id`, 'the line item is not in force at the effective date')
    const quantity = parseQuantity(change.quantity, `${field}.quantity`)
    if (quantity.eq(line.quantity)) throw validationError(`${field}.quantity`, 'is the quantity the line item already has')
    quantities.push({ line, quantity, at })
    if (prorate && paidInAdvance(line)) {
      const base = { periodStart: period.start, periodEnd: period.end, at, label: line.display_name ?? line.price_id }
      proration.push(
        prorationLine(sub, line, prorationCredit({ ...base, amount: periodAmount(line, line.quantity) })),
        prorationLine(sub, line, prorationCharge({ ...base, amount: periodAmount(line, quantity) })),
      )
    }
  }
  return { sub, quantities, proration }
}

async function planGrouping(db: Db, scope: Scope, sub: store.SubscriptionRow, input: ModifyInput): Promise<Plan> {
  const ids = input.grouped_invoicing_params!.child_subscription_ids
  const field = 'grouped_invoicing_params.child_subscription_ids'
  if (input.type === 'grouped_invoicing_add') {
    if (sub.subscription_type !== 'standalone' && sub.subscription_type !== 'parent') throw validationError(field, `a ${sub.subscription_type} subscription cannot be a parent`)
    if (sub.auto_invoice_threshold) throw validationError(field, 'this subscription has an auto_invoice_threshold and must stay standalone')
    return { sub, quantities: [], proration: [], group: { add: await groupableChildren(db, scope, ids, field, sub.currency, sub.id), remove: [] } }
  }
  const grouped = new Map((await store.childSubscriptions(db, scope, sub.id)).filter((c) => c.subscription_type === 'grouped_invoicing').map((c) => [c.id, c]))
  const remove = ids.map((id) => {
    const child = grouped.get(id)
    if (!child) throw validationError(field, `subscription ${id} is not grouped under ${sub.id}`)
    return child
  })
  return { sub, quantities: [], proration: [], group: { add: [], remove } }
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

export async function previewModification(deps: Deps, actor: Actor, id: string, input: ModifyInput) {
  const sub = await requireSubscription(deps.sql, actor, id)
  return toWire(summary(await planChange(deps.sql, actor, sub, deps.clock.now(), input), input))
}

export async function executeModification(deps: Deps, actor: Actor, id: string, input: ModifyInput) {
  const now = deps.clock.now()
  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    // Worked out under the subscription's lock, so two changes cannot both act on the same state.
    const plan = await planChange(tx, actor, await lockSubscription(tx, actor, id, input.version), now, input)
    for (const { line, at } of plan.quantities) await updateRecord(tx, store.LINE_ITEMS, actor, line.id, { end_date: at }, { audit })
    const successors = plan.quantities.map(({ line, quantity, at }) => successor(line, { quantity, start_date: at }))
    const createdLines = await insertRecords<store.LineItemRow>(tx, store.LINE_ITEMS, actor, audit, successors)
    let type = plan.sub.subscription_type
    if (plan.group) {
      await regroup(tx, actor, audit, plan.group.add, { subscription_type: 'grouped_invoicing', parent_subscription_id: id })
      await regroup(tx, actor, audit, plan.group.remove, { subscription_type: 'standalone', parent_subscription_id: null })
      // A parent keeps the name while any child (grouped or inherited) remains.
      const children = await store.childSubscriptions(tx, actor, id)
      type = children.length > 0 ? 'parent' : type === 'parent' ? 'standalone' : type
    }
    const row = await updateRecord<store.SubscriptionRow>(tx, store.SUBSCRIPTIONS, actor, id, { subscription_type: type }, { audit })
    const result = summary(plan, input, createdLines.map((l) => l.id))
    const view = await viewOf(tx, actor, row)
    const announced = { ...view, modification: toWire(result) }
    await announce(tx, actor, 'subscription.updated', store.SUBSCRIPTIONS, announced)
    return toWire({ ...result, subscription: view })
  })
}
