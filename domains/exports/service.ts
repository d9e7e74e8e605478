// Scheduled exports (Flexprice's scheduled tasks, /v1/tasks/scheduled): a task exports one entity every interval to
// an S3-compatible bucket or a directory under DATA_DIR/exports, as CSV or Parquet; its bucket credentials are
// sealed on the task, or those of the s3 connection it names (connection_id), read at each run. A task's windows come one after another from its watermark; runs.ts plans and runs them.
import { AppError, invalidOperation, validationError } from '../../core/errors.ts'
import { EXPORT_INTERVALS, splitByDay, windowStartOf, windowsFrom, type ExportInterval } from '../../core/export-windows.ts'
import type { ListRequest, Page } from '../../core/list.ts'
import type { Actor, Scope } from '../../core/scope.ts'
import { newId } from '../../core/ids.ts'
import type { Deps } from '../../infra/deps.ts'
import type { Db } from '../../infra/postgres.ts'
import { seal } from '../../infra/secrets.ts'
import { recordService } from '../records/crud.ts'
import { transaction, within } from '../records/service.ts'
import { connectionCredentials } from './connection-credentials.ts'
import { runTaskNow } from './runs.ts'
import * as store from './store.ts'
import { TASK_ENTITIES } from './task-entities.ts'
import { checked, EXPORT_FORMATS } from './write.ts'

export const FILTERS = store.FILTERS

interface Credentials {
  access_key_id?: string
  secret_access_key?: string
  session_token?: string
}

export interface CreateScheduledTaskInput {
  connection_id?: string
  entity_type: string
  interval: string
  enabled?: boolean
  job_config: store.JobConfig & Credentials
  /** The first window's start (a backfill); default the start of the current window. */
  start_time?: string
  metadata?: Record<string, string>
}

export interface UpdateScheduledTaskInput {
  enabled?: boolean
  version?: number
}

/** A task as the API shows it: no credentials, whether it holds some of its own; `watermark` is where its next window starts. */
export type ScheduledTaskView = Omit<store.TaskRow, 'encrypted_secret_data'> & {
  has_credentials: boolean
  runs?: RunView[]
}

type RunView = Omit<store.RunRow, 'tenant_id' | 'environment_id' | 'lease_token' | 'row_count' | 'byte_count'> & { row_count: number | null; byte_count: number | null }

const view = (row: store.TaskRow): ScheduledTaskView => {
  const { encrypted_secret_data, ...rest } = row
  return { ...rest, has_credentials: encrypted_secret_data !== null }
}

const runView = (r: store.RunRow): RunView => {
  const { tenant_id: _t, environment_id: _e, lease_token: _l, row_count, byte_count, ...rest } = r
  return { ...rest, row_count: row_count === null ? null : Number(row_count), byte_count: byte_count === null ? null : Number(byte_count) }
}

/** A directory under DATA_DIR/exports: relative, no `..`, so an API key cannot write elsewhere on the host. */
function localDirectory(dir: string): string {
  const parts = dir.split('/').filter((p) => p !== '' && p !== '.')
  if (dir.startsWith('/') || parts.length === 0 || parts.some((p) => p === '..' || p.includes('\\'))) {
    throw validationError('job_config.local_directory', 'must be a relative path under DATA_DIR/exports without ..')
  }
  return parts.join('/')
}

