// Kafka mode: an idempotent producer with acks from all in-sync replicas; the reply waits for the ack.
// Keyed tenant:environment:external_customer_id, so one customer's events (and every retry of one of
// their event ids) land in one partition, in order, and are deduplicated by one consumer in sequence.
import type { Producer } from 'kafkajs'
import { encodeEvent, type UsageEvent } from '../core/events.ts'
import { serviceUnavailable } from '../core/errors.ts'
import type { Deps } from '../infra/deps.ts'
import type { KafkaHandle } from '../infra/kafka.ts'
import type { Sink } from './sink.ts'

export const eventKey = (e: UsageEvent): string => `${e.tenantId}:${e.environmentId}:${e.externalCustomerId}`

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
  return {
    kind: 'kafka',
    async write(events) {
      try {
        await producer.send({ topic: kafka.topic, acks: -1, messages: events.map((e) => ({ key: eventKey(e), value: encodeEvent(e) })) })
      } catch (err) {
        deps.logger.warn({ err }, 'usage events not acknowledged by Kafka')
        throw serviceUnavailable('the event broker is unavailable; nothing was accepted, retry with the same event ids')
      }
    },
    close: () => producer.disconnect(),
  }
}
