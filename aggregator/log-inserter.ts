// Direct mode's inserter: reads the event log (infra/event-log.ts) in batches of up to AGGREGATOR_MAX_ROWS events
// and stores each as the Kafka consumer stores a chunk (the same decode thread, id lookup, meters and views), one at
// a time, in order. A log line is a Kafka record's value, so the decode thread takes the lines as records: decoding
// and building the insert text stay off the thread that answers intake. A batch's insert token names its log range
// (`log:<segment>:<from>-<to>`) and the checkpoint is written after the insert, so a batch replayed after a crash is
// dropped by every table, and a range read differently after a restart finds its stored ids in the lookup.
import type { Deps } from '../infra/deps.ts'
import type { EventLog, LogBatch } from '../infra/event-log.ts'
import { startChunkThread, type ChunkThread } from './chunks.ts'
import type { RetryPolicy } from './retry.ts'
import { prepareChunk, storeChunk } from './writer.ts'

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

export interface LogInserter {
  /** Inserts what the log holds, then stops; a batch ClickHouse will not take is left for the next start. */
  drain(): Promise<void>
}

/** Stores one batch of log lines: decoded and classified on the decode thread, looked up and inserted here. */
async function store(deps: Deps, t: ChunkThread, batch: LogBatch, policy: RetryPolicy): Promise<void> {
  // One chunk for the whole batch: its token must name exactly the range. Copies cross (and are moved): the batch's
  // own arrays stay whole for a retry after a failure.
  const fetch = await t.calls.fetch(batch.bytes.slice(), batch.starts.slice(), batch.ends.slice(), Number.MAX_SAFE_INTEGER)
  const c = await t.calls.next(fetch)
  await t.calls.release(fetch)
  if (!c) return
  try {
    for (const d of c.dead) deps.logger.warn({ token: batch.token, reason: d.reason }, 'a line of the event log is not an event; skipped')
    await storeChunk(deps, t.calls, c.id, await prepareChunk(deps, t.calls, c, policy), batch.token, 'direct', policy)
  } finally {
    await t.calls.release(c.id).catch(() => {})
  }
}

export function startLogInserter(deps: Deps, log: EventLog): LogInserter {
  let stopping = false
  let thread: ChunkThread | undefined
  const policy: RetryPolicy = {
    attempts: Number.POSITIVE_INFINITY,
    baseMs: 200,
    maxMs: 5000,
    // Stopping gives up on a failing insert (the batch stays in the log); a working one drains the backlog.
    stopped: () => stopping,
    onError: (err, attempt) => deps.logger.warn({ err, attempt }, 'usage batch from the event log not stored yet; retrying'),
  }
  const run = async (): Promise<void> => {
    let pending: LogBatch | undefined
    for (;;) {
      try {
        pending ??= await log.read(deps.config.batch.aggregatorMaxRows)
        if (!pending) {
          if (stopping) return
          await log.changed()
          continue
        }
        if (!thread) {
          const t = startChunkThread()
          thread = t
          void t.exited.then(() => void (thread === t && (thread = undefined)))
        }
        await store(deps, thread, pending, policy)
        await log.checkpoint(pending)
        pending = undefined
      } catch (err) {
        if (stopping) {
          deps.logger.error({ err, backlog: log.backlog() }, 'stopped with events in the event log: they are stored on the next start')
          return
        }
        // The same batch again after a pause (a decode thread that died is replaced).
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
      await thread?.close()
    },
  }
}
