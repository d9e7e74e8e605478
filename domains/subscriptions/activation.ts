// A draft subscription activated (from a start date, trial and anchor shifted with it), and an incomplete
// one made active when its first invoice is paid (payment_behavior default_incomplete).
import { invalidOperation, validationError } from '../../core/errors.ts'
import type { Actor, Scope } from '../../core/scope.ts'
import { billingAnchor, checkPhases, initialStatus, periodAt, type Timeline } from '../../core/subscriptions.ts'
import type { Deps } from '../../infra/deps.ts'
import type { Tx } from '../../infra/postgres.ts'
import { updateRecord, type Audit } from '../../infra/records.ts'
import { announce, auditOf, transaction } from '../records/service.ts'
import * as store from './store.ts'
import { awaitsPayment, date } from './service.ts'
import { lockSubscription, viewOf, type SubscriptionView } from './read.ts'

/**
 * Activates a draft from `start_date` (default now): the trial keeps its length, an anchor that
 * followed the start or trial end follows the new one (an explicit billing_anchor stays), and the line
 * items and addons that began with the subscription begin with it again.
 */
export async function activateSubscription(deps: Deps, actor: Actor, id: string, input: { start_date?: string; version?: number }): Promise<SubscriptionView> {
  const now = deps.clock.now()
  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    const sub = await lockSubscription(tx, actor, id, input.version)
    if (sub.subscription_status !== 'draft') throw invalidOperation(`subscription ${id} is ${sub.subscription_status}, not a draft`, { subscription_id: id })
    const start = date(input.start_date) ?? now
    if (sub.end_date && sub.end_date <= start) throw validationError('start_date', 'must be before the subscription end_date')
    const shift = (d: Date | null) => (d ? new Date(d.getTime() + start.getTime() - sub.start_date.getTime()) : null)
    const schedule = { billing_cycle: sub.billing_cycle, billing_period: sub.billing_period, billing_period_count: sub.billing_period_count, timezone: sub.customer_timezone }
    const derived = billingAnchor(schedule, sub.trial_end ?? sub.start_date).getTime() === sub.billing_anchor.getTime()
    const trial = { trial_start: shift(sub.trial_start), trial_end: shift(sub.trial_end) }
    const timeline: Timeline = { ...schedule, ...trial, start_date: start, end_date: sub.end_date, billing_anchor: derived ? billingAnchor(schedule, trial.trial_end ?? start) : sub.billing_anchor }
    checkPhases(await store.childrenOf<store.PhaseRow>(tx, store.PHASES, actor, [id]), start, sub.end_date)
    const period = periodAt(timeline, now)
    const row = await updateRecord<store.SubscriptionRow>(
      tx,
      store.SUBSCRIPTIONS,
      actor,
      id,
      {
        ...trial,
        start_date: start,
        billing_anchor: timeline.billing_anchor,
        subscription_status: initialStatus(timeline, now, awaitsPayment(sub.collection_method, sub.payment_behavior)),
        current_period_start: period.start,
        current_period_end: period.end,
      },
      { audit },
    )
    await store.moveStart(tx, actor, id, sub.start_date, start, audit)
    const view = await viewOf(tx, actor, row)
    await announce(tx, actor, 'subscription.activated', store.SUBSCRIPTIONS, view)
    return view
  })
}

/**
 * payment_behavior default_incomplete: the subscription waits, incomplete, for its first invoice to be
 * paid, then becomes active (subscription.activated), as Stripe's does. Called in the transaction that
 * records a payment of one of its invoices; any other status is left alone.
 */
export async function subscriptionInvoicePaid(tx: Tx, scope: Scope, audit: Audit, subscriptionId: string): Promise<void> {
  const sub = await lockSubscription(tx, scope, subscriptionId)
  if (sub.subscription_status !== 'incomplete') return
  const row = await updateRecord<store.SubscriptionRow>(tx, store.SUBSCRIPTIONS, scope, subscriptionId, { subscription_status: 'active' }, { audit })
  await announce(tx, scope, 'subscription.activated', store.SUBSCRIPTIONS, await viewOf(tx, scope, row))
}
