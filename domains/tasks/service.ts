// Tasks (/v1/tasks, Flexprice's shape): an import of events, customers, prices or features from a CSV or JSON Lines
// file (in the request, or at file_url), or an export of one entity over a window to a file served by
// GET /v1/tasks/{id}/download. Creating one records it; run.ts works it (startTask at once, or the worker's job).
import { stat } from 'node:fs/promises'
import { Readable } from 'node:stream'
import { invalidOperation, notFound, validationError } from '../../core/errors.ts'
import { page, type ListRequest } from '../../core/list.ts'
import type { Actor } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import { insertRecord, listRecords, requireRecord, updateRecord, type Fragment } from '../../infra/records.ts'
import { auditOf, transaction } from '../records/service.ts'
import { toWire } from '../records/wire.ts'
import { exportFileOf, exportPath } from './files.ts'
import { IMPORTERS, type ImportEntity } from './importers.ts'
import { countRecords } from './records.ts'
import { runTask } from './run.ts'
import { checkFileUrl, TaskFailure } from './source.ts'
import * as store from './store.ts'

const IMPORT_ENTITIES: readonly ImportEntity[] = ['EVENTS', 'CUSTOMERS', 'PRICES', 'FEATURES']
const EXPORT_ENTITIES = ['EVENTS', 'USAGE', 'INVOICES', 'CREDIT_NOTES', 'WALLET_TRANSACTIONS', 'ANALYTICS'] as const
const IMPORT_FILES = ['CSV', 'JSON'] as const
const EXPORT_FILES = ['CSV', 'PARQUET'] as const

export interface CreateTaskInput {
  task_type: store.TaskType
  entity_type: string
  file_type: string
  file_url?: string
  /** The import file itself, instead of file_url. */
  file?: string
  file_name?: string
  metadata?: Record<string, string>
  /** EXPORT: rows in [start_time, end_time); default everything up to now. */
  start_time?: Date
  end_time?: Date
  filters?: Record<string, unknown>
}

const ROW_ERRORS_SHOWN = 100

/** A task as answered: Flexprice's fields, the export window, and for an import its first row errors. */
function viewOf(task: store.TaskRow, rowErrors?: store.RowError[]): { id: string; [field: string]: unknown } {
  const { file_content: _c, export_spec, heartbeat_at: _h, ...rest } = task
  return toWire({ ...rest, ...export_spec, workflow_id: task.id, ...(rowErrors && task.task_type === 'IMPORT' && { row_errors: rowErrors }) }) as { id: string }
}

const oneOf = (field: string, value: string, allowed: readonly string[], what: string): string => {
  const upper = value.toUpperCase()
  if (!allowed.includes(upper)) throw validationError(field, `must be one of ${allowed.join(', ')} for ${what}`)
  return upper
}

async function importFields(input: CreateTaskInput) {
  const entity_type = oneOf('entity_type', input.entity_type, IMPORT_ENTITIES, 'an import') as ImportEntity
  const file_type = oneOf('file_type', input.file_type === 'JSONL' ? 'JSON' : input.file_type, IMPORT_FILES, 'an import (JSON: one object per line)') as store.FileType
  const url = input.file_url || undefined
  if (url && input.file !== undefined) throw validationError('file', 'give file_url or file, not both')
  if (!url && input.file === undefined) throw validationError('file_url', 'is required (or the file itself as file)')
  if (url) {
    const refused = checkFileUrl(url)
    if (refused) throw validationError('file_url', refused)
    return { entity_type, file_type, file_url: url, file_content: null, export_spec: null }
  }
  // A file in the request is read now: one that cannot be read is refused, and the task knows its total.
  const total_records = await countRecords(Readable.from([input.file!]), file_type, IMPORTERS[entity_type].kinds).catch((err: unknown) => {
    throw err instanceof TaskFailure ? validationError('file', err.message) : err
  })
  return { entity_type, file_type, file_url: null, file_content: input.file!, export_spec: null, total_records }
}

function exportFields(deps: Deps, input: CreateTaskInput) {
  const entity_type = oneOf('entity_type', input.entity_type, EXPORT_ENTITIES, 'an export')
  const file_type = oneOf('file_type', input.file_type, EXPORT_FILES, 'an export')
  if (input.file_url) throw validationError('file_url', 'an export writes its own file: leave file_url out and download it from GET /v1/tasks/{id}/download')
  if (input.file !== undefined) throw validationError('file', 'an export takes no file')
  const start = input.start_time ?? new Date(0)
  const end = input.end_time ?? deps.clock.now()
  if (end <= start) throw validationError('end_time', 'must be after start_time')
  const export_spec: store.ExportWindow = { start_time: start.toISOString(), end_time: end.toISOString(), ...(input.filters && { filters: input.filters }) }
  return { entity_type, file_type, file_url: null, file_content: null, export_spec }
}

/** Records the task, PENDING; startTask (or the worker) works it. */
export async function createTask(deps: Deps, actor: Actor, input: CreateTaskInput) {
  const fields = input.task_type === 'IMPORT' ? await importFields(input) : exportFields(deps, input)
  const row = await transaction(deps, (tx) =>
    insertRecord<store.TaskRow>(tx, store.TASKS, actor, auditOf(deps, actor), {
      ...fields,
      task_type: input.task_type,
      file_name: input.file_name ?? null,
      metadata: input.metadata ?? {},
      task_status: 'PENDING',
    }),
  )
  return viewOf(row)
}

