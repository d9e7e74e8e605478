// Moves subscriptions along in time (run by the worker's subscription-lifecycle job): a reached start
// or an ended trial activates, a due cancel_at or end_date cancels, a finished period rolls over. The
// rules are core/subscriptions.ts's `advance`; this applies them, with their events, one batch per
// transaction. Reads never wait for it: the entitlement lookup checks the dates itself.
import type { Scope } from '../../core/scope.ts'
import { advance, billingAnchor, type Advance, type SubscriptionState } from '../../core/subscriptions.ts'
import type { Deps } from '../../infra/deps.ts'
import type { Tx } from '../../infra/postgres.ts'
import { updateRecord, updateRecords, type Audit } from '../../infra/records.ts'
import { announce, announceMany, transaction } from '../records/service.ts'
import { inReach } from '../customers/reach.ts'
import { releaseChildren } from './service.ts'
import * as store from './store.ts'

const BATCH = 200

const stateOf = (row: store.SubscriptionRow): SubscriptionState => ({ ...row, timezone: row.customer_timezone })
const scopeOf = (row: store.SubscriptionRow): Scope => ({ tenantId: row.tenant_id, environmentId: row.environment_id })

export interface LifecycleSummary {
  advanced: number
  events: Record<string, number>
}

async function apply(tx: Tx, row: store.SubscriptionRow, now: Date, audit: Audit, summary: LifecycleSummary): Promise<void> {
  const step = advance(stateOf(row), now)
  if (!step) return
  const scope = scopeOf(row)
  const updated = await updateRecord<store.SubscriptionRow>(tx, store.SUBSCRIPTIONS, scope, row.id, step.changes, { audit })
  if (updated.subscription_status === 'cancelled') {
    await store.endLineItems(tx, scope, { subscription_id: row.id }, updated.cancelled_at!, audit)
    await releaseChildren(tx, scope, audit, updated, updated.cancelled_at!)
  }
  for (const event of step.events) {
    await announce(tx, scope, event, store.SUBSCRIPTIONS, updated)
    summary.events[event] = (summary.events[event] ?? 0) + 1
  }
  summary.advanced++
  // Rule 7: a parent's trial end carries on to its children still in their trial.
  if (row.subscription_status === 'trialing' && updated.subscription_status === 'active') {
    for (const child of await store.childSubscriptions(tx, scope, row.id)) {
      if (child.subscription_status !== 'trialing') continue
      // An anchor that followed the child's trial end follows the new one; an explicit anchor stays.
      const schedule = stateOf(child)
      const derived = billingAnchor(schedule, child.trial_end!).getTime() === child.billing_anchor.getTime()
      // The trial was the child's current period: it ends now, so the next one is worked out from here.
      const changes = { trial_end: row.trial_end, current_period_end: row.trial_end, ...(derived && { billing_anchor: billingAnchor(schedule, row.trial_end!) }) }
      const ended = await updateRecord<store.SubscriptionRow>(tx, store.SUBSCRIPTIONS, scope, child.id, changes, { audit })
      await apply(tx, ended, now, audit, summary)
    }
  }
}

/**
 * A step that changes only the subscription's own row and events: no status change (which ends lines, releases
 * children or ends children's trials), not a child. Such steps of a page are applied together.
 */
const alone = (row: store.SubscriptionRow, step: Advance): boolean => !row.parent_subscription_id && !('subscription_status' in step.changes)

/** apply for a page of locked subscriptions: the steps that touch nothing else in one statement a scope, events in one more. */
async function applyPage(tx: Tx, rows: store.SubscriptionRow[], now: Date, audit: Audit, summary: LifecycleSummary): Promise<void> {
  const steps = rows.map((row) => ({ row, step: advance(stateOf(row), now) }))
  const together = new Map<string, { scope: Scope; steps: { row: store.SubscriptionRow; step: Advance }[] }>()
  for (const { row, step } of steps) {
    if (!step || !alone(row, step)) continue
    const key = `${row.tenant_id}/${row.environment_id}`
    if (!together.has(key)) together.set(key, { scope: scopeOf(row), steps: [] })
    together.get(key)!.steps.push({ row, step })
  }
  for (const { scope, steps: group } of together.values()) {
    const updated = await updateRecords<store.SubscriptionRow>(tx, store.SUBSCRIPTIONS, scope, audit, group.map(({ row, step }) => ({ id: row.id, fields: step.changes })))
    const events = group.flatMap(({ step }, k) => step.events.map((eventType) => ({ eventType, record: updated[k] })))
    await announceMany(tx, scope, store.SUBSCRIPTIONS, events)
    for (const { eventType } of events) summary.events[eventType] = (summary.events[eventType] ?? 0) + 1
    summary.advanced += group.length
  }
  // The others one by one, in the page's order: they may change the subscriptions after them.
  for (const { row, step } of steps) if (step && !alone(row, step)) await apply(tx, row, now, audit, summary)
}

/** Applies every transition due at `now`; returns what it did, for the job's summary. */
export async function advanceSubscriptions(deps: Deps, now: Date = deps.clock.now()): Promise<LifecycleSummary> {
  const summary: LifecycleSummary = { advanced: 0, events: {} }
  const audit: Audit = { by: 'system', at: now }
  for (;;) {
    const before = summary.advanced
    const n = await transaction(deps, async (tx) => {
      const due = await store.dueAt(tx, now, BATCH, inReach(tx, deps, 'subscriptions.customer_id'))
      await applyPage(tx, due, now, audit, summary)
      return due.length
    })
    // A full batch that moved nothing would come back the same: stop rather than spin.
    if (n < BATCH || summary.advanced === before) return summary
  }
}
