// Working a task. An import reads its file's records in order, BATCH at a time; each batch is written and then its
// checkpoint (processed_records) and row errors are stored in one transaction with it (customers, prices, features:
// a savepoint per record, so a refused record leaves the others) — a process stopped mid-batch loses that batch's
// writes with its checkpoint, and the next claim starts again after the checkpoint. Events are handed to intake
// (the port of intake.ts) before their checkpoint, each with an event_id — its own, else `<task id>-<row>` — so a
// batch sent again after a stop is dropped as duplicates by the pipeline. An export writes one file with the
// exports engine. A task runs where it is created (the API answers at once) and the worker's tasks job takes the
// ones whose process stopped.
import { AppError } from '../../core/errors.ts'
import type { Actor, Scope } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import type { Tx } from '../../infra/postgres.ts'
import { inTransaction, transaction } from '../records/service.ts'
import { writeExportFile, type ExportEntity } from '../exports/write.ts'
import { IMPORTERS, type ImportEntity } from './importers.ts'
import { eventIntake } from './intake.ts'
import { countRecords, importRecords, type ImportRecord } from './records.ts'
import { dropInput, importSource, TaskFailure } from './source.ts'
import * as store from './store.ts'
import { exportPath } from './files.ts'

/** Records per batch (and checkpoint); intake takes at most 1000 events at once. */
const BATCH = 500
/** A processing task with no heartbeat for this long was left by a stopped process: it is claimed again. */
const STALE_MS = 2 * 60_000

export interface RunOptions {
  /** The claim's time (default: the clock's): a later one takes over a task whose heartbeat is older than STALE_MS. */
  now?: Date
  batchSize?: number
  /** Stops as a killed process would, once the records up to this one are written and before their checkpoint (tests). */
  stopAfterRow?: number
}

/** The run ends without an outcome: stopped (a simulated crash) or no longer this run's task. */
class Interrupted extends Error {}

const actorOf = (task: store.TaskRow): Actor => ({ tenantId: task.tenant_id, environmentId: task.environment_id, keyId: task.created_by ?? 'system', roles: ['admin'] })

/** A refused record's errors by field: an AppError's details (or its message), anything else is the task's failure. */
function refusal(err: unknown): Record<string, string> {
  if (!(err instanceof AppError) || err.status >= 500) throw err
  const entries = Object.entries(err.details).filter(([k]) => k !== 'id')
  if (err.code === 'validation_error' && entries.length > 0) return Object.fromEntries(entries.map(([k, v]) => [k, typeof v === 'string' ? v : err.message]))
  return { [entries[0]?.[0] ?? 'row']: err.message }
}

const errorsOf = (row: number, fields: Record<string, string>): store.RowError[] => Object.entries(fields).map(([field, reason]) => ({ row, field, reason }))

interface BatchOutcome {
  successful: number
  errors: store.RowError[]
}

/**
 * Moves the checkpoint past the batch in `tx`, or ends the run when the task is no longer its own. A batch `stored`
 * already (events in intake) is counted even on a task just stopped by hand, then the run ends.
 */
async function advance(tx: Tx, deps: Deps, task: store.TaskRow, batch: ImportRecord[], outcome: BatchOutcome, stored = false): Promise<store.TaskRow> {
  const failedRows = new Set(outcome.errors.map((e) => e.row)).size
  const next = await store.checkpoint(tx, task.id, task.processed_records, { processed: batch[batch.length - 1].row, successful: outcome.successful, failed: failedRows, errors: outcome.errors }, deps.clock.now(), stored)
  if (!next) throw new Interrupted()
  return next
}

const stopsIn = (batch: ImportRecord[], options: RunOptions): boolean => options.stopAfterRow !== undefined && batch[batch.length - 1].row >= options.stopAfterRow

async function recordsBatch(deps: Deps, task: store.TaskRow, batch: ImportRecord[], options: RunOptions): Promise<store.TaskRow> {
  const write = IMPORTERS[task.entity_type as ImportEntity].write!
  const actor = actorOf(task)
  return transaction(deps, async (tx) => {
    const outcome: BatchOutcome = { successful: 0, errors: [] }
    for (const record of batch) {
      if (Object.keys(record.errors).length > 0) {
        outcome.errors.push(...errorsOf(record.row, record.errors))
        continue
      }
      try {
        await tx.savepoint((sp) => write(inTransaction(deps, sp as unknown as Tx), actor, record.value))
        outcome.successful++
      } catch (err) {
        outcome.errors.push(...errorsOf(record.row, refusal(err)))
      }
    }
    if (stopsIn(batch, options)) throw new Interrupted()
    return advance(tx, deps, task, batch, outcome)
  })
}

/** `events[3].event_name` → the batch's fourth event, field event_name. */
const INTAKE_FIELD = /^events\[(\d+)\]\.?(.*)$/

