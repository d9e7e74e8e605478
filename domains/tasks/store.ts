// The tasks and task_row_errors tables (sql/postgres/0800): claiming a task to work it, its checkpoint with the
// batch's row errors, and its outcome.
import type { Db } from '../../infra/postgres.ts'
import { decodeRow, type RecordRow, type RecordTable } from '../../infra/records.ts'

export const TASKS: RecordTable = { name: 'tasks', noun: 'task', prefix: 'task', counts: ['file_bytes'] }

export type TaskType = 'IMPORT' | 'EXPORT'
export type TaskStatus = 'PENDING' | 'PROCESSING' | 'COMPLETED' | 'FAILED'
export type FileType = 'CSV' | 'JSON' | 'PARQUET'

export interface ExportWindow {
  start_time: string
  end_time: string
  filters?: Record<string, unknown>
}

export interface TaskRow extends RecordRow {
  task_type: TaskType
  entity_type: string
  file_type: FileType
  file_url: string | null
  file_name: string | null
  file_content: string | null
  export_spec: ExportWindow | null
  scheduled_task_id: string | null
  task_status: TaskStatus
  total_records: number | null
  processed_records: number
  successful_records: number
  failed_records: number
  error_summary: string | null
  file_bytes: number | null
  started_at: Date | null
  completed_at: Date | null
  failed_at: Date | null
  heartbeat_at: Date | null
}

export interface RowError {
  row: number
  field: string
  reason: string
}

/** Takes a waiting task, or one left processing by a stopped process (no heartbeat since `staleBefore`), to work it. */
export async function claim(db: Db, id: string, now: Date, staleBefore: Date): Promise<TaskRow | undefined> {
  const [row] = await db`UPDATE tasks SET task_status = 'PROCESSING', started_at = COALESCE(started_at, ${now}), heartbeat_at = ${now}, error_summary = NULL
    WHERE id = ${id} AND status = 'published' AND (task_status = 'PENDING' OR (task_status = 'PROCESSING' AND heartbeat_at < ${staleBefore})) RETURNING *`
  return row ? decodeRow<TaskRow>(TASKS, row) : undefined
}

/** Tasks waiting, or left processing by a stopped process, oldest first. */
export async function openTasks(db: Db, staleBefore: Date, limit: number): Promise<string[]> {
  const rows = await db<{ id: string }[]>`SELECT id FROM tasks WHERE status = 'published'
    AND (task_status = 'PENDING' OR (task_status = 'PROCESSING' AND heartbeat_at < ${staleBefore})) ORDER BY created_at LIMIT ${limit}`
  return rows.map((r) => r.id)
}

export interface Checkpoint {
  processed: number
  successful: number
  failed: number
  errors: RowError[]
}

/**
 * Moves the checkpoint past a batch and records its row errors, in the caller's transaction (the one that wrote the
 * batch). Answers undefined when the task is no longer this run's to work: claimed again, or — unless the batch is
 * already stored elsewhere (`stored`: events in intake) and must be counted — set FAILED by hand.
 */
export async function checkpoint(db: Db, id: string, from: number, batch: Checkpoint, now: Date, stored = false): Promise<TaskRow | undefined> {
  const [row] = await db`UPDATE tasks SET processed_records = ${batch.processed}, successful_records = successful_records + ${batch.successful},
      failed_records = failed_records + ${batch.failed}, heartbeat_at = ${now}
    WHERE id = ${id} AND processed_records = ${from} AND (task_status = 'PROCESSING' OR (${stored} AND task_status = 'FAILED')) RETURNING *`
  if (!row) return undefined
  if (batch.errors.length > 0) {
    const values = batch.errors.map((e) => ({ task_id: id, row_number: e.row, field: e.field, reason: e.reason }))
    await db`INSERT INTO task_row_errors ${db(values)} ON CONFLICT DO NOTHING`
  }
  return decodeRow<TaskRow>(TASKS, row)
}

export async function recordTotal(db: Db, id: string, total: number, now: Date): Promise<void> {
  await db`UPDATE tasks SET total_records = ${total}, heartbeat_at = ${now} WHERE id = ${id}`
}

export async function recordFile(db: Db, id: string, bytes: number, now: Date): Promise<void> {
  await db`UPDATE tasks SET file_bytes = ${bytes}, heartbeat_at = ${now} WHERE id = ${id}`
}

export async function complete(db: Db, id: string, fields: { total_records?: number; processed_records?: number; successful_records?: number; error_summary: string | null }, now: Date): Promise<void> {
  await db`UPDATE tasks SET ${db({ ...fields, task_status: 'COMPLETED', completed_at: now, heartbeat_at: now, updated_at: now })}
    WHERE id = ${id} AND task_status = 'PROCESSING'`
}

export async function fail(db: Db, id: string, reason: string, now: Date): Promise<void> {
  await db`UPDATE tasks SET task_status = 'FAILED', error_summary = ${reason}, failed_at = ${now}, heartbeat_at = ${now}, updated_at = ${now}
    WHERE id = ${id} AND task_status = 'PROCESSING'`
}

/** Back to waiting (intake unavailable here): the worker's job takes it again, from its checkpoint. */
export async function requeue(db: Db, id: string, reason: string, now: Date): Promise<void> {
  await db`UPDATE tasks SET task_status = 'PENDING', error_summary = ${reason}, heartbeat_at = ${now} WHERE id = ${id} AND task_status = 'PROCESSING'`
}

/** An import's row errors in row order, a page at a time (the task is the caller's: checked before). */
export async function rowErrors(db: Db, id: string, limit: number, offset: number): Promise<{ rows: RowError[]; total: number }> {
  const rows = await db<RowError[]>`SELECT row_number AS row, field, reason FROM task_row_errors WHERE task_id = ${id}
    ORDER BY row_number, field LIMIT ${limit} OFFSET ${offset}`
  const [{ total }] = await db<{ total: string }[]>`SELECT count(*) AS total FROM task_row_errors WHERE task_id = ${id}`
  return { rows: [...rows], total: Number(total) }
}
