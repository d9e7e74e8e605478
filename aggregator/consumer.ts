// The aggregator role in Kafka mode: a consumer group reading the event topic in batches (bytes and
// linger by the fetch, records by chunking), one ClickHouse insert per chunk, offsets committed only after
// ClickHouse acknowledged it. A chunk's token is its topic/partition/offset range, so re-reading it after
// a crash between insert and commit stores nothing twice.
// Chunks are pipelined: while one chunk's insert runs, the next is fetched, parsed, classified and
// resolved (its dedup lookup treating the ids in flight as stored), then waits; inserts and commits stay
// one at a time, in order. The fetch position moves past a chunk as it joins the pipeline: if its insert
// or commit fails, it and the chunks behind it are read again from their first offsets. While ClickHouse
// is down the insert is retried in place and nothing more is fetched (backpressure). Records that are not
// events, and events ClickHouse refuses, go to the dead-letter topic with the reason before their
// offsets commit.
// The records are decoded, classified, resolved and written as insert text on a decode thread (chunks.ts),
// which keeps the events; this thread fetches, runs the dedup lookup and the insert on chDB (one per
// process, owned by this thread), reads the meters, and commits. Only ids, scopes and bytes cross.
import type { Consumer, EachBatchPayload, KafkaMessage, Producer } from 'kafkajs'
import { encodeEvent } from '../core/events.ts'
import { eventKey } from '../core/partition.ts'
import type { Deps } from '../infra/deps.ts'
import type { KafkaHandle } from '../infra/kafka.ts'
import { packRecords, startChunkThread, type ChunkRows, type ChunkThread, type Dead, type DecodedChunk } from './chunks.ts'
import { dedupFilter } from './dedup-filter.ts'
import { Deliveries } from './deliveries.ts'
import { PartitionGate } from './partition-gate.ts'
import { retry, type RetryPolicy } from './retry.ts'
import { prepareChunk, storeChunk, type Refused } from './writer.ts'

const HEARTBEAT_MS = 3000
/** Chunks in the pipeline at most: one inserting, the others prepared and waiting. */
const PIPELINE_DEPTH = 3

/** One consumer group per event topic: aggregators of another topic never join its rebalances. */
export const consumerGroup = (topic: string): string => `meterbill-aggregator.${topic}`

export interface AggregatorOptions {
  /** Test hook: runs after a chunk's insert, before its offsets are committed. */
  afterInsert?: (chunk: { partition: number; first: string; last: string }) => Promise<void>
}

/** A chunk handed to the insert pipeline: `done` settles once it is stored and committed (or given up). */
interface InFlight {
  partition: number
  first: string
  /** Where its events are held: a chunk prepared while this one is in flight treats its ids as stored. */
  thread: ChunkThread
  id: number
  done: Promise<{ refused: number }>
  /** The pipeline's run it belongs to: a failure ends the run, and chunks of an ended run are read again. */
  run: number
}

/**
 * What a chunk's dead letters need of its records: the pipeline holds this, not kafkajs' messages, which held
 * on for two or three fetches (objects and buffers per record) and were copied by every young-generation collection.
 */
interface ChunkRecords {
  thread: ChunkThread
  id: number
  /** Index in the fetch of the chunk's first record, and every record's offset from there on. */
  from: number
  offsets: BigInt64Array
  dead: (Dead & { key: Buffer | null })[]
}

function chunkRecords(thread: ChunkThread, c: DecodedChunk, fetched: KafkaMessage[]): ChunkRecords {
  // A plain loop: Array.from over a slice of the messages took twice as long (~6 ms a 50,000-record chunk).
  const offsets = new BigInt64Array(c.to - c.from)
  for (let i = c.from; i < c.to; i++) offsets[i - c.from] = BigInt(fetched[i].offset)
  return { thread, id: c.id, from: c.from, offsets, dead: c.dead.map((d) => ({ ...d, key: fetched[d.record].key })) }
}

