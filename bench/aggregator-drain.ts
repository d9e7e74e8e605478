// Shared by the aggregator benches (kafka-aggregator, aggregator-history): the young generation the aggregator runs
// with, a topic pre-loaded with usage events, and how much of it the aggregator's consumer group has committed.
import { spawnSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import type { Admin, Kafka } from 'kafkajs'
import { encodeEvent } from '../core/events.ts'
import type { Scope } from '../core/scope.ts'
import { eventKey } from '../core/partition.ts'
import { consumerGroup } from '../aggregator/consumer.ts'
import { YOUNG_GENERATION } from './common.ts'

/**
 * The aggregator runs in the bench's process, with the young generation production processes get (the Dockerfile's
 * NODE_OPTIONS; docs/usage.md): V8 takes it only at start, so without it the bench runs itself again in a new process.
 */
export function ensureYoungGeneration(): void {
  if ([...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].includes(YOUNG_GENERATION)) return
  const child = spawnSync(process.execPath, [...process.execArgv, YOUNG_GENERATION, ...process.argv.slice(1)], { stdio: 'inherit' })
  process.exit(child.status ?? 1)
}

/**
 * Produces `n` events of `api.call` (UUID ids, 1,000 customers, now) into `topic`; returns the producer's events/s.
 * `same`: the ids and the instant to use instead (the same events into several topics: bench/scale-out.bench.ts).
 */
export async function preloadTopic(kafka: Kafka, topic: string, scope: Scope, n: number, same?: { ids: string[]; at: Date }): Promise<number> {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  const start = performance.now()
  const now = same?.at ?? new Date()
  for (let i = 0; i < n; i += 5000) {
    const messages = []
    for (let k = i; k < Math.min(n, i + 5000); k++) {
      // Ids as SDKs send them: short ids hid a lookup that slowed down past ~1 MB of ids (docs/usage.md).
      const e = { id: same?.ids[k] ?? randomUUID(), ...scope, eventName: 'api.call', externalCustomerId: `cust-${k % 1000}`, customerId: '', source: '', timestamp: now, receivedAt: now, properties: { tokens: k % 5000 } }
      messages.push({ key: eventKey(e), value: encodeEvent(e) })
    }
    await producer.send({ topic, acks: -1, messages })
  }
  const seconds = (performance.now() - start) / 1000
  await producer.disconnect()
  return n / seconds
}

/** Events of `topic` the aggregator's consumer group has committed, and the topic's end (both summed over partitions). */
export async function committedEvents(admin: Admin, topic: string): Promise<{ committed: number; end: number }> {
  const [[committed], ends] = await Promise.all([admin.fetchOffsets({ groupId: consumerGroup(topic), topics: [topic] }), admin.fetchTopicOffsets(topic)])
  const sum = (offsets: { offset: string }[]) => offsets.reduce((s, o) => s + Math.max(0, Number(o.offset)), 0)
  return { committed: sum(committed.partitions), end: sum(ends.map((e) => ({ offset: e.high }))) }
}
