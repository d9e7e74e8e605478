// Subscription schedules (Flexprice's listAllSubscriptionSchedules, getSubscriptionSchedule,
// listSubscriptionSchedules, cancelSubscriptionSchedule): the plan changes asked for the end of a period.
// Cancelling a pending one undoes the line items it wrote; the worker applies due ones (applyDueSchedules).
import { invalidOperation, validationError } from '../../../core/errors.ts'
import { DAY_MS } from '../../../core/periods.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Tx } from '../../../infra/postgres.ts'
import { deleteRecord, listRecords, requireRecord, updateRecord, type Audit } from '../../../infra/records.ts'
import { announce, auditOf, referenced, transaction } from '../../records/service.ts'
import { inReach } from '../../customers/reach.ts'
import { toWire } from '../../records/wire.ts'
import { lockSubscription, requireSubscription, viewOf } from '../../subscriptions/read.ts'
import * as store from '../../subscriptions/store.ts'
import { movePlan } from './plan-change.ts'
import { dueAt, pendingIn, SCHEDULES, type ScheduleRow } from './schedules-store.ts'

/** A schedule as Flexprice answers it: `status` is the schedule's (pending, executed, cancelled, failed). */
function viewOfSchedule(row: ScheduleRow, now: Date) {
  const { schedule_status, status: _record, tenant_id: _t, environment_id: _e, ...rest } = row
  const pending = schedule_status === 'pending'
  return toWire({
    ...rest,
    status: schedule_status,
    can_be_cancelled: pending,
    days_until_execution: pending ? Math.max(0, Math.ceil((row.scheduled_at.getTime() - now.getTime()) / DAY_MS)) : 0,
  })
}

export interface ScheduleQuery {
  subscription_id?: string
  pending_only?: boolean
  limit?: number
  offset?: number
}

/** Flexprice's { schedules, count }: the environment's (or one subscription's) schedules, soonest first. */
export async function listSchedules(deps: Deps, actor: Actor, query: ScheduleQuery) {
  if (query.subscription_id) await requireSubscription(deps.sql, actor, query.subscription_id)
  const where = [
    ...(query.subscription_id ? [deps.sql`subscription_id = ${query.subscription_id}`] : []),
    ...(query.pending_only ? [deps.sql`schedule_status = 'pending'`] : []),
  ]
  const params = { limit: query.limit ?? 50, offset: query.offset ?? 0, sort: 'scheduled_at', order: 'asc' as const, status: 'published' as const, metadata: {} }
  const { rows, total } = await listRecords<ScheduleRow>(deps.sql, SCHEDULES, actor, params, where)
  const now = deps.clock.now()
  return { schedules: rows.map((r) => viewOfSchedule(r, now)), count: total }
}

/** Each subscription's pending plan change as answered on the subscription (scheduled_plan_change), by subscription id. */
export async function pendingPlanChanges(deps: Deps, actor: Actor, subscriptionIds: string[]): Promise<Map<string, ReturnType<typeof viewOfSchedule>>> {
  const now = deps.clock.now()
  return new Map((await pendingIn(deps.sql, actor, subscriptionIds)).map((r) => [r.subscription_id, viewOfSchedule(r, now)]))
}

export async function getSchedule(deps: Deps, actor: Actor, id: string) {
  return viewOfSchedule(await requireRecord<ScheduleRow>(deps.sql, SCHEDULES, actor, id, { published: true }), deps.clock.now())
}

/** Puts back the line items a pending plan change wrote: the old plan's keep running, the target plan's go. */
async function undoLines(tx: Tx, scope: Scope, audit: Audit, schedule: ScheduleRow): Promise<void> {
  const lines = new Map((await store.childrenOf<store.LineItemRow>(tx, store.LINE_ITEMS, scope, [schedule.subscription_id])).map((l) => [l.id, l]))
  for (const ended of schedule.configuration.ended_line_items) {
    // A line ended since by something else (a cancellation) keeps that end.
    if (lines.get(ended.id)?.end_date?.getTime() !== schedule.scheduled_at.getTime()) continue
    await updateRecord(tx, store.LINE_ITEMS, scope, ended.id, { end_date: ended.end_date ? new Date(ended.end_date) : null, end_proration_behavior: ended.end_proration_behavior }, { audit })
  }
  for (const id of schedule.configuration.created_line_item_ids) if (lines.has(id)) await deleteRecord(tx, store.LINE_ITEMS, scope, id, audit)
}

