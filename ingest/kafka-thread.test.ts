// Kafka mode as the ingest role runs it, with the producer on its own thread: what a bulk request puts on the
// topic, read back with a plain consumer — one record per customer and request, keyed tenant:environment:customer,
// in the partition kafkajs' default partitioner gives that key, events in request order and numbers exact.
import { Kafka, logLevel } from 'kafkajs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { decodeRecord, normalizeEvent } from '../core/events.ts'
import { startHarness, type Harness } from '../test/harness.ts'
import { dropTopic, kafkaBrokers } from '../test/kafka.ts'
import { keyPartition } from '../core/partition.ts'
import { producerThread, threadedKafkaSink, type ProducerThread } from './kafka-sink.ts'

const brokers = await kafkaBrokers()
const topic = `usage-events-thread-${process.pid}-${Date.now()}`
let h: Harness

describe.skipIf(!brokers)('Kafka intake through the producer thread', () => {
  beforeAll(async () => {
    h = await startHarness({ roles: ['api', 'ingest'], env: { KAFKA_BROKERS: brokers!, KAFKA_TOPIC: topic } })
  })
  afterAll(async () => {
    await h?.stop()
    // The topics go with the test: its 1000-event request fills them with hundreds of KiB on the shared broker.
    await dropTopic(brokers!, topic)
  })

  it('writes keyed, ordered records of exact events, and only then answers', { timeout: 60_000 }, async () => {
    const events = Array.from({ length: 9 }, (_, i) => ({
      event_id: `t-${i}`,
      event_name: 'api.call',
      external_customer_id: ` c${i % 3} `,
      timestamp: `2024-05-0${1 + i}T10:00:00.5+02:00`,
      properties: { tokens: i === 4 ? 'BIG' : i },
    }))
    // A number JSON.parse would round: the record must carry it digit for digit.
    const raw = JSON.stringify({ events }).replace('"BIG"', '12345678901234567890.5')
    const res = await h.http('POST', '/v1/events/bulk', { raw, headers: { 'content-type': 'application/json' } })
    expect(res.status).toBe(202)
    expect(res.body).toEqual({ event_ids: events.map((e) => e.event_id), failed: [] })

    const consumer = new Kafka({ brokers: brokers!.split(','), logLevel: logLevel.NOTHING }).consumer({ groupId: `${topic}-reader` })
    const records: { partition: number; key: string; value: string }[] = []
    await consumer.connect()
    await consumer.subscribe({ topic, fromBeginning: true })
    await consumer.run({ eachMessage: async ({ partition, message }) => void records.push({ partition, key: message.key!.toString(), value: message.value!.toString() }) })
    for (const deadline = Date.now() + 30_000; records.length < 3 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 100))
    await consumer.disconnect()

    expect(records).toHaveLength(3)
    const byCustomer = new Map<string, string[]>()
    for (const r of records) {
      expect(r.partition).toBe(keyPartition(r.key, h.config.kafkaTopics.partitions))
      const decoded = decodeRecord(r.value).map((d) => (d.ok ? d.event : undefined))
      for (const e of decoded) expect(r.key).toBe(`${e!.tenantId}:${e!.environmentId}:${e!.externalCustomerId}`)
      byCustomer.set(decoded[0]!.externalCustomerId, decoded.map((e) => `${e!.id} ${e!.timestamp.toISOString()} ${String(e!.properties.tokens)}`))
    }
    expect(Object.fromEntries(byCustomer)).toEqual({
      c0: ['t-0 2024-05-01T08:00:00.500Z 0', 't-3 2024-05-04T08:00:00.500Z 3', 't-6 2024-05-07T08:00:00.500Z 6'],
      c1: ['t-1 2024-05-02T08:00:00.500Z 1', 't-4 2024-05-05T08:00:00.500Z 12345678901234567890.5', 't-7 2024-05-08T08:00:00.500Z 7'],
      c2: ['t-2 2024-05-03T08:00:00.500Z 2', 't-5 2024-05-06T08:00:00.500Z 5', 't-8 2024-05-09T08:00:00.500Z 8'],
    })
  })

  it('splits a customer whose events exceed one record over several, each within 256 KiB, in order', { timeout: 60_000 }, async () => {
    const events = Array.from({ length: 1000 }, (_, i) => ({ event_id: `big-${i}`, event_name: 'api.call', external_customer_id: 'big', properties: { note: 'x'.repeat(300) } }))
    const res = await h.http('POST', '/v1/events/bulk', { body: { events } })
    expect(res.status).toBe(202)

    const consumer = new Kafka({ brokers: brokers!.split(','), logLevel: logLevel.NOTHING }).consumer({ groupId: `${topic}-big-reader` })
    const records: { partition: number; value: string }[] = []
    let ids = 0
    await consumer.connect()
    await consumer.subscribe({ topic, fromBeginning: true })
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        if (!message.key!.toString().endsWith(':big')) return
        records.push({ partition, value: message.value!.toString() })
        ids += decodeRecord(message.value!.toString()).length
      },
    })
    for (const deadline = Date.now() + 30_000; ids < events.length && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 100))
    await consumer.disconnect()

    expect(records.length).toBeGreaterThan(1)
    for (const r of records) expect(r.value.length).toBeLessThanOrEqual(256 * 1024)
    expect(new Set(records.map((r) => r.partition)).size).toBe(1)
    const read = records.flatMap((r) => decodeRecord(r.value).map((d) => (d.ok ? d.event.id : 'invalid')))
    expect(read).toEqual(events.map((e) => e.event_id))
  })

  it('replaces a producer thread that ended: the next batch is acknowledged through a new one', { timeout: 60_000 }, async () => {
    const threads: ProducerThread[] = []
    const sink = await threadedKafkaSink(h.running.deps, async (deps) => {
      const t = await producerThread(deps)
      threads.push(t)
      return t
    })
    const event = (id: string) => {
      const n = normalizeEvent({ event_name: 'e', external_customer_id: 'c' }, { tenantId: 't', environmentId: 'env' }, { receivedAt: new Date(), maxFutureMs: 0, newId: () => id })
      if (!n.ok) throw new Error('invalid')
      return n.event
    }
    try {
      await sink.write([event('r1')], 100)
      expect(threads).toHaveLength(1)
      await threads[0].close()
      await sink.write([event('r2')], 100)
      expect(threads).toHaveLength(2)
    } finally {
      await sink.close()
    }
  })
})
