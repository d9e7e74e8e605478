// Direct mode's inserter: reads the event log (infra/event-log.ts) in batches of up to AGGREGATOR_MAX_ROWS events
// and stores each as the Kafka consumer stores a chunk (the same decode thread, id lookup, meters and views),
// inserted one at a time, in order, the next one prepared meanwhile. A log line is a Kafka record's value, so the decode thread takes the lines as records: decoding
// and building the insert text stay off the thread that answers intake. A batch's insert token names its log range
// (`log:<segment>:<from>-<to>`) and the checkpoint is written after the insert, so a batch replayed after a crash is
// dropped by every table, and a range read differently after a restart finds its stored ids in the lookup.
import { setTimeout as sleep } from 'node:timers/promises'
import type { Deps } from '../infra/deps.ts'
import type { EventLog, LogBatch } from '../infra/event-log.ts'
import type { Scope } from '../core/scope.ts'
import { startChunkThread, type ChunkRows, type ChunkThread } from './chunks.ts'
import type { RetryPolicy } from './retry.ts'
import { prepareChunk, storeChunk } from './writer.ts'
import { dedupFilter, type PartitionLookup } from './dedup-filter.ts'

export interface LogInserter {
  /** Inserts what the log holds, then stops; a batch ClickHouse will not take is left for the next start. */
  drain(): Promise<void>
}

/** A batch decoded and prepared on the decode thread, waiting for its insert (or inserting). */
interface Prepared {
  batch: LogBatch
  thread: ChunkThread
  /** Its chunk on the thread; undefined when no line of it was an event. */
  chunk?: { id: number; scopes: Scope[] }
  ready?: ChunkRows
}

/**
 * A batch of log lines onto the decode thread as one chunk (its token must name exactly the range), looked up and
 * resolved; the ids of `inFlight` (a chunk being inserted) count as stored. Copies cross (and are moved): the batch's
 * own arrays stay whole for a retry after a failure.
 */
async function prepare(deps: Deps, t: ChunkThread, batch: LogBatch, policy: RetryPolicy, inFlight: Prepared | undefined, filter: PartitionLookup): Promise<Prepared> {
  const fetch = await t.calls.fetch(batch.bytes.slice(), batch.starts.slice(), batch.ends.slice(), Number.MAX_SAFE_INTEGER)
  const c = await t.calls.next(fetch)
  await t.calls.release(fetch)
  if (!c) return { batch, thread: t }
  try {
    for (const d of c.dead) deps.logger.warn({ token: batch.token, reason: d.reason }, 'a line of the event log is not an event; skipped')
    const pending = inFlight?.chunk && inFlight.thread === t ? [inFlight.chunk.id] : []
    return { batch, thread: t, chunk: c, ready: await prepareChunk(deps, t.calls, c, policy, { pending, filter }) }
  } catch (err) {
    await t.calls.release(c.id).catch(() => {})
    throw err
  }
}

/** Inserts a prepared batch and checkpoints it; the count of events ClickHouse refused. */
async function insert(deps: Deps, p: Prepared, policy: RetryPolicy, log: EventLog): Promise<number> {
  try {
    const refused = p.chunk ? (await storeChunk(deps, p.thread.calls, p.chunk.id, p.ready!, p.batch.token, 'direct', policy)).refused.length : 0
    await log.checkpoint(p.batch)
    return refused
  } finally {
    if (p.chunk) await p.thread.calls.release(p.chunk.id).catch(() => {})
  }
}

export function startLogInserter(deps: Deps, log: EventLog): LogInserter {
  let stopping = false
  let thread: ChunkThread | undefined
  // The log is one partition, held by this process alone.
  const dedup = dedupFilter(deps, { name: 'event-log', partitions: async () => 1 })
  const filter = dedup.of(0)
  const policy: RetryPolicy = {
    attempts: Number.POSITIVE_INFINITY,
    baseMs: 200,
    maxMs: 5000,
    // Stopping gives up on a failing insert (the batch stays in the log); a working one drains the backlog.
    stopped: () => stopping,
    onError: (err, attempt) => deps.logger.warn({ err, attempt }, 'usage batch from the event log not stored yet; retrying'),
  }
  const decodeThread = (): ChunkThread => {
    if (!thread) {
      const t = startChunkThread()
      thread = t
      void t.exited.then(() => void (thread === t && (thread = undefined)))
    }
    return thread
  }
  // Two batches in the pipeline, as the Kafka consumer's: while one is inserted (and checkpointed), the next is read,
  // decoded, looked up and prepared, then waits; inserts and checkpoints stay one at a time, in order.
  const run = async (): Promise<void> => {
    /** Batches read whose insert has not succeeded, oldest first: after a failure they are prepared again, in order. */
    let redo: LogBatch[] = []
    let inFlight: { p: Prepared; done: Promise<number> } | undefined
    for (;;) {
      let batch: LogBatch | undefined
      let next: Prepared | undefined
      try {
        batch = redo.shift() ?? (await log.read(deps.config.batch.aggregatorMaxRows))
        if (!batch) {
          if (inFlight) {
            await inFlight.done
            inFlight = undefined
            continue
          }
          if (stopping) return
          await log.changed()
          continue
        }
        next = await prepare(deps, decodeThread(), batch, policy, inFlight?.p, filter)
        if (inFlight) {
          const refused = await inFlight.done
          inFlight = undefined
          // Its ids were taken as stored, and some were refused after all: classify again.
          if (refused > 0) {
            const again: Prepared = next
            next = undefined
            if (again.chunk) await again.thread.calls.release(again.chunk.id)
            next = await prepare(deps, again.thread, batch, policy, undefined, filter)
          }
        }
        inFlight = { p: next, done: insert(deps, next, policy, log) }
        next = undefined
        // Settled by the next turn; a failure is seen there (or in the catch below) and redone.
        inFlight.done.catch(() => {})
      } catch (err) {
        // A prepared batch that did not reach its insert lets its chunk go (an insert lets its own go).
        if (next?.chunk) await next.thread.calls.release(next.chunk.id).catch(() => {})
        // The batch in flight (unless it was stored) and the one read after it go again, in order, after a pause (a
        // decode thread that died is replaced).
        const failed = inFlight
        inFlight = undefined
        const stored = failed ? await failed.done.then(() => true, () => false) : true
        redo = [...(stored ? [] : [failed!.p.batch]), ...(batch && batch !== failed?.p.batch ? [batch] : []), ...redo]
        if (stopping) {
          deps.logger.error({ err, backlog: log.backlog() }, 'stopped with events in the event log: they are stored on the next start')
          return
        }
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
      await dedup.stop()
      await thread?.close()
    },
  }
}