export async function startAggregator(deps: Deps, kafka: KafkaHandle, options: AggregatorOptions = {}): Promise<() => Promise<void>> {
  await kafka.ensureTopics()
  const { batch } = deps.config
  const consumer: Consumer = kafka.kafka.consumer({
    groupId: consumerGroup(kafka.topic),
    maxWaitTimeInMs: Math.max(batch.lingerMs, 10),
    minBytes: Math.min(batch.maxBytes, 1024 * 1024),
    maxBytes: batch.maxBytes,
    maxBytesPerPartition: batch.maxBytes,
    // A member that died with the broker (its leave request lost) holds a rejoin up for this long; the
    // heartbeat goes on while a chunk waits for the insert before it, however long that takes.
    sessionTimeout: 10_000,
    heartbeatInterval: HEARTBEAT_MS,
  })
  const dlq: Producer = kafka.kafka.producer({ allowAutoTopicCreation: false })
  await Promise.all([consumer.connect(), dlq.connect()])
  await consumer.subscribe({ topic: kafka.topic, fromBeginning: true })
  let stopping = false
  let heartbeat: () => Promise<void> = async () => {}
  /** Chunks handed to the pipeline and not yet committed, oldest first. */
  let pipeline: InFlight[] = []
  let run = 0
  // A dedup filter per partition held: loaded at its first chunk, let go (written to its snapshot) when revoked.
  const filter = dedupFilter(deps, { name: `kafka-${kafka.topic}`, partitions: () => kafka.partitions() })
  const gate = new PartitionGate()
  const deliveries = new Deliveries()
  /**
   * Partitions whose last commit succeeded since the last failure or assignment. A chunk's insert begins only after a
   * commit of its partition succeeded (the one before it, or one of its own first offset): the broker takes a commit
   * only from a member of the current generation, so a member dropped from the group (a session that timed out while
   * a broker was away) learns it before it inserts, instead of inserting what the partition's new owner reads again.
   */
  const proven = new Set<number>()
  /**
   * This member's id in the group. A member keeps it through rebalances it takes part in, and nobody else holds its
   * partitions in between; one removed from the group (its session timed out) joins again with a new id, and the
   * generations it missed may have given its partitions to others, whose inserts its filters then lack.
   */
  let memberId: string | undefined
  /** When a commit last succeeded (ms): this member was in the group's current generation then. */
  let memberAt = Date.now()
  /**
   * Commits the broker took. kafkajs 2.2.4's commitOffsets resolves without committing while its runner is stopped (it
   * restarts after a crash, and rejoins): a proof of membership that proved nothing let a member dropped from the group
   * insert a partition its new owner had read (the fault test counted 418 events twice). A commit counts only when
   * kafkajs reports it made.
   */
  let commitsMade = 0
  consumer.on(consumer.events.COMMIT_OFFSETS, () => void commitsMade++)
  const committed = async (offsets: { topic: string; partition: number; offset: string }[]): Promise<void> => {
    const before = commitsMade
    await consumer.commitOffsets(offsets)
    if (commitsMade === before) throw new Error('offsets not committed: the consumer is not running (it joins the group again)')
    memberAt = Date.now()
  }
  consumer.on(consumer.events.REBALANCING, () => gate.rebalancing())
  // A crash stops the runner; a restart joins the group again: nothing begins until that assignment.
  consumer.on(consumer.events.CRASH, () => gate.rebalancing())
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    const partitions = payload.memberAssignment[kafka.topic] ?? []
    const missedSince = memberId !== undefined && payload.memberId !== memberId ? memberAt : undefined
    memberId = payload.memberId
    deps.logger.debug({ partitions, memberId, missedSince }, 'partitions assigned')
    proven.clear()
    deliveries.reset()
    gate.assigned(partitions)
    void filter.assign(partitions, { missedSince }).catch((err: unknown) => deps.logger.warn({ err }, 'dedup filter: assignment not applied'))
  })

  /**
   * A chunk's insert or commit failed: it and every chunk behind it (they wait on it, so fail with it) are
   * read again from their first offsets. Their fetch positions had moved past them.
   */
  const rewind = (chunk: InFlight, err: unknown): void => {
    if (chunk.run !== run) return
    run++
    proven.clear()
    const from = new Map<number, string>()
    for (const c of pipeline) if (!from.has(c.partition)) from.set(c.partition, c.first)
    pipeline = []
    deps.logger.warn({ err, rewind: Object.fromEntries(from) }, 'usage batch not stored; reading it again')
    for (const [partition, offset] of from) {
      try {
        consumer.seek({ topic: kafka.topic, partition, offset })
        deliveries.seek(partition, offset)
      } catch {
        // Not running (restarting after a crash): it resumes from the committed offsets anyway.
      }
    }
  }

  const policy: RetryPolicy = {
    attempts: Number.POSITIVE_INFINITY,
    baseMs: 200,
    maxMs: 5000,
    stopped: () => stopping,
    onError: (err, attempt) => {
      deps.logger.warn({ err, attempt }, 'usage batch not stored yet; retrying')
      heartbeat().catch(() => {})
    },
  }

  /**
   * Dead records and refused events to the dead-letter topic, each with the reason and the record it came from (a
   * refused event's record is found by the decode thread, which reads the chunk again: refusals are rare).
   */
  const deadLetter = async (topic: string, partition: number, chunk: ChunkRecords, refused: Refused[]): Promise<void> => {
    const source = (key: Buffer | string | null, offset: bigint, reason: string) => ({
      key,
      headers: { reason, source_topic: topic, source_partition: String(partition), source_offset: String(offset) },
    })
    const records = refused.length === 0 ? [] : await chunk.thread.calls.recordsOf(chunk.id, refused.map((r) => r.event))
    const messages = [
      ...chunk.dead.map((d) => ({ ...source(d.key, chunk.offsets[d.record - chunk.from], d.reason), value: d.value })),
      // The key intake gives the event's record (ingest/kafka-sink.ts).
      ...refused.map((r, i) => ({ ...source(eventKey(r.event), chunk.offsets[records[i] - chunk.from], r.reason), value: encodeEvent(r.event) })),
    ]
    if (messages.length === 0) return
    for (const m of messages) deps.logger.warn({ partition, offset: m.headers.source_offset, reason: m.headers.reason }, 'record sent to the dead-letter topic')
    await retry(() => dlq.send({ topic: kafka.dlqTopic, acks: -1, messages }), policy)
  }

  let thread: ChunkThread | undefined
  /** The decode thread; one that died is replaced at the next fetch (the chunks it held are read again). */
  const chunkThread = (): ChunkThread => {
    if (!thread) {
      const t = startChunkThread()
      thread = t
      void t.exited.then(() => {
        if (thread === t) thread = undefined
      })
    }
    return thread
  }

  const handle = async ({ batch: b, heartbeat: beat, resolveOffset, isRunning, isStale }: EachBatchPayload): Promise<void> => {
    heartbeat = beat
    if (b.messages.length === 0) return
    deps.metrics.consumerLag.set({ partition: String(b.partition) }, Number(b.highWatermark) - Number(b.lastOffset()) - 1)
    const messages = deliveries.fresh(b.partition, b.messages)
    if (messages.length === 0) return
    const fetchedIn = run
    const t = chunkThread()
    // Heartbeats go on for the whole fetch (decoding, lookups and the wait for the insert before a chunk): a
    // large fetch on busy cores can take longer than the session, and a member dropped at every fetch never commits.
    const beating = setInterval(() => void beat().catch(() => {}), HEARTBEAT_MS)
    // Whole records (one may hold a customer's events of a request) up to AGGREGATOR_MAX_ROWS events a chunk.
    let fetch: number | undefined
    let unjoined: number | undefined
    try {
      fetch = await t.calls.fetch(...packRecords(messages.map((m) => m.value)), batch.aggregatorMaxRows)
      // (Each turn has its own `c`: the chunk's insert below reads it after the loop moved on.)
      for (let c = await t.calls.next(fetch); c; c = await t.calls.next(fetch)) {
        unjoined = c.id
        const range = { partition: b.partition, first: messages[c.from].offset, last: messages[c.to - 1].offset }
        const records = chunkRecords(t, c, messages)
        let ahead: InFlight[]
        let prepared: ChunkRows
        let assignment: number
        do {
          assignment = gate.current()
          ahead = pipeline.filter((e) => e.thread === t)
          prepared = await prepareChunk(deps, t.calls, c, policy, { pending: ahead.map((e) => e.id), filter: filter.of(b.partition) })
          // An assignment meanwhile: the lookup must be of one assignment, the one the insert is made in.
        } while (assignment !== gate.current() && run === fetchedIn)
        // Checked right before the chunk joins the pipeline (no await in between): stop() drains what joined. After a
        // rewind the rest of this fetch is not handed on: its partition may have been sought back before it, and kafkajs's
        // isStale() turns false once a fetch applied the seek; the records are read again from the positions.
        if (stopping || !isRunning() || isStale() || run !== fetchedIn) return
        deps.logger.debug({ ...range, run, ahead: ahead.length, ...prepared.result }, 'usage batch prepared')
        const previous = pipeline.at(-1)
        const done = (async () => {
          // A chunk is inserted only once the one before it is stored (and so every one before that).
          await previous?.done
          // Ids a chunk ahead could not store after all were taken as stored: classify again.
          const refusedAhead = (await Promise.all(ahead.map((e) => e.done))).some((r) => r.refused > 0)
          const ready = refusedAhead ? await prepareChunk(deps, t.calls, c, policy, { filter: filter.of(b.partition) }) : prepared
          await gate.enter(range.partition, assignment)
          if (!proven.has(range.partition)) {
            await committed([{ topic: b.topic, partition: range.partition, offset: range.first }])
            proven.add(range.partition)
          }
          const { refused, ...result } = await storeChunk(deps, t.calls, c.id, ready, `kafka:${b.topic}:${range.partition}:${range.first}-${range.last}`, 'kafka', policy)
          await deadLetter(b.topic, b.partition, records, refused)
          deps.logger.debug({ ...range, ...result, refused: refused.length }, 'usage batch stored')
          await options.afterInsert?.(range)
          // A late commit of a partition that moved would move its new owner's offset back.
          await gate.enter(range.partition, assignment)
          await committed([{ topic: b.topic, partition: b.partition, offset: (BigInt(range.last) + 1n).toString() }])
          proven.add(range.partition)
          return { refused: refused.length }
        })()
        const entry: InFlight = { partition: range.partition, first: range.first, thread: t, id: c.id, done, run }
        pipeline.push(entry)
        done.then(
          () => void (pipeline[0] === entry && pipeline.shift()),
          (err: unknown) => rewind(entry, err),
        )
        unjoined = undefined
        // Its keys and records are needed until it is stored or given up.
        void done.finally(() => t.calls.release(entry.id)).catch(() => {})
        // The fetch position moves on; the commit follows the insert.
        resolveOffset(range.last)
        deliveries.handed(range.partition, range.last)
        // Backpressure: one chunk inserting and two waiting, no more. Preparing a chunk (decode, lookup, insert
        // text) and fetching the next one take longer than an insert: with one chunk waiting, the insert went
        // idle while the next fetch was read and prepared.
        await pipeline.at(-PIPELINE_DEPTH)?.done.catch(() => {})
        await beat()
      }
    } finally {
      clearInterval(beating)
      // Stopped with a chunk that did not join the pipeline, or before the last chunk: nothing else lets them go.
      for (const id of [unjoined, fetch]) if (id !== undefined) void t.calls.release(id).catch(() => {})
    }
  }

  await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, partitionsConsumedConcurrently: 1, eachBatch: handle })
  return async () => {
    stopping = true
    // Chunks waiting for an assignment that will not come (stopped during a rebalance) are read again by the next member.
    gate.close()
    // Drain the pipeline while still a member of the group, so its commits land.
    await pipeline.at(-1)?.done.catch(() => {})
    // Disconnect waits for the batch in hand; an uncommitted one is read again by the next member.
    await consumer.disconnect()
    await dlq.disconnect()
    await filter.stop()
    await thread?.close()
  }
}
