// Kafka mode: an idempotent producer with acks from all in-sync replicas; the reply waits for the ack.
// Keyed tenant:environment:external_customer_id, so one customer's events (and every retry of one of
// their event ids) land in one partition, in order, and are deduplicated by one consumer in sequence.
import type { Producer } from 'kafkajs'
import { encodeEvent, type UsageEvent } from '../core/events.ts'
import type { Deps } from '../infra/deps.ts'
import type { KafkaHandle } from '../infra/kafka.ts'
import { batchedSink, type Sink } from './sink.ts'

export const eventKey = (e: UsageEvent): string => `${e.tenantId}:${e.environmentId}:${e.externalCustomerId}`

/**
 * How long a request waits for the ack. kafkajs keeps reconnecting to an unreachable broker for much longer;
 * past this the client gets 503 (a send that lands later is harmless: the retry's ids are deduplicated).
 */
export const ACK_TIMEOUT_MS = 8000
/** Events gathered into one produce request: far below the topics' max.message.bytes (infra/kafka.ts). */
const MAX_PRODUCE_BYTES = 2 * 1024 * 1024

/** A record holds at most this much: large enough to amortise the per-record cost, small for the consumer. */
const MAX_RECORD_BYTES = 256 * 1024

/**
 * Records of one key each, holding that key's events in order: fewer, larger records cost the producer
 * and the broker far less than one per event. A key with many events is split over several records.
 */
function records(events: UsageEvent[]): { key: string; value: string }[] {
  const open = new Map<string, { parts: string[]; bytes: number }>()
  const out: { key: string; value: string }[] = []
  const flush = (key: string, r: { parts: string[] }) => out.push({ key, value: `[${r.parts.join(',')}]` })
  for (const e of events) {
    const key = eventKey(e)
    const text = encodeEvent(e)
    let r = open.get(key)
    if (r && r.bytes + text.length > MAX_RECORD_BYTES) {
      flush(key, r)
      r = undefined
    }
    if (!r) open.set(key, (r = { parts: [], bytes: 0 }))
    r.parts.push(text)
    r.bytes += text.length + 1
  }
  for (const [key, r] of open) flush(key, r)
  return out
}

function withinAckTimeout<T>(p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no broker ack within ${ACK_TIMEOUT_MS} ms`)), ACK_TIMEOUT_MS)
  })
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer))
}

export async function kafkaSink(deps: Deps, kafka: KafkaHandle): Promise<Sink> {
  await kafka.ensureTopics()
  const producer: Producer = kafka.kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
    // Bounded, unlike kafkajs' idempotent default (forever): a down broker must become a 503. A producer retry that
    // duplicates a record is harmless: the aggregator stores each event id once.
    retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 2000 },
  })
  await producer.connect()
  // Concurrent requests share one produce request (the producer sends one at a time): each waits for its ack.
  return batchedSink(
    deps,
    'kafka',
    { maxRows: deps.config.batch.maxRows, maxBytes: MAX_PRODUCE_BYTES, lingerMs: Math.min(deps.config.batch.lingerMs, 5) },
    async (events) => void (await withinAckTimeout(producer.send({ topic: kafka.topic, acks: -1, messages: records(events) }))),
    'the event broker is unavailable',
    () => producer.disconnect(),
  )
}
