// A plan change that resets the billing cycle (billing_cycle_anchor: now), as Flexprice changes plans: the
// subscription is cancelled now (its unused rest credited as proration_behavior says, cancel.ts) and a new one
// on the target plan starts now with the same terms, anchored at the change, in one transaction. The preview
// runs the same and rolls it back (plan-change-rollback.ts), so it answers exactly what execute will do.
import type { ProrationBehavior } from '../../../core/billing/cycle.ts'
import { invalidOperation, validationError } from '../../../core/errors.ts'
import { formatMoney, parseDecimal } from '../../../core/money.ts'
import type { Actor } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Tx } from '../../../infra/postgres.ts'
import { inTransaction, transaction } from '../../records/service.ts'
import { toWire } from '../../records/wire.ts'
import { lockSubscription } from '../../subscriptions/read.ts'
import { createSubscription } from '../../subscriptions/service.ts'
import * as store from '../../subscriptions/store.ts'
import { assemble } from '../invoices/assemble.ts'
import { loadContext, pointBySequence, pointSpec, subscriptionHeader } from '../invoices/billing.ts'
import { previewOf } from '../invoices/subscription-invoices.ts'
import { cancelSubscription } from './cancel.ts'
import { checkTarget, invoiceSummary, type PlanChangeInput, planSummary, subscriptionSummary } from './plan-change.ts'
import { rolledBack } from './plan-change-rollback.ts'
import { pendingOf } from './schedules-store.ts'

type Sub = store.SubscriptionRow

/** The new subscription's request: the old one's terms on the target plan, from `at`. */
function successorOf(sub: Sub, targetPlanId: string, at: Date) {
  const text = (v: { toFixed(): string } | null) => (v === null ? undefined : v.toFixed())
  return {
    customer_id: sub.customer_id,
    plan_id: targetPlanId,
    currency: sub.currency,
    billing_period: sub.billing_period,
    billing_period_count: sub.billing_period_count,
    billing_cycle: 'anniversary' as const,
    start_date: at.toISOString(),
    end_date: sub.end_date?.toISOString(),
    collection_method: sub.collection_method as 'charge_automatically' | 'send_invoice',
    payment_terms: sub.payment_terms ?? undefined,
    proration_behavior: sub.proration_behavior as 'create_prorations' | 'none',
    commitment_amount: text(sub.commitment_amount),
    commitment_duration: sub.commitment_duration ? sub.billing_period : undefined,
    overage_factor: text(sub.overage_factor),
    enable_true_up: sub.enable_true_up,
    auto_invoice_threshold: text(sub.auto_invoice_threshold),
    invoicing_customer_id: sub.invoicing_customer_id ?? undefined,
    tax_rate_overrides: sub.tax_rate_overrides,
    customer_timezone: sub.customer_timezone,
    gateway_payment_method_id: sub.gateway_payment_method_id ?? undefined,
    metadata: { ...sub.metadata, replaces_subscription_id: sub.id },
  }
}

/** Cancels and replaces, in the caller's transaction `tx` (`deps` from inTransaction over it). */
async function replace(deps: Deps, tx: Tx, actor: Actor, id: string, input: PlanChangeInput) {
  if (input.change_at === 'end_of_period') throw validationError('billing_cycle_anchor', 'a change at the end of the period starts the next period on its own: send billing_cycle_anchor now with change_at immediate')
  const now = deps.clock.now()
  const sub = await lockSubscription(tx, actor, id, input.version)
  const { target, current } = await checkTarget(deps.sql, actor, sub, input)
  if (sub.subscription_type === 'parent') throw invalidOperation(`subscription ${sub.id} is a parent; its children stay with it, so its cycle is not reset (change its plan keeping the cycle)`, { subscription_id: sub.id })
  const pending = await pendingOf(deps.sql, actor, sub.id)
  if (pending) throw invalidOperation(`subscription ${sub.id} has a plan change scheduled (${pending.id}); cancel it first`, { schedule_id: pending.id })
  const behavior = input.proration_behavior ?? (sub.proration_behavior as ProrationBehavior)
  const cancellation = await cancelSubscription(deps, actor, sub.id, { cancellation_type: 'immediate', proration_behavior: behavior, reason: `plan change to ${target.id}` })
  const created = await createSubscription(deps, actor, successorOf(sub, target.id, now))
  const credit = parseDecimal(cancellation.total_credit_amount).neg()
  return { sub, current, target, created, cancellation, credit, now }
}

const details = (r: Awaited<ReturnType<typeof replace>>) => ({
  currency: r.sub.currency,
  proration_date: r.now,
  current_period_start: r.sub.current_period_start,
  current_period_end: r.sub.current_period_end,
  credit_amount: formatMoney(r.credit, r.sub.currency),
  credit_description: r.cancellation.proration_details.map((l) => l.description).join('; '),
  proration_behavior: r.cancellation.proration_behavior,
  lines: r.cancellation.proration_details,
})

export async function previewReset(deps: Deps, actor: Actor, id: string, input: PlanChangeInput) {
  return rolledBack(deps, async (inner, tx) => {
    const r = await replace(inner, tx, actor, id, input)
    // The first billing point (its start): what the new subscription's first invoice bills.
    const point = pointBySequence(r.created, 1)
    const spec = await pointSpec(inner, actor, await loadContext(inner, actor, r.created), point, { usageEnd: r.now })
    const header = subscriptionHeader(r.created, point, deps.config.invoicing.graceMs)
    const first = await previewOf(tx, actor, { header, assembled: assemble(spec), subscription: r.created }, r.now)
    return toWire({
      subscription_id: id,
      current_plan: planSummary(r.current),
      target_plan: planSummary(r.target),
      effective_date: r.now,
      is_scheduled: false,
      billing_cycle_anchor: 'now',
      proration_details: details(r),
      next_invoice_preview: invoiceSummary(first),
      new_billing_cycle: { billing_anchor: r.created.billing_anchor, billing_cadence: 'RECURRING', billing_period: r.created.billing_period, billing_period_count: r.created.billing_period_count, period_start: r.created.current_period_start, period_end: r.created.current_period_end },
      warnings: [`the subscription is replaced: ${id} is cancelled and a new subscription on plan ${r.target.id} starts now, billed for a whole period from now`],
      metadata: input.metadata ?? {},
    })
  })
}

export async function executeReset(deps: Deps, actor: Actor, id: string, input: PlanChangeInput) {
  return transaction(deps, async (tx) => {
    const r = await replace(inTransaction(deps, tx), tx, actor, id, input)
    return toWire({
      subscription_id: id,
      is_scheduled: false,
      effective_date: r.now,
      billing_cycle_anchor: 'now',
      target_plan_id: r.target.id,
      old_subscription: subscriptionSummary({ ...r.sub, subscription_status: 'cancelled' }),
      new_subscription: subscriptionSummary(r.created),
      proration_applied: details(r),
      invoice: r.cancellation.invoice,
      invoice_id: r.cancellation.invoice_id,
      credit_grants: [],
      metadata: input.metadata ?? {},
      subscription: r.created,
    })
  })
}