/** The task's fields checked; the credentials sealed for the task's id (given here so the seal names it). */
async function checkCreate(deps: Deps, scope: Scope, input: CreateScheduledTaskInput): Promise<Record<string, unknown>> {
  const { access_key_id, secret_access_key, session_token, ...config } = input.job_config
  const mapped = TASK_ENTITIES[input.entity_type]
  if (!mapped) throw validationError('entity_type', `must be one of ${Object.keys(TASK_ENTITIES).join(', ')}`)
  if (!(EXPORT_INTERVALS as readonly string[]).includes(input.interval)) {
    throw validationError('interval', `${input.interval} is not supported: Flexprice's custom interval carries no schedule to follow; choose ${EXPORT_INTERVALS.join(', ')}`)
  }
  const format = config.format ?? 'csv'
  if (!EXPORT_FORMATS.includes(format)) throw validationError('job_config.format', `must be one of ${EXPORT_FORMATS.join(', ')}`)
  if (config.compression === 'gzip' && format === 'parquet') throw validationError('job_config.compression', 'gzip applies to csv files; Parquet compresses its own pages (Snappy)')
  if ((config.bucket === undefined) === (config.local_directory === undefined)) throw validationError('job_config.bucket', 'give a bucket or a local_directory, one of the two')
  if (config.local_directory !== undefined) {
    if (access_key_id || secret_access_key) throw validationError('job_config.access_key_id', 'credentials go with a bucket, not a local directory')
    if (input.connection_id !== undefined) throw validationError('connection_id', 'a connection holds bucket credentials: it goes with a bucket, not a local directory')
    config.local_directory = localDirectory(config.local_directory)
  } else if (input.connection_id !== undefined) {
    if (access_key_id || secret_access_key || session_token) throw validationError('job_config.access_key_id', 'the credentials come from connection_id: give them there or here, not both')
    // Found now so a wrong id fails here, not at the first run; read again at every run.
    await connectionCredentials()(deps, scope, input.connection_id)
  } else {
    if (!access_key_id) throw validationError('job_config.access_key_id', 'is required with a bucket (or name an s3 connection in connection_id)')
    if (!secret_access_key) throw validationError('job_config.secret_access_key', 'is required with a bucket')
    if (config.endpoint_url !== undefined && !/^https?:\/\/[^/]+/.test(config.endpoint_url)) throw validationError('job_config.endpoint_url', 'must be an http(s) URL')
  }
  // The filters checked as the engine will check them at each run.
  await within('job_config', () => checked({ entity_type: mapped.entity, format, start_time: '2000-01-01T00:00:00Z', end_time: '2000-01-02T00:00:00Z', filters: { ...config.filters, ...mapped.filters } }))
  const start = input.start_time === undefined ? deps.clock.now() : new Date(input.start_time)
  if (Number.isNaN(start.getTime())) throw validationError('start_time', 'must be an ISO 8601 date-time')
  const id = newId(store.TASKS.prefix)
  return {
    id,
    connection_id: input.connection_id ?? null,
    entity_type: input.entity_type,
    interval: input.interval,
    enabled: input.enabled ?? true,
    job_config: { ...config, format, key_prefix: config.key_prefix?.replace(/^\/+|\/+$/g, '') || undefined, region: config.bucket !== undefined ? (config.region ?? 'us-east-1') : undefined },
    encrypted_secret_data: access_key_id ? seal(deps.config, id, { access_key_id, secret_access_key, ...(session_token && { session_token }) }) : null,
    watermark: windowStartOf(start, input.interval as ExportInterval),
    metadata: input.metadata ?? {},
  }
}

const records = recordService<store.TaskRow, CreateScheduledTaskInput, UpdateScheduledTaskInput>({
  table: store.TASKS,
  filters: store.FILTERS,
  checkCreate: (deps, actor, input) => checkCreate(deps, actor, input),
})

/** Runs a GET shows: the latest, newest window first. */
const RUNS_SHOWN = 50

export const createScheduledTask = async (deps: Deps, actor: Actor, input: CreateScheduledTaskInput): Promise<ScheduledTaskView> => view(await records.create(deps, actor, input))

export async function getScheduledTask(deps: Deps, actor: Actor, id: string): Promise<ScheduledTaskView> {
  const row = await records.get(deps, actor, id)
  return { ...view(row), runs: (await store.runsOf(deps.sql, actor, id, RUNS_SHOWN)).map(runView) }
}

export async function listScheduledTasks(deps: Deps, actor: Actor, request: ListRequest): Promise<Page<ScheduledTaskView>> {
  // The query string's text 'true' as a boolean: the driver writes a boolean parameter from a boolean only.
  const { enabled } = request.filters
  const filters = enabled === undefined ? request.filters : { ...request.filters, enabled: enabled === true || enabled === 'true' }
  const page = await records.list(deps, actor, { ...request, filters })
  return { ...page, items: page.items.map(view) }
}

