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
import type { Consumer, EachBatchPayload, KafkaMessage, Producer } from 'kafkajs'
import { decodeRecord, encodeEvent, type UsageEvent } from '../core/events.ts'
import type { Deps } from '../infra/deps.ts'
import type { KafkaHandle } from '../infra/kafka.ts'
import { retry, type RetryPolicy } from './retry.ts'
import type { EventIds } from './store.ts'
import { prepareBatch, storeBatch, type PreparedBatch, type Refused, type Rejected } from './writer.ts'

const HEARTBEAT_MS = 3000

/** One consumer group per event topic: aggregators of another topic never join its rebalances. */
export const consumerGroup = (topic: string): string => `meterbill-aggregator.${topic}`

export interface AggregatorOptions {
  /** Test hook: runs after a chunk's insert, before its offsets are committed. */
  afterInsert?: (chunk: { partition: number; first: string; last: string }) => Promise<void>
}

interface Dead {
  message: KafkaMessage
  /** The element of the record that is not an event, as text for the dead-letter topic. */
  value: string
  raw: unknown
  reason: string
}

interface Parsed {
  events: UsageEvent[]
  dead: Dead[]
}

/** Adds the events of one record (an event or an array of events) to `into`; what is not an event is dead. */
function parseInto(into: Parsed, message: KafkaMessage): void {
  const text = message.value?.toString('utf8') ?? ''
  if (text === '') {
    into.dead.push({ message, value: '', raw: undefined, reason: 'empty record' })
    return
  }
  for (const d of decodeRecord(text)) {
    if (d.ok) into.events.push(d.event)
    else into.dead.push({ message, value: typeof d.raw === 'string' ? d.raw : JSON.stringify(d.raw), raw: d.raw, reason: d.reason })
  }
}

/** Dead elements that still name their event are also recorded in ClickHouse, so the lookup can say why. */
function rejectedOf(dead: Dead[]): Rejected[] {
  return dead.flatMap(({ raw, reason }) => {
    const r = (raw ?? {}) as Record<string, unknown>
    const [id, tenantId, environmentId] = [r.id, r.tenant_id, r.environment_id]
    return typeof id === 'string' && typeof tenantId === 'string' && typeof environmentId === 'string' ? [{ event: { id, tenantId, environmentId }, reason }] : []
  })
}

/** A chunk handed to the insert pipeline: `done` settles once it is stored and committed (or given up). */
interface InFlight {
  partition: number
  first: string
  keys: EventIds
  done: Promise<{ refused: number }>
  /** The pipeline's run it belongs to: a failure ends the run, and chunks of an ended run are read again. */
  run: number
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

