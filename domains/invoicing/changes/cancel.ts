// POST /v1/subscriptions/{id}/cancel (rule 4): now, at the end of the current period, or on a future
// date. The line items (and those of inherited children, billed through the subscription) end at the
// cancellation's date at once, a scheduled one too, each recording how that end is settled, as Stripe's
// proration_behavior says: the unused rest of what was paid in advance is credited on the subscription's
// last invoice (create_prorations), on a SUBSCRIPTION_UPDATE invoice made now (always_invoice), or not at
// all (none). The credits are the billing engine's own, so the answer shows what will be billed.
// It stands with invoicing, above subscriptions, because a change is settled by invoices.
import type { ProrationBehavior } from '../../../core/billing/cycle.ts'
import { invalidOperation, validationError } from '../../../core/errors.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Tx } from '../../../infra/postgres.ts'
import { updateRecord } from '../../../infra/records.ts'
import { changeCharges, settlementOf, updateInvoice, updateTaxes } from '../invoices/billing.ts'
import { announce, auditOf, transaction } from '../../records/service.ts'
import { toWire } from '../../records/wire.ts'
import { storeChangeInvoice } from './modify.ts'
import { assertEndOpen, releaseChildren } from '../../subscriptions/service.ts'
import { lockSubscription, requireSubscription, viewOf, type SubscriptionView } from '../../subscriptions/read.ts'
import { prorationLines, totalOf } from './proration-lines.ts'
import * as store from '../../subscriptions/store.ts'

export interface CancelInput {
  cancellation_type: 'immediate' | 'end_of_period' | 'scheduled_date'
  cancel_at?: string
  reason?: string
  /** How the unused rest is settled; the subscription's own proration_behavior when absent. */
  proration_behavior?: ProrationBehavior
  version?: number
}

/** When the cancellation takes effect, and what it sets on the subscription. */
function effectOf(sub: store.SubscriptionRow, input: CancelInput, now: Date): { at: Date; changes: Partial<store.SubscriptionRow> } {
  if (input.cancellation_type === 'scheduled_date') {
    if (!input.cancel_at) throw validationError('cancel_at', 'is required with cancellation_type scheduled_date')
    const at = new Date(input.cancel_at)
    if (at <= now) throw validationError('cancel_at', 'must be in the future')
    if (sub.end_date && at > sub.end_date) throw validationError('cancel_at', 'is after the subscription end_date')
    return { at, changes: { cancel_at: at, cancel_at_period_end: false } }
  }
  if (input.cancellation_type === 'end_of_period') return { at: sub.current_period_end, changes: { cancel_at: sub.current_period_end, cancel_at_period_end: true } }
  return { at: now, changes: { subscription_status: 'cancelled', cancel_at: now, cancelled_at: now, end_date: now, cancel_at_period_end: false } }
}

/**
 * Rule 4: scheduled_date needs cancel_at strictly in the future; the subscription stays active until then
 * and the lifecycle job ends it. end_of_period cancels when the current period ends. immediate ends it
 * now. A cancellation may replace an earlier scheduled one, unless that one's credit was already invoiced.
 */
export async function cancelSubscription(deps: Deps, actor: Actor, id: string, input: CancelInput) {
  const now = deps.clock.now()
  const audit = auditOf(deps, actor)
  if (input.cancel_at !== undefined && input.cancellation_type !== 'scheduled_date') throw validationError('cancel_at', 'is only used with cancellation_type scheduled_date')
  // The update invoice's tax rates are read before the transaction (the tax service reads on its own connection).
  const taxes = input.proration_behavior === 'always_invoice' ? await updateTaxes(deps, actor, await requireSubscription(deps.sql, actor, id), now) : []
  return transaction(deps, async (tx) => {
    const sub = await lockSubscription(tx, actor, id, input.version)
    if (sub.subscription_status === 'cancelled') throw invalidOperation(`subscription ${id} is already cancelled`, { subscription_id: id })
    const { at, changes } = effectOf(sub, input, now)
    // Settled on the subscription as it runs without an earlier scheduled cancellation, which this one replaces.
    const running: store.SubscriptionRow = { ...sub, cancel_at: null }
    const behavior = settlementOf(running, input.proration_behavior ?? (sub.proration_behavior as ProrationBehavior), at, now)
    const members = [sub, ...(await store.childSubscriptions(tx, actor, id)).filter((c) => c.subscription_type === 'inherited')]
    const lines = await store.childrenOf<store.LineItemRow>(tx, store.LINE_ITEMS, actor, members.map((m) => m.id))
    const ending = lines.filter((l) => l.end_date === null || l.end_date > at || l.end_date.getTime() === sub.cancel_at?.getTime())
    for (const l of ending) assertEndOpen(l, now, 'cancellation_type')
    // The lines as stored after the cancellation (endLineItems): what the billing engine credits.
    const ended = ending.map((l) => ({ ...l, end_date: l.start_date > at ? l.start_date : at, end_proration_behavior: behavior }))
    const member = new Map(members.map((m) => [m.id, m]))
    const charges = changeCharges(running, ended, [at], behavior).map((c) => ({ ...c, member: member.get(c.row.subscription_id) }))
    const row = await updateRecord<store.SubscriptionRow>(tx, store.SUBSCRIPTIONS, actor, id, changes, { audit })
    for (const m of members) await store.endLineItems(tx, actor, { subscription_id: m.id }, at, audit, { behavior, from: sub.cancel_at })
    const immediate = input.cancellation_type === 'immediate'
    if (immediate) await releaseChildren(tx, actor, audit, row, now)
    const invoice = behavior === 'always_invoice' && charges.length > 0 ? await storeChangeInvoice(deps, tx, actor, updateInvoice(running, charges, taxes, now, deps.config.invoicing.graceMs)) : null
    const proration = prorationLines(sub, charges)
    const view = await viewOf(tx, actor, row)
    const result = {
      subscription_id: id,
      cancellation_type: input.cancellation_type,
      effective_date: at,
      status: row.subscription_status,
      reason: input.reason ?? null,
      proration_behavior: behavior,
      proration_details: proration,
      total_credit_amount: totalOf(proration, sub.currency),
      invoice_id: invoice?.id ?? null,
      processed_at: now,
    }
    await recordCancellation(tx, actor, view, immediate, result)
    return { ...result, invoice, subscription: view }
  })
}

async function recordCancellation(tx: Tx, scope: Scope, view: SubscriptionView, immediate: boolean, cancellation: object): Promise<void> {
  const record = { ...view, cancellation: toWire(cancellation) }
  await announce(tx, scope, immediate ? 'subscription.cancelled' : 'subscription.updated', store.SUBSCRIPTIONS, record)
}