/** POST /v1/subscriptions/schedules/{id}/cancel: a pending change is withdrawn; one applied or withdrawn already is refused. */
export async function cancelSchedule(deps: Deps, actor: Actor, id: string, body: { subscription_id?: string; schedule_type?: string } = {}) {
  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    const found = await requireRecord<ScheduleRow>(tx, SCHEDULES, actor, id, { published: true })
    if (body.subscription_id) await referenced('subscription_id', requireSubscription(tx, actor, body.subscription_id))
    if (body.subscription_id && body.subscription_id !== found.subscription_id) throw validationError('subscription_id', `schedule ${id} belongs to subscription ${found.subscription_id}`)
    if (body.schedule_type && body.schedule_type !== found.schedule_type) throw validationError('schedule_type', `schedule ${id} is a ${found.schedule_type}`)
    const sub = await lockSubscription(tx, actor, found.subscription_id)
    const schedule = await requireRecord<ScheduleRow>(tx, SCHEDULES, actor, id)
    if (schedule.schedule_status !== 'pending') throw invalidOperation(`schedule ${id} is ${schedule.schedule_status}; only a pending schedule can be cancelled`, { schedule_id: id, status: schedule.schedule_status })
    await undoLines(tx, actor, audit, schedule)
    const row = await updateRecord<ScheduleRow>(tx, SCHEDULES, actor, id, { schedule_status: 'cancelled', cancelled_at: audit.at }, { audit })
    const announced = { ...(await viewOf(tx, actor, sub)), schedule: viewOfSchedule(row, audit.at) }
    await announce(tx, actor, 'subscription.updated', store.SUBSCRIPTIONS, announced)
    return { message: `schedule ${id} cancelled`, status: 'cancelled', schedule: viewOfSchedule(row, audit.at) }
  })
}

const scopeOf = (row: ScheduleRow): Scope => ({ tenantId: row.tenant_id, environmentId: row.environment_id })

/**
 * Applies one due schedule: the subscription moves to the target plan and subscription.updated is announced;
 * a subscription cancelled meanwhile takes no change (the schedule is cancelled, saying why).
 */
async function applyOne(tx: Tx, schedule: ScheduleRow, audit: Audit): Promise<'executed' | 'cancelled'> {
  const scope = scopeOf(schedule)
  const sub = await lockSubscription(tx, scope, schedule.subscription_id)
  if (sub.subscription_status === 'cancelled' || (sub.cancel_at && sub.cancel_at <= schedule.scheduled_at)) {
    await updateRecord(tx, SCHEDULES, scope, schedule.id, { schedule_status: 'cancelled', cancelled_at: audit.at, error_message: `subscription ${sub.id} was cancelled before the change applied` }, { audit })
    return 'cancelled'
  }
  const row = await movePlan(tx, scope, audit, sub, schedule)
  const result = { previous_plan_id: sub.plan_id, plan_id: row.plan_id }
  const done = await updateRecord<ScheduleRow>(tx, SCHEDULES, scope, schedule.id, { schedule_status: 'executed', executed_at: audit.at, execution_result: result }, { audit })
  const announced = { ...(await viewOf(tx, scope, row)), schedule: viewOfSchedule(done, audit.at) }
  await announce(tx, scope, 'subscription.updated', store.SUBSCRIPTIONS, announced)
  return 'executed'
}

/** The subscription-schedules job: every pending plan change due by `now`, oldest first, each in its own transaction. */
export async function applyDueSchedules(deps: Deps, now: Date = deps.clock.now()): Promise<{ executed: number; cancelled: number; failed: number }> {
  const audit: Audit = { by: 'system', at: now }
  const summary = { executed: 0, cancelled: 0, failed: 0 }
  const failed = new Set<string>()
  for (;;) {
    let taken: ScheduleRow | undefined
    try {
      const outcome = await transaction(deps, async (tx) => {
        taken = (await dueAt(tx, now, failed.size + 1, inReach(tx, deps, 'subscriptions.customer_id'))).find((s) => !failed.has(s.id))
        return taken ? applyOne(tx, taken, audit) : null
      })
      if (!outcome) return summary
      summary[outcome]++
    } catch (err) {
      if (!taken) throw err
      const schedule = taken
      // Recorded in a transaction of its own: the failed one rolled back.
      deps.logger.error({ err, schedule: schedule.id }, 'scheduled plan change failed')
      await transaction(deps, (tx) => updateRecord(tx, SCHEDULES, scopeOf(schedule), schedule.id, { schedule_status: 'failed', error_message: (err as Error).message }, { audit }))
      failed.add(schedule.id)
      summary.failed++
    }
  }
}