  /**
   * A chunk's insert or commit failed: it and every chunk behind it (they wait on it, so fail with it) are
   * read again from their first offsets. Their fetch positions had moved past them.
   */
  const rewind = (chunk: InFlight, err: unknown): void => {
    if (chunk.run !== run) return
    run++
    const from = new Map<number, string>()
    for (const c of pipeline) if (!from.has(c.partition)) from.set(c.partition, c.first)
    pipeline = []
    deps.logger.warn({ err, rewind: Object.fromEntries(from) }, 'usage batch not stored; reading it again')
    for (const [partition, offset] of from) {
      try {
        consumer.seek({ topic: kafka.topic, partition, offset })
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

  /** Dead records and refused events to the dead-letter topic, each with the reason and the record it came from. */
  const deadLetter = async (topic: string, partition: number, chunk: KafkaMessage[], dead: Dead[], refused: Refused[]): Promise<void> => {
    // Refusals are rare: the record of each is found by reading the chunk again.
    const holds = (m: KafkaMessage, e: UsageEvent) =>
      decodeRecord(m.value?.toString('utf8') ?? '').some((d) => d.ok && d.event.id === e.id && d.event.tenantId === e.tenantId && d.event.environmentId === e.environmentId)
    const recordOf = (e: UsageEvent) => chunk.find((m) => holds(m, e))!
    const source = (message: KafkaMessage, reason: string) => ({
      key: message.key,
      headers: { reason, source_topic: topic, source_partition: String(partition), source_offset: message.offset },
    })
    const messages = [
      ...dead.map((d) => ({ ...source(d.message, d.reason), value: d.value })),
      ...refused.map((r) => ({ ...source(recordOf(r.event), r.reason), value: encodeEvent(r.event) })),
    ]
    if (messages.length === 0) return
    for (const m of messages) deps.logger.warn({ partition, offset: m.headers.source_offset, reason: m.headers.reason }, 'record sent to the dead-letter topic')
    await retry(() => dlq.send({ topic: kafka.dlqTopic, acks: -1, messages }), policy)
  }

  const handle = async ({ batch: b, heartbeat: beat, resolveOffset, isRunning, isStale }: EachBatchPayload): Promise<void> => {
    heartbeat = beat
    for (let i = 0; i < b.messages.length; ) {
      // Whole records (one may hold a customer's events of a request) up to AGGREGATOR_MAX_ROWS events.
      const parsed: Parsed = { events: [], dead: [] }
      const start = i
      while (i < b.messages.length && parsed.events.length + parsed.dead.length < batch.aggregatorMaxRows) parseInto(parsed, b.messages[i++])
      const chunk = b.messages.slice(start, i)
      const range = { partition: b.partition, first: chunk[0].offset, last: chunk[chunk.length - 1].offset }
      const rejected = rejectedOf(parsed.dead)
      let previous: InFlight | undefined
      let prepared: PreparedBatch
      let current: number
      do {
        current = run
        previous = pipeline.at(-1)
        prepared = await prepareBatch(deps, parsed.events, rejected, policy, previous?.keys)
        // A failure meanwhile: the ids taken as stored were not; classify again.
      } while (current !== run)
      // Checked right before the chunk joins the pipeline (no await in between): stop() drains what joined.
      if (stopping || !isRunning() || isStale()) return
      const done = (async () => {
        // A chunk is inserted only once the one before it is stored.
        const before = await previous?.done
        // Ids the previous chunk could not store after all were taken as stored: classify again.
        const ready = before?.refused ? await prepareBatch(deps, parsed.events, rejected, policy) : prepared
        const refused = await storeBatch(deps, ready, `kafka:${b.topic}:${range.partition}:${range.first}-${range.last}`, policy)
        await deadLetter(b.topic, b.partition, chunk, parsed.dead, refused)
        deps.logger.debug({ ...range, ...ready.result, refused: refused.length }, 'usage batch stored')
        await options.afterInsert?.(range)
        await consumer.commitOffsets([{ topic: b.topic, partition: b.partition, offset: (BigInt(range.last) + 1n).toString() }])
        return { refused: refused.length }
      })()
      const entry: InFlight = { partition: range.partition, first: range.first, keys: prepared.keys, done, run }
      pipeline.push(entry)
      done.then(
        () => void (pipeline[0] === entry && pipeline.shift()),
        (err: unknown) => rewind(entry, err),
      )
      // The fetch position moves on; the commit follows the insert.
      resolveOffset(range.last)
      // Backpressure: one chunk inserting and this one waiting, no more.
      const beating = setInterval(() => void beat().catch(() => {}), HEARTBEAT_MS)
      await previous?.done.catch(() => {})
      clearInterval(beating)
      await beat()
    }
  }

  await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, partitionsConsumedConcurrently: 1, eachBatch: handle })
  return async () => {
    stopping = true
    // Drain the pipeline while still a member of the group, so its commits land.
    await pipeline.at(-1)?.done.catch(() => {})
    // Disconnect waits for the batch in hand; an uncommitted one is read again by the next member.
    await consumer.disconnect()
    await dlq.disconnect()
  }
}
