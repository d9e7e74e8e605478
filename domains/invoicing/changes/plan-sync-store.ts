// The plan_sync_runs and plan_sync_changes tables (sql/postgres/0701) and the subscriptions a run walks.
import type { Scope } from '../../../core/scope.ts'
import type { Db } from '../../../infra/postgres.ts'
import { decodeRow, type RecordRow, type RecordTable } from '../../../infra/records.ts'
import { SUBSCRIPTIONS, type SubscriptionRow } from '../../subscriptions/store.ts'

export const RUNS: RecordTable = { name: 'plan_sync_runs', noun: 'plan sync run', prefix: 'plansync' }
export const CHANGES: RecordTable = { name: 'plan_sync_changes', noun: 'plan sync change', prefix: 'plansyncchg' }

export interface RunRow extends RecordRow {
  plan_id: string
  change_at: 'immediate' | 'end_of_period'
  proration_behavior: 'create_prorations' | 'none'
  run_status: 'pending' | 'running' | 'completed' | 'failed'
  total: number
  processed: number
  moved: number
  skipped: number
  failed: number
  cursor: string
  started_at: Date | null
  finished_at: Date | null
}

export interface LineRef {
  line_item_id: string
  price_id: string
  quantity: string
}

export interface ChangeRow extends RecordRow {
  run_id: string
  subscription_id: string
  outcome: 'moved' | 'skipped' | 'failed'
  reason: string | null
  effective_date: Date | null
  ended: LineRef[]
  started: LineRef[]
}

const LIVE = ['not_started', 'trialing', 'active', 'incomplete']

/** The plan's live subscriptions (drafts bill nothing; cancelled ones are done), counted when a run starts. */
export async function countOnPlan(db: Db, scope: Scope, planId: string): Promise<number> {
  const [{ n }] = await db<{ n: number }[]>`SELECT count(*)::int AS n FROM subscriptions
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND plan_id = ${planId}
      AND subscription_status = ANY(${LIVE}::text[]) AND status = 'published'`
  return n
}

/** The next of the plan's live subscriptions after `cursor`, in id order. */
export async function nextOnPlan(db: Db, scope: Scope, planId: string, cursor: string): Promise<SubscriptionRow | undefined> {
  const [row] = await db`SELECT * FROM subscriptions
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND plan_id = ${planId}
      AND subscription_status = ANY(${LIVE}::text[]) AND status = 'published' AND id > ${cursor}
    ORDER BY id LIMIT 1`
  return row ? decodeRow<SubscriptionRow>(SUBSCRIPTIONS, row) : undefined
}

/** Runs of every scope not finished yet, oldest first. */
export async function openRuns(db: Db): Promise<RunRow[]> {
  const rows = await db`SELECT * FROM plan_sync_runs WHERE run_status IN ('pending', 'running') AND status = 'published' ORDER BY created_at, id`
  return rows.map((row) => decodeRow<RunRow>(RUNS, row))
}

/** Whether the run already recorded this subscription (a resumed run moves nobody twice). */
export async function recorded(db: Db, runId: string, subscriptionId: string): Promise<boolean> {
  const [row] = await db`SELECT 1 FROM plan_sync_changes WHERE run_id = ${runId} AND subscription_id = ${subscriptionId}`
  return row !== undefined
}