/** Pauses or resumes a task (Flexprice: only enabled changes). A resumed task catches up from its watermark. */
export const updateScheduledTask = async (deps: Deps, actor: Actor, id: string, input: UpdateScheduledTaskInput): Promise<ScheduledTaskView> =>
  view(await records.update(deps, actor, id, input))

/** The deletion guard of a connection (plugged in roles.ts): refused while a task not deleted takes its credentials from it. */
export async function refuseConnectionInUse(db: Db, scope: Scope, connectionId: string): Promise<void> {
  const tasks = await store.tasksOfConnection(db, scope, connectionId, 10)
  if (tasks.length > 0) throw invalidOperation(`connection ${connectionId} holds the bucket credentials of scheduled task ${tasks.join(', ')}: delete the task(s) first`, { connection_id: connectionId, scheduled_task_ids: tasks })
}

/** Soft delete: the task stops, its runs stay readable with it. */
export const deleteScheduledTask = async (deps: Deps, actor: Actor, id: string): Promise<ScheduledTaskView> => view(await records.remove(deps, actor, id))

export interface ForceRunInput {
  start_time?: string
  end_time?: string
}

/** The longest range a forced run exports (one run, so one file, per day of it). */
const MAX_FORCED_DAYS = 366
/** Windows a forced automatic run plans at most; the worker plans the rest. */
const MAX_FORCED_WINDOWS = 500

/**
 * Runs a task now (Flexprice's force run): with a range, that range (mode custom, one run per day of it, the
 * watermark untouched); without, every window from the watermark to now, the current one so far included (mode
 * automatic, the watermark moved to now). The runs start at once in this process; the worker takes over any left.
 */
export async function triggerScheduledTaskRun(deps: Deps, actor: Actor, id: string, input: ForceRunInput) {
  const now = deps.clock.now()
  const custom = input.start_time !== undefined || input.end_time !== undefined
  let range: { start: Date; end: Date } | undefined
  if (custom) {
    if (input.start_time === undefined) throw validationError('start_time', 'is required with end_time')
    if (input.end_time === undefined) throw validationError('end_time', 'is required with start_time')
    range = { start: new Date(input.start_time), end: new Date(input.end_time) }
    if (range.end <= range.start) throw validationError('end_time', 'must be after start_time')
    if (range.end > now) throw validationError('end_time', 'must not be in the future')
    if (range.end.getTime() - range.start.getTime() > MAX_FORCED_DAYS * 86_400_000) throw validationError('end_time', `a forced run covers at most ${MAX_FORCED_DAYS} days`)
  }
  const planned = await transaction(deps, async (tx) => {
    const task = await store.lockTask(tx, actor, id)
    if (!task) throw new AppError('not_found', `scheduled task ${id} not found`, { id })
    if (!task.enabled) throw new AppError('invalid_operation', `scheduled task ${id} is disabled: enable it (PUT enabled true) before running it`, { id })
    if (range) return { task, runs: await store.planRuns(tx, task, 'custom', splitByDay(range.start, range.end), now) }
    const windows = windowsFrom(task.watermark, now, task.interval, { partial: true, max: MAX_FORCED_WINDOWS })
    const runs = await store.planRuns(tx, task, 'automatic', windows, now)
    if (windows.length > 0) await store.advanceWatermark(tx, task.id, windows[windows.length - 1].end)
    return { task, runs }
  })
  // Started here, not awaited: the answer does not wait for the files. A failure is the run's, retried by the worker.
  if (planned.runs.length > 0) void runTaskNow(deps, planned.task.id).catch((err: unknown) => deps.logger.error({ err, task: id }, 'scheduled export run failed to start'))
  const first = planned.runs[0]
  const last = planned.runs[planned.runs.length - 1]
  return {
    workflow_id: first?.id ?? null,
    mode: custom ? 'custom' : 'automatic',
    start_time: first?.window_start ?? null,
    end_time: last?.window_end ?? null,
    run_ids: planned.runs.map((r) => r.id),
    message: planned.runs.length > 0 ? `${planned.runs.length} run(s) started` : 'nothing to export: the watermark is already now',
  }
}
