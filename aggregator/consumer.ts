// The aggregator role in Kafka mode: a consumer group reading the event topic in batches (bytes and
// linger by the fetch, records by chunking), one ClickHouse insert per chunk, offsets committed only after
// ClickHouse acknowledged it. A chunk's token is its topic/partition/offset range, so re-reading it after
// a crash between insert and commit stores nothing twice. While ClickHouse is down the partition's
// batch is retried in place: the consumer fetches nothing more (backpressure) and keeps its heartbeat.
// Records that are not events go to the dead-letter topic with the reason, then their offsets commit.
import type { Consumer, EachBatchPayload, KafkaMessage, Producer } from 'kafkajs'
import { decodeRecord, type UsageEvent } from '../core/events.ts'
import type { Deps } from '../infra/deps.ts'
import type { KafkaHandle } from '../infra/kafka.ts'
import { retry, type RetryPolicy } from './retry.ts'
import { writeBatch, type Rejected } from './writer.ts'

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

function parse(messages: KafkaMessage[]): { events: UsageEvent[]; dead: Dead[] } {
  const events: UsageEvent[] = []
  const dead: Dead[] = []
  for (const message of messages) {
    const text = message.value?.toString('utf8') ?? ''
    if (text === '') {
      dead.push({ message, value: '', raw: undefined, reason: 'empty record' })
      continue
    }
    for (const d of decodeRecord(text)) {
      if (d.ok) events.push(d.event)
      else dead.push({ message, value: typeof d.raw === 'string' ? d.raw : JSON.stringify(d.raw), raw: d.raw, reason: d.reason })
    }
  }
  return { events, dead }
}

/** Dead elements that still name their event are also recorded in ClickHouse, so the lookup can say why. */
function rejectedOf(dead: Dead[]): Rejected[] {
  return dead.flatMap(({ raw, reason }) => {
    const r = (raw ?? {}) as Record<string, unknown>
    const [id, tenantId, environmentId] = [r.id, r.tenant_id, r.environment_id]
    return typeof id === 'string' && typeof tenantId === 'string' && typeof environmentId === 'string' ? [{ event: { id, tenantId, environmentId }, reason }] : []
  })
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
    sessionTimeout: 30_000,
    heartbeatInterval: 3000,
  })
  const dlq: Producer = kafka.kafka.producer({ allowAutoTopicCreation: false })
  await Promise.all([consumer.connect(), dlq.connect()])
  await consumer.subscribe({ topic: kafka.topic, fromBeginning: true })
  let stopping = false

  const handle = async ({ batch: b, heartbeat, resolveOffset, isRunning, isStale }: EachBatchPayload): Promise<void> => {
    const policy: RetryPolicy = {
      attempts: Number.POSITIVE_INFINITY,
      baseMs: 200,
      maxMs: 5000,
      stopped: () => stopping || !isRunning() || isStale(),
      onError: (err, attempt) => {
        deps.logger.warn({ err, partition: b.partition, attempt }, 'usage batch not stored yet; retrying')
        heartbeat().catch(() => {})
      },
    }
    for (let i = 0; i < b.messages.length; i += batch.maxRows) {
      if (!isRunning() || isStale()) return
      const chunk = b.messages.slice(i, i + batch.maxRows)
      const first = chunk[0].offset
      const last = chunk[chunk.length - 1].offset
      const { events, dead } = parse(chunk)
      for (const d of dead) deps.logger.warn({ partition: b.partition, offset: d.message.offset, reason: d.reason }, 'record sent to the dead-letter topic')
      if (dead.length > 0) {
        await retry(
          () =>
            dlq.send({
              topic: kafka.dlqTopic,
              acks: -1,
              messages: dead.map(({ message, value, reason }) => ({
                key: message.key,
                value,
                headers: { reason, source_topic: b.topic, source_partition: String(b.partition), source_offset: message.offset },
              })),
            }),
          policy,
        )
      }
      const result = await writeBatch(deps, events, rejectedOf(dead), `kafka:${b.topic}:${b.partition}:${first}-${last}`, policy)
      deps.logger.debug({ partition: b.partition, first, last, ...result }, 'usage batch stored')
      await options.afterInsert?.({ partition: b.partition, first, last })
      resolveOffset(last)
      await consumer.commitOffsets([{ topic: b.topic, partition: b.partition, offset: (BigInt(last) + 1n).toString() }])
      await heartbeat()
    }
  }

  await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, partitionsConsumedConcurrently: 3, eachBatch: handle })
  return async () => {
    stopping = true
    // Disconnect waits for the batch in hand; an uncommitted one is read again by the next member.
    await consumer.disconnect()
    await dlq.disconnect()
  }
}