async function eventsBatch(deps: Deps, task: store.TaskRow, batch: ImportRecord[], options: RunOptions): Promise<store.TaskRow> {
  const outcome: BatchOutcome = { successful: 0, errors: [] }
  const readable = batch.filter((r) => {
    if (Object.keys(r.errors).length === 0) return true
    outcome.errors.push(...errorsOf(r.row, r.errors))
    return false
  })
  if (readable.length > 0) {
    const events = readable.map((r) => ({ ...r.value, event_id: r.value.event_id ?? `${task.id}-${r.row}` }))
    const bytes = readable.reduce((n, r) => n + r.bytes, 0)
    try {
      const result = await eventIntake()(deps, actorOf(task), events, bytes)
      for (const f of result.failed) outcome.errors.push(...errorsOf(readable[f.index].row, Object.fromEntries(Object.entries(f.details).map(([k, v]) => [k, String(v)]))))
      outcome.successful = readable.length - result.failed.length
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'validation_error') throw err
      // None was valid: intake names each one's fields as events[i].field.
      for (const [key, reason] of Object.entries(err.details)) {
        const m = INTAKE_FIELD.exec(key)
        if (m) outcome.errors.push({ row: readable[Number(m[1])].row, field: m[2] || 'row', reason: String(reason) })
      }
    }
  }
  if (stopsIn(batch, options)) throw new Interrupted()
  const next = await transaction(deps, (tx) => advance(tx, deps, task, batch, outcome, true))
  if (next.task_status !== 'PROCESSING') throw new Interrupted()
  return next
}

function summary(task: store.TaskRow): string | null {
  if (task.failed_records === 0) return null
  return `${task.failed_records} of ${task.processed_records} records refused; GET /v1/tasks/${task.id}/errors lists them by row`
}

async function runImport(deps: Deps, task: store.TaskRow, options: RunOptions): Promise<void> {
  const importer = IMPORTERS[task.entity_type as ImportEntity]
  const work = importer.write ? recordsBatch : eventsBatch
  const size = options.batchSize ?? BATCH
  // A first pass counts the records (progress has a total) and fails a broken file before any record is written.
  const text = await importSource(deps, task)
  if (task.total_records === null) await store.recordTotal(deps.sql, task.id, await countRecords(text(), task.file_type, importer.kinds), deps.clock.now())
  let batch: ImportRecord[] = []
  for await (const record of importRecords(text(), task.file_type, importer.kinds)) {
    if (record.row <= task.processed_records) continue
    batch.push(record)
    if (batch.length === size) {
      task = await work(deps, task, batch, options)
      batch = []
    }
  }
  if (batch.length > 0) task = await work(deps, task, batch, options)
  await store.complete(deps.sql, task.id, { error_summary: summary(task) }, deps.clock.now())
  await dropInput(deps, task.id)
}

const EXPORT_FORMAT = { CSV: 'csv', PARQUET: 'parquet' } as const

async function runExport(deps: Deps, task: store.TaskRow): Promise<void> {
  const scope: Scope = { tenantId: task.tenant_id, environmentId: task.environment_id }
  const format = EXPORT_FORMAT[task.file_type as 'CSV' | 'PARQUET']
  const spec = { entity_type: task.entity_type.toLowerCase() as ExportEntity, format, ...task.export_spec! }
  // Progress (and the heartbeat) at most once a second, one write at a time.
  let last = 0
  let writing: Promise<void> = Promise.resolve()
  const progress = (rows: number) => {
    const now = Date.now()
    if (now - last < 1000) return
    last = now
    writing = writing.then(() => deps.sql`UPDATE tasks SET processed_records = ${rows}, heartbeat_at = ${deps.clock.now()} WHERE id = ${task.id}`.then(() => {}), () => {})
  }
  const { rows, bytes } = await writeExportFile(deps, scope, spec, exportPath(deps, task), progress)
  await writing.catch(() => {})
  await store.recordFile(deps.sql, task.id, bytes, deps.clock.now())
  await store.complete(deps.sql, task.id, { total_records: rows, processed_records: rows, successful_records: rows, error_summary: null }, deps.clock.now())
}

/** Works the task if it is waiting (or was left processing by a stopped process); its failure is recorded on it. */
export async function runTask(deps: Deps, id: string, options: RunOptions = {}): Promise<void> {
  const now = options.now ?? deps.clock.now()
  const task = await store.claim(deps.sql, id, now, new Date(now.getTime() - STALE_MS))
  if (!task) return
  try {
    if (task.task_type === 'EXPORT') await runExport(deps, task)
    else await runImport(deps, task, options)
  } catch (err) {
    if (err instanceof Interrupted) return
    if (err instanceof AppError && err.code === 'service_unavailable') {
      await store.requeue(deps.sql, id, `waiting: ${err.message}`, deps.clock.now())
      return
    }
    if (!(err instanceof TaskFailure || err instanceof AppError)) deps.logger.error({ err, task_id: id }, 'task failed')
    await store.fail(deps.sql, id, (err as Error).message, deps.clock.now())
    await dropInput(deps, id)
  }
}

/** The worker's tasks job: tasks still waiting (their process stopped before starting them, or intake was down) or left processing. */
export async function runOpenTasks(deps: Deps): Promise<{ tasks: number }> {
  const now = deps.clock.now()
  const ids = await store.openTasks(deps.sql, new Date(now.getTime() - STALE_MS), 20)
  for (const id of ids) await runTask(deps, id)
  return { tasks: ids.length }
}
