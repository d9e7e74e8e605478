// Direct mode's inserter: reads the event log (infra/event-log.ts) in batches of up to AGGREGATOR_MAX_ROWS events
// and stores each through the batch writer (the same id lookup, meters and views as the Kafka consumer), one at a
// time, in order. A batch's insert token names its log range (`log:<segment>:<from>-<to>`) and the checkpoint is
// written after the insert, so a batch replayed after a crash is dropped by every table, and a range read
// differently after a restart finds its stored ids in the lookup: nothing is counted twice.
import type { Deps } from '../infra/deps.ts'
import type { EventLog } from '../infra/event-log.ts'
import type { RetryPolicy } from './retry.ts'
import { writeBatch } from './writer.ts'

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

export interface LogInserter {
  /** Inserts what the log holds, then stops; a batch ClickHouse will not take is left for the next start. */
  drain(): Promise<void>
}

export function startLogInserter(deps: Deps, log: EventLog): LogInserter {
  let stopping = false
  const policy: RetryPolicy = {
    attempts: Number.POSITIVE_INFINITY,
    baseMs: 200,
    maxMs: 5000,
    // Stopping gives up on a failing insert (the batch stays in the log); a working one drains the backlog.
    stopped: () => stopping,
    onError: (err, attempt) => deps.logger.warn({ err, attempt }, 'usage batch from the event log not stored yet; retrying'),
  }
  const run = async (): Promise<void> => {
    for (;;) {
      try {
        const batch = await log.read(deps.config.batch.aggregatorMaxRows)
        if (!batch) {
          if (stopping) return
          await log.changed()
          continue
        }
        if (batch.events.length > 0) await writeBatch(deps, batch.events, [], batch.token, policy)
        await log.checkpoint(batch)
      } catch (err) {
        if (stopping) {
          deps.logger.error({ err, backlog: log.backlog() }, 'stopped with events in the event log: they are stored on the next start')
          return
        }
        // A failed read: the log is read again from the checkpoint's batch after a pause.
        deps.logger.error({ err }, 'event log inserter failed; retrying')
        await sleep(1000)
      }
    }
  }
  const running = run()
  return {
    drain: async () => {
      stopping = true
      log.notify()
      await running
    },
  }
}
