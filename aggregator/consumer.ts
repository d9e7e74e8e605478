// The aggregator role in Kafka mode: a consumer group reading the event topic in batches (bytes and
// linger by the fetch, rows by chunking), one ClickHouse insert per chunk, offsets committed only after
// ClickHouse acknowledged it. A chunk's token is its topic/partition/offset range, so re-reading it after
// a crash between insert and commit stores nothing twice. While ClickHouse is down the partition's
// batch is retried in place: the consumer fetches nothing more (backpressure) and keeps its heartbeat.
// Records that are not events go to the dead-letter topic with the reason, then their offsets commit.
import type { Consumer, EachBatchPayload, KafkaMessage, Producer } from 'kafkajs'
import { decodeEvent, type UsageEvent } from '../core/events.ts'
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

function parse(messages: KafkaMessage[]): { events: UsageEvent[]; dead: { message: KafkaMessage; reason: string }[] } {
  const events: UsageEvent[] = []
  const dead: { message: KafkaMessage; reason: string }[] = []
  for (const message of messages) {
    const decoded = message.value ? decodeEvent(message.value.toString('utf8')) : { ok: false as const, reason: 'empty record' }
    if (decoded.ok) events.push(decoded.event)
    else dead.push({ message, reason: decoded.reason })
  }
  return { events, dead }
}

/** Dead records that still name their event are also recorded in ClickHouse, so the lookup can say why. */
function rejectedOf(dead: { message: KafkaMessage; reason: string }[]): Rejected[] {
  return dead.flatMap(({ message, reason }) => {
    try {
      const raw = JSON.parse(message.value?.toString('utf8') ?? '') as Record<string, unknown>
      const [id, tenantId, environmentId] = [raw.id, raw.tenant_id, raw.environment_id]
      if (typeof id === 'string' && typeof tenantId === 'string' && typeof environmentId === 'string') {
        return [{ event: { id, tenantId, environmentId }, reason }]
      }
    } catch {
      // Not JSON: the dead-letter topic is its only record.
    }
    return []
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
              messages: dead.map(({ message, reason }) => ({
                key: message.key,
                value: message.value,
                headers: { reason, source_topic: b.topic, source_partition: String(b.partition), source_offset: message.offset },
              })),
            }),
          policy,
        )
      }
      await writeBatch(deps, events, rejectedOf(dead), `kafka:${b.topic}:${b.partition}:${first}-${last}`, policy)
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
