// The subscription_schedules table (sql/postgres/0700): plan changes waiting for the end of a period.
import type { ProrationBehavior } from '../../../core/billing/cycle.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Db } from '../../../infra/postgres.ts'
import { decodeRow, type Fragment, type RecordRow, type RecordTable } from '../../../infra/records.ts'

export const SCHEDULES: RecordTable = { name: 'subscription_schedules', noun: 'subscription schedule', prefix: 'sched' }

/** What a scheduled plan change wrote when it was asked, so that cancelling it can undo exactly that. */
export interface ScheduleConfiguration {
  target_plan_id: string
  proration_behavior: ProrationBehavior
  /** The old plan's line items it ended at scheduled_at, with the end each had before. */
  ended_line_items: { id: string; end_date: string | null; end_proration_behavior: ProrationBehavior | null }[]
  created_line_item_ids: string[]
}

export interface ScheduleRow extends RecordRow {
  subscription_id: string
  schedule_type: 'plan_change'
  schedule_status: 'pending' | 'executed' | 'cancelled' | 'failed'
  scheduled_at: Date
  configuration: ScheduleConfiguration
  execution_result: Record<string, unknown> | null
  executed_at: Date | null
  cancelled_at: Date | null
  error_message: string | null
}

/** The pending plan changes of some subscriptions (at most one each). */
export async function pendingIn(db: Db, scope: Scope, subscriptionIds: string[]): Promise<ScheduleRow[]> {
  if (subscriptionIds.length === 0) return []
  const rows = await db`SELECT * FROM subscription_schedules
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND subscription_id = ANY(${subscriptionIds}::text[])
      AND schedule_status = 'pending' AND status = 'published'`
  return rows.map((row) => decodeRow<ScheduleRow>(SCHEDULES, row))
}

/** The pending plan change of a subscription, if any. */
export const pendingOf = async (db: Db, scope: Scope, subscriptionId: string): Promise<ScheduleRow | undefined> => (await pendingIn(db, scope, [subscriptionId]))[0]

/** Pending schedules of every scope due by `now`, locked for the caller's transaction; ones another worker holds are skipped. */
/** `reach` is a condition on subscriptions.customer_id (domains/customers/reach.ts). */
export async function dueAt(db: Db, now: Date, limit: number, reach: Fragment): Promise<ScheduleRow[]> {
  const rows = await db`SELECT * FROM subscription_schedules
    WHERE schedule_status = 'pending' AND status = 'published' AND scheduled_at <= ${now}
      AND subscription_id IN (SELECT subscriptions.id FROM subscriptions WHERE ${reach})
    ORDER BY scheduled_at, id LIMIT ${limit} FOR UPDATE SKIP LOCKED`
  return rows.map((row) => decodeRow<ScheduleRow>(SCHEDULES, row))
}