/** Works the task in this process now; the request that started it does not wait. */
export function startTask(deps: Deps, id: string): void {
  runTask(deps, id).catch((err) => deps.logger.error({ err, task_id: id }, 'task could not record its outcome'))
}

const requireTask = (deps: Deps, actor: Actor, id: string): Promise<store.TaskRow> => requireRecord<store.TaskRow>(deps.sql, store.TASKS, actor, id)

export async function getTask(deps: Deps, actor: Actor, id: string) {
  const task = await requireTask(deps, actor, id)
  return viewOf(task, (await store.rowErrors(deps.sql, task.id, ROW_ERRORS_SHOWN, 0)).rows)
}

/** An import's refused records, by row. */
export async function taskErrors(deps: Deps, actor: Actor, id: string, params: { limit: number; offset: number }) {
  const task = await requireTask(deps, actor, id)
  const { rows, total } = await store.rowErrors(deps.sql, task.id, params.limit, params.offset)
  return page(rows, total, params)
}

export async function listTasks(deps: Deps, actor: Actor, { params, filters }: ListRequest) {
  const f = filters as Record<string, string | undefined>
  const where: Fragment[] = []
  for (const column of ['task_type', 'task_status', 'created_by', 'scheduled_task_id'] as const) if (f[column]) where.push(deps.sql`${deps.sql(column)} = ${f[column]!}`)
  if (f.entity_type) where.push(deps.sql`entity_type = ${f.entity_type.toUpperCase()}`)
  if (f.start_time) where.push(deps.sql`created_at >= ${new Date(f.start_time)}`)
  if (f.end_time) where.push(deps.sql`created_at < ${new Date(f.end_time)}`)
  const { rows, total } = await listRecords<store.TaskRow>(deps.sql, store.TASKS, actor, params, where)
  return page(rows.map((r) => viewOf(r)), total, params)
}

/**
 * PUT /v1/tasks/{id}/status: FAILED stops a waiting or running task (a running one at its next checkpoint: the batch
 * in hand undone, or counted when it is events already in intake); PENDING runs a failed one again from its
 * checkpoint. Answers whether the task must be started.
 */
export async function updateTaskStatus(deps: Deps, actor: Actor, id: string, to: store.TaskStatus): Promise<{ message: string; start: boolean }> {
  return transaction(deps, async (tx) => {
    const [locked] = await tx`SELECT task_status FROM tasks WHERE id = ${id} AND tenant_id = ${actor.tenantId} AND environment_id = ${actor.environmentId} AND status = 'published' FOR UPDATE`
    if (!locked) throw notFound('task', id)
    const from = locked.task_status as store.TaskStatus
    if (from === to) return { message: `task ${id} is already ${to}`, start: false }
    const audit = auditOf(deps, actor)
    if (to === 'FAILED' && (from === 'PENDING' || from === 'PROCESSING')) {
      await updateRecord(tx, store.TASKS, actor, id, { task_status: 'FAILED', failed_at: audit.at, error_summary: `stopped by ${actor.keyId}` }, { audit })
      return { message: `task ${id} stopped`, start: false }
    }
    if (to === 'PENDING' && from === 'FAILED') {
      await updateRecord(tx, store.TASKS, actor, id, { task_status: 'PENDING', failed_at: null, error_summary: null }, { audit })
      return { message: `task ${id} runs again from its checkpoint`, start: true }
    }
    throw invalidOperation(`a ${from} task cannot be set ${to}: FAILED stops a PENDING or PROCESSING task, PENDING runs a FAILED one again`, { task_status: to, current: from })
  })
}

/** GET /v1/tasks/result (Flexprice's workflow result): the task's outcome in words. */
export async function taskResult(deps: Deps, actor: Actor, workflowId: string) {
  const t = await requireTask(deps, actor, workflowId)
  const counts = `${t.processed_records}${t.total_records === null ? '' : ` of ${t.total_records}`} records processed, ${t.successful_records} succeeded, ${t.failed_records} failed`
  return { workflow_id: t.id, run_id: t.id, task_status: t.task_status, message: `${t.task_type} of ${t.entity_type} ${t.task_status}: ${counts}${t.error_summary ? ` (${t.error_summary})` : ''}` }
}

/** A completed export's file: where it is, its type and the name to save it as. */
export async function exportFile(deps: Deps, actor: Actor, id: string): Promise<{ path: string; contentType: string; fileName: string; bytes: number }> {
  const task = await requireTask(deps, actor, id)
  if (task.task_type !== 'EXPORT') throw invalidOperation(`task ${id} is an import: only an export has a file to download`, { id })
  if (task.task_status !== 'COMPLETED') throw invalidOperation(`task ${id} is ${task.task_status}: its file is ready once it is COMPLETED`, { id, task_status: task.task_status })
  const path = exportPath(deps, task)
  const found = await stat(path).catch(() => undefined)
  if (!found) throw notFound('export file of task', id)
  const { extension, contentType } = exportFileOf(task)
  return { path, contentType, fileName: task.file_name ?? `${task.entity_type.toLowerCase()}-${task.id}.${extension}`, bytes: found.size }
}
