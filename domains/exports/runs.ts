// Runs of scheduled exports: planning each enabled task's whole windows since its watermark (once each: the task row
// locked while the watermark moves, automatic windows unique per task), then running the due runs under leases. A
// run writes its file to a staging directory, then moves it to the task's directory or PUTs it to its bucket under
// `<key_prefix>/<entity_type>/date=YYYY-MM-DD/<run id>.<csv|csv.gz|parquet>`: a retried run writes the same key again,
// so each window has one file. A failed attempt is retried with backoff (core/sync-retry.ts), a bad spec not at all.
import { randomUUID } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdir, rename, rm, stat } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import { createGzip } from 'node:zlib'
import { AppError } from '../../core/errors.ts'
import { partitionOf, windowsFrom } from '../../core/export-windows.ts'
import { nextSyncAttempt } from '../../core/sync-retry.ts'
import type { Deps } from '../../infra/deps.ts'
import { putObject, type S3Credentials } from '../../infra/s3.ts'
import type { Progress } from '../../infra/scheduler.ts'
import { unseal } from '../../infra/secrets.ts'
import { transaction } from '../records/service.ts'
import { connectionCredentials } from './connection-credentials.ts'
import * as store from './store.ts'
import { TASK_ENTITIES } from './task-entities.ts'
import { writeExportFile, type ExportFormat } from './write.ts'

/** How long after a window's end it is exported: events of its last seconds have been stored by then. */
const SETTLE_MS = 2 * 60_000
/** Windows one planning pass gives a task at most (a day of 15-minute windows); the next pass plans on. */
const WINDOWS_A_PASS = 96
/** How long a run may hold its lease before another worker takes it over. */
const RUN_LEASE_MS = 30 * 60_000
/** A job run stops taking runs after this long; the next one goes on. */
const RUN_BUDGET_MS = 10 * 60_000

/** Plans the whole windows of every due task; answers how many runs it planned. */
async function planDue(deps: Deps, now: Date): Promise<number> {
  const until = new Date(now.getTime() - SETTLE_MS)
  let planned = 0
  for (const due of await store.dueTasks(deps.sql, until, 1000)) {
    planned += await transaction(deps, async (tx) => {
      const task = await store.lockTask(tx, { tenantId: due.tenant_id, environmentId: due.environment_id }, due.id)
      if (!task || !task.enabled) return 0
      const windows = windowsFrom(task.watermark, until, task.interval, { max: WINDOWS_A_PASS })
      if (windows.length === 0) return 0
      const runs = await store.planRuns(tx, task, 'automatic', windows, now)
      await store.advanceWatermark(tx, task.id, windows[windows.length - 1].end)
      return runs.length
    })
  }
  return planned
}

interface Outcome {
  completed: number
  retried: number
  failed: number
  rows: number
}

/** Takes due runs one at a time (of one task, or any) until none is left or the budget is spent. */
async function runDue(deps: Deps, progress: Progress, taskId?: string): Promise<Outcome> {
  const outcome: Outcome = { completed: 0, retried: 0, failed: 0, rows: 0 }
  const token = `${process.pid}-${randomUUID()}`
  const deadline = Date.now() + RUN_BUDGET_MS
  while (Date.now() < deadline) {
    const run = await store.claimRun(deps.sql, deps.clock.now(), RUN_LEASE_MS, token, taskId)
    if (!run) break
    const result = await execute(deps, run, (rows) => progress(outcome.completed, outcome.completed + 1, `${run.id}: ${rows} rows`))
    if ('done' in result) {
      outcome.completed++
      outcome.rows += result.done.rows
    } else if (result.retryAt) outcome.retried++
    else outcome.failed++
  }
  return outcome
}

/** The worker's job: plan the due windows, then run what is due. */
export async function runScheduledExports(deps: Deps, progress: Progress = () => {}): Promise<Outcome & { planned: number }> {
  const planned = await planDue(deps, deps.clock.now())
  return { planned, ...(await runDue(deps, progress)) }
}

