// Scheduled jobs (node-cron) with one leader per job across processes, taken as a lease in Postgres.
// A job reports progress; the CLI and POST /v1/jobs/{name}/run show it.
import cron from 'node-cron'
import { randomUUID } from 'node:crypto'
import { AppError } from '../core/errors.ts'
import type { Deps } from './deps.ts'

export type Progress = (done: number, total: number, note?: string) => void

export interface Job {
  name: string
  /** node-cron expression, e.g. '*\/5 * * * *'. */
  schedule: string
  /** How long one run may hold the lease. */
  leaseMs: number
  run(deps: Deps, progress: Progress): Promise<Record<string, unknown>>
  /** The job acts on customers' records at deps.clock's time and honours deps.testClockId: advancing a test clock runs it. */
  onTestClocks?: boolean
}

/** Takes the lease when it is free or expired; answers the holder token, or undefined when another run holds it. */
async function acquire(deps: Deps, job: Job): Promise<string | undefined> {
  const holder = `${process.pid}-${randomUUID()}`
  const until = new Date(Date.now() + job.leaseMs)
  const rows = await deps.sql`INSERT INTO job_leases (name, holder, expires_at) VALUES (${job.name}, ${holder}, ${until})
    ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
    WHERE job_leases.expires_at <= now()
    RETURNING name`
  return rows.length === 1 ? holder : undefined
}

async function release(deps: Deps, job: Job, holder: string, summary: Record<string, unknown>): Promise<void> {
  // Free from now: acquire takes a lease whose expiry is not after now() (a release and the next run can share a clock tick).
  await deps.sql`UPDATE job_leases SET expires_at = now(), last_run_at = now(), last_summary = ${deps.sql.json(summary as never)}
    WHERE name = ${job.name} AND holder = ${holder}`
}

/** Runs a job now if no other process holds it; answers `invalid_operation` when one does. */
export async function runJob(deps: Deps, job: Job, progress: Progress = () => {}): Promise<Record<string, unknown>> {
  const summary = await runJobIfFree(deps, job, progress)
  if (!summary) throw new AppError('invalid_operation', `job ${job.name} is already running elsewhere`, { job: job.name })
  return summary
}

/** Runs a job now if no other process holds it; answers undefined, having run nothing, when one does (the usual case of a poll). */
export async function runJobIfFree(deps: Deps, job: Job, progress: Progress = () => {}): Promise<Record<string, unknown> | undefined> {
  const holder = await acquire(deps, job)
  if (!holder) return undefined
  let summary: Record<string, unknown> = {}
  try {
    summary = await job.run(deps, progress)
    return summary
  } catch (err) {
    summary = { error: (err as Error).message }
    throw err
  } finally {
    await release(deps, job, holder, summary)
  }
}

export function startScheduler(deps: Deps, jobs: Job[]): () => Promise<void> {
  const tasks = jobs.map((job) =>
    cron.schedule(job.schedule, () => {
      runJob(deps, job).catch((err) => {
        if (!(err instanceof AppError)) deps.logger.error({ err, job: job.name }, 'scheduled job failed')
      })
    }),
  )
  return async () => {
    for (const t of tasks) await t.stop()
  }
}
