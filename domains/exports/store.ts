// Scheduled export tasks and their runs: the SQL. A window is planned once (the task row locked while its watermark
// moves, the automatic windows unique per task and start) and run under a lease.
import type { Window } from '../../core/export-windows.ts'
import { newId } from '../../core/ids.ts'
import type { Scope } from '../../core/scope.ts'
import type { Db } from '../../infra/postgres.ts'
import { filterSpec, type FilterSpec, type RecordRow, type RecordTable } from '../../infra/records.ts'
import type { ExportInterval } from '../../core/export-windows.ts'

export const TASKS: RecordTable = { name: 'scheduled_tasks', noun: 'scheduled task', prefix: 'stask' }

export const FILTERS: FilterSpec = filterSpec({ eq: { connection_id: 'connection_id', entity_type: 'entity_type', interval: 'interval', enabled: 'enabled' } })

export interface JobConfig {
  bucket?: string
  key_prefix?: string
  region?: string
  endpoint_url?: string
  use_path_style?: boolean
  compression?: 'none' | 'gzip'
  encryption?: string
  local_directory?: string
  format?: 'csv' | 'parquet'
  filters?: Record<string, unknown>
}

export interface TaskRow extends RecordRow {
  connection_id: string | null
  entity_type: string
  interval: ExportInterval
  enabled: boolean
  job_config: JobConfig
  encrypted_secret_data: string | null
  watermark: Date
}

type RunStatus = 'pending' | 'running' | 'completed' | 'failed'

export interface RunRow {
  id: string
  tenant_id: string
  environment_id: string
  scheduled_task_id: string
  mode: 'automatic' | 'custom'
  window_start: Date
  window_end: Date
  run_status: RunStatus
  attempts: number
  next_attempt_at: Date
  lease_token: string | null
  lease_until: Date | null
  row_count: string | null
  byte_count: string | null
  location: string | null
  error: string | null
  started_at: Date | null
  completed_at: Date | null
  created_at: Date
  updated_at: Date
}

/** The task's row locked for the transaction (its watermark about to move), if live. */
export async function lockTask(tx: Db, scope: Scope, id: string): Promise<TaskRow | undefined> {
  const [row] = await tx`SELECT * FROM scheduled_tasks WHERE id = ${id} AND tenant_id = ${scope.tenantId}
    AND environment_id = ${scope.environmentId} AND status = 'published' FOR UPDATE`
  return row as TaskRow | undefined
}

/** Enabled tasks whose next whole window ended `settleMs` or more before `now`, any tenant. */
export async function dueTasks(db: Db, now: Date, limit: number): Promise<TaskRow[]> {
  // The first window ends at most a day after the watermark (daily): a cheap bound, each task's windows are computed after.
  const rows = await db`SELECT * FROM scheduled_tasks WHERE enabled AND status = 'published' AND watermark < ${now}
    ORDER BY watermark LIMIT ${limit}`
  return rows as unknown as TaskRow[]
}

/** The runs of a locked task's windows, due at once (an automatic window already planned is not planned again). */
export async function planRuns(tx: Db, task: TaskRow, mode: RunRow['mode'], windows: Window[], now: Date): Promise<RunRow[]> {
  if (windows.length === 0) return []
  const values = windows.map((w) => ({
    id: newId('strun'),
    tenant_id: task.tenant_id,
    environment_id: task.environment_id,
    scheduled_task_id: task.id,
    mode,
    window_start: w.start,
    window_end: w.end,
    next_attempt_at: now,
    created_at: now,
    updated_at: now,
  }))
  return (await tx`INSERT INTO scheduled_task_runs ${tx(values)} ON CONFLICT DO NOTHING RETURNING *`) as unknown as RunRow[]
}

/** Moves a locked task's watermark to `to` (never back). */
export async function advanceWatermark(tx: Db, taskId: string, to: Date): Promise<void> {
  await tx`UPDATE scheduled_tasks SET watermark = GREATEST(watermark, ${to}) WHERE id = ${taskId}`
}

/**
 * Takes the next due run of an enabled task under a lease: a pending run whose attempt is due, or a running one
 * whose lease ran out (its process stopped). Two workers never take the same run (SKIP LOCKED, then the lease).
 */
export async function claimRun(db: Db, now: Date, leaseMs: number, token: string, taskId?: string): Promise<RunRow | undefined> {
  const [row] = await db`UPDATE scheduled_task_runs SET run_status = 'running', attempts = attempts + 1, lease_token = ${token},
      lease_until = ${new Date(now.getTime() + leaseMs)}, started_at = ${now}, updated_at = ${now}
    WHERE id = (
      SELECT r.id FROM scheduled_task_runs r JOIN scheduled_tasks t ON t.id = r.scheduled_task_id
      WHERE t.enabled AND t.status = 'published' ${taskId ? db`AND t.id = ${taskId}` : db``}
        AND ((r.run_status = 'pending' AND r.next_attempt_at <= ${now}) OR (r.run_status = 'running' AND r.lease_until <= ${now}))
      ORDER BY r.next_attempt_at, r.window_start LIMIT 1 FOR UPDATE OF r SKIP LOCKED)
    RETURNING *`
  return row as RunRow | undefined
}

export async function taskById(db: Db, id: string): Promise<TaskRow | undefined> {
  const [row] = await db`SELECT * FROM scheduled_tasks WHERE id = ${id}`
  return row as TaskRow | undefined
}

/** Records a run's outcome, if this worker still holds its lease (else another took it over: its outcome stands). */
export async function finishRun(db: Db, run: RunRow, now: Date, outcome: { done: { rows: number; bytes: number; location: string } } | { error: string; retryAt: Date | null }): Promise<boolean> {
  const rows =
    'done' in outcome
      ? await db`UPDATE scheduled_task_runs SET run_status = 'completed', row_count = ${outcome.done.rows}, byte_count = ${outcome.done.bytes},
          location = ${outcome.done.location}, error = NULL, completed_at = ${now}, lease_token = NULL, lease_until = NULL, updated_at = ${now}
          WHERE id = ${run.id} AND lease_token = ${run.lease_token} RETURNING id`
      : await db`UPDATE scheduled_task_runs SET run_status = ${outcome.retryAt ? 'pending' : 'failed'}, error = ${outcome.error},
          next_attempt_at = ${outcome.retryAt ?? run.next_attempt_at}, lease_token = NULL, lease_until = NULL, updated_at = ${now}
          WHERE id = ${run.id} AND lease_token = ${run.lease_token} RETURNING id`
  return rows.length === 1
}

/** A task's latest runs, newest window first. */
export async function runsOf(db: Db, scope: Scope, taskId: string, limit: number): Promise<RunRow[]> {
  const rows = await db`SELECT * FROM scheduled_task_runs WHERE scheduled_task_id = ${taskId} AND tenant_id = ${scope.tenantId}
    AND environment_id = ${scope.environmentId} ORDER BY window_start DESC, created_at DESC LIMIT ${limit}`
  return rows as unknown as RunRow[]
}

/** The scope's tasks (not deleted) that take their credentials from the connection, at most `limit`. */
export async function tasksOfConnection(db: Db, scope: Scope, connectionId: string, limit: number): Promise<string[]> {
  const rows = await db`SELECT id FROM scheduled_tasks WHERE connection_id = ${connectionId} AND tenant_id = ${scope.tenantId}
    AND environment_id = ${scope.environmentId} AND status <> 'deleted' ORDER BY created_at LIMIT ${limit}`
  return rows.map((r) => r.id as string)
}