/** Runs a task's due runs now (a forced run), in this process. */
export const runTaskNow = (deps: Deps, taskId: string): Promise<Outcome> => runDue(deps, () => {}, taskId)

type Result = { done: { rows: number; bytes: number; location: string } } | { error: string; retryAt: Date | null }

async function execute(deps: Deps, run: store.RunRow, onRows: (rows: number) => void): Promise<Result> {
  const task = await store.taskById(deps.sql, run.scheduled_task_id)
  const staging = join(deps.config.dataDir, 'exports', '.staging', run.id)
  let result: Result
  try {
    if (!task) throw new Error(`scheduled task ${run.scheduled_task_id} is gone`)
    result = { done: await exportWindow(deps, task, run, staging, onRows) }
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err)
    // A spec the engine refuses fails the same way every time: not retried.
    const permanent = err instanceof AppError && err.code === 'validation_error'
    result = { error: message, retryAt: permanent ? null : nextSyncAttempt(run.attempts, deps.clock.now()) }
    deps.logger.warn({ run: run.id, task: run.scheduled_task_id, attempt: run.attempts, err: message }, 'scheduled export run failed')
  } finally {
    await rm(staging, { recursive: true, force: true })
  }
  await store.finishRun(deps.sql, run, deps.clock.now(), result)
  return result
}

const CONTENT_TYPES = { csv: 'text/csv', 'csv.gz': 'application/gzip', parquet: 'application/vnd.apache.parquet' }

/** The bucket's credentials: the task's own, else its connection's as they are now (a rotated key is used at once). */
async function credentialsOf(deps: Deps, task: store.TaskRow): Promise<S3Credentials> {
  if (task.encrypted_secret_data) return unseal<S3Credentials>(deps.config, task.id, task.encrypted_secret_data)
  if (task.connection_id) return connectionCredentials()(deps, { tenantId: task.tenant_id, environmentId: task.environment_id }, task.connection_id)
  throw new Error('the task has no credentials for its bucket')
}

/** Writes the run's window to its file and delivers it; answers where it went. */
async function exportWindow(deps: Deps, task: store.TaskRow, run: store.RunRow, staging: string, onRows: (rows: number) => void): Promise<{ rows: number; bytes: number; location: string }> {
  const config = task.job_config
  const format: ExportFormat = config.format ?? 'csv'
  const mapped = TASK_ENTITIES[task.entity_type]
  const scope = { tenantId: task.tenant_id, environmentId: task.environment_id }
  const spec = { entity_type: mapped.entity, format, start_time: run.window_start.toISOString(), end_time: run.window_end.toISOString(), filters: { ...config.filters, ...mapped.filters } }
  let file = join(staging, `export.${format}`)
  const written = await writeExportFile(deps, scope, spec, file, onRows)
  let ext: keyof typeof CONTENT_TYPES = format
  let bytes = written.bytes
  if (config.compression === 'gzip') {
    const gz = `${file}.gz`
    await pipeline(createReadStream(file), createGzip(), createWriteStream(gz))
    file = gz
    ext = 'csv.gz'
    bytes = (await stat(gz)).size
  }
  const key = [config.key_prefix, task.entity_type, partitionOf({ start: run.window_start, end: run.window_end }), `${run.id}.${ext}`].filter(Boolean).join('/')
  if (config.bucket !== undefined) {
    const credentials = await credentialsOf(deps, task)
    const target = { bucket: config.bucket, region: config.region ?? 'us-east-1', endpointUrl: config.endpoint_url, usePathStyle: config.use_path_style, encryption: config.encryption }
    // Signed with the wall clock: the bucket refuses a signature more than 15 minutes off its own time.
    await putObject(target, credentials, key, file, CONTENT_TYPES[ext], new Date())
    return { rows: written.rows, bytes, location: `s3://${config.bucket}/${key}` }
  }
  const target = join(deps.config.dataDir, 'exports', config.local_directory!, key)
  await mkdir(dirname(target), { recursive: true })
  // Same file system (both under DATA_DIR): the file appears whole or not at all.
  await rename(file, target)
  return { rows: written.rows, bytes, location: target }
}
