// Advancing a test clock: from its frozen time to the target, it steps through every instant at which its
// customers have something due (store.nextDue) and, at each, runs the scheduled jobs that act on customers'
// records (Job.onTestClocks) as the worker would have run them then: `now` is the step's instant, and
// they touch the clock's customers only (deps.testClockId). The outbox events they write carry the
// clock's time (migration 0840's trigger reads it from the transaction) and are delivered as usual.
import { fixedClock } from '../../core/clock.ts'
import type { Deps } from '../../infra/deps.ts'
import type { Sql, Tx } from '../../infra/postgres.ts'
import type { Job } from '../../infra/scheduler.ts'
import { transaction } from '../records/service.ts'
import * as store from './store.ts'

/** The jobs an advance runs, in the worker's order (the clock domain is handed them: it does not import worker/). */
export type ClockJobs = readonly Pick<Job, 'name' | 'run'>[]

/** An advance stepping more often than this is stopped (a job announcing a due instant it never moves past). */
const MAX_STEPS = 20_000

/**
 * Deps for the jobs of one step: the clock's time, the clock's customers, and every transaction stamping
 * its outbox events with the clock (a savepoint of a caller's transaction inherits the setting).
 */
function onClock(deps: Deps, clockId: string, at: Date): Deps {
  const stamp = JSON.stringify({ id: clockId, frozen_time: at.toISOString() })
  const stamped = <T>(work: (tx: Tx) => Promise<T>) => async (tx: Tx) => {
    await tx`SELECT set_config('meterbill.test_clock', ${stamp}, true)`
    return work(tx)
  }
  const sql = new Proxy(deps.sql, {
    get(target, property, receiver) {
      if (property !== 'begin') return Reflect.get(target, property, receiver)
      return (a: unknown, b?: unknown) =>
        typeof a === 'function' ? target.begin(stamped(a as (tx: Tx) => Promise<unknown>)) : target.begin(a as string, stamped(b as (tx: Tx) => Promise<unknown>))
    },
  })
  return { ...deps, sql: sql as Sql, clock: fixedClock(at), testClockId: clockId }
}

/** Runs the advance the clock was taken for (store.beginAdvance) to its end; a failure leaves the clock internal_failure, saying why. */
export async function runAdvance(deps: Deps, clock: store.ClockRow, target: Date, jobs: ClockJobs): Promise<void> {
  let at = clock.frozen_time
  try {
    for (let steps = 0; at < target; steps++) {
      if (steps >= MAX_STEPS) throw new Error(`stopped after ${MAX_STEPS} steps at ${at.toISOString()}`)
      const due = await store.nextDue(deps.sql, clock.id, at)
      const next = due && due < target ? due : target
      const step = onClock(deps, clock.id, next)
      for (const job of jobs) await job.run(step, () => {})
      at = next
      // In a transaction, so this process's cached reads (the intake's clocked customers) see the new time.
      await transaction(deps, (tx) => store.stepped(tx, clock.id, at, at >= target))
    }
  } catch (err) {
    deps.logger.error({ err, test_clock_id: clock.id }, 'test clock advance failed')
    await transaction(deps, (tx) => store.failed(tx, clock.id, (err as Error).message))
  }
}
