// Kafka-mode intake against a real broker, with this process cut off from it and reconnected: while the
// broker cannot be reached the answer is 503 and the client's retry of the same ids counts each once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../test/harness.ts'
import { cuttableSockets, kafkaBrokers } from '../test/kafka.ts'
import { readyMeter, usage } from '../test/usage-helpers.ts'
import { openKafka } from '../infra/kafka.ts'
import { openProducer, sendWith, threadedKafkaSink } from './kafka-sink.ts'
import { attachSink } from './sink.ts'

const brokers = await kafkaBrokers()
let h: Harness
let meter: string

const net = cuttableSockets()

const body = (ids: string[]) => ({ events: ids.map((id) => ({ event_id: id, event_name: 'ping', external_customer_id: 'k1', timestamp: '2024-09-01T00:00:00Z' })) })

describe.skipIf(!brokers)('Kafka intake when the broker goes away', () => {
  beforeAll(async () => {
    h = await startHarness({
      roles: ['api', 'ingest', 'aggregator'],
      env: { KAFKA_BROKERS: brokers!, KAFKA_TOPIC: `usage-events-intake-${process.pid}-${Date.now()}`, METER_BACKFILL_SETTLE_SECONDS: '0' },
    })
    // Intake produces through sockets the test can cut; the aggregator keeps its own connection.
    const handle = openKafka({ ...h.config, kafkaBrokers: brokers!.split(',') }, { socketFactory: net.factory })
    // The producer runs on this thread (in place of the producer thread) so that it uses those sockets.
    const producerHere = async () => {
      const producer = await openProducer(handle)
      return { produce: sendWith(producer, handle.topic), close: () => producer.disconnect(), exited: new Promise<void>(() => {}) }
    }
    attachSink(h.running.deps, await threadedKafkaSink(h.running.deps, producerHere))
    meter = await readyMeter(h, { name: 'pings', event_name: 'ping', aggregation: { type: 'COUNT' } })
  })
  afterAll(() => h?.stop())

  it('accepts after the ack, answers 503 while the broker is unreachable, and counts retried ids once', { timeout: 120_000 }, async () => {
    expect((await h.http('POST', '/v1/events/bulk', { body: body(['p1', 'p2']) })).status).toBe(202)
    net.cut()
    const t = Date.now()
    const down = await h.http('POST', '/v1/events/bulk', { body: body(['p2', 'p3', 'p4']) })
    expect(down.status).toBe(503)
    expect(Date.now() - t).toBeLessThan(15_000)
    expect(down.body.code).toBe('service_unavailable')
    net.restore()
    // The client retries, as told by Retry-After, until the broker is back.
    let retried = 0
    for (let until = Date.now() + 60_000; Date.now() < until; await new Promise((r) => setTimeout(r, 1000))) {
      retried = (await h.http('POST', '/v1/events/bulk', { body: body(['p2', 'p3', 'p4']) })).status
      if (retried === 202) break
    }
    expect(retried).toBe(202)
    const deadline = Date.now() + 30_000
    let value = ''
    while (Date.now() < deadline && value !== '4') {
      value = (await usage(h, { meter_id: meter, start_time: '2024-09-01T00:00:00Z', end_time: '2024-09-02T00:00:00Z' })).value
      await new Promise((r) => setTimeout(r, 200))
    }
    expect(value).toBe('4')
    expect((await h.http('GET', '/v1/events/lookup?event_id=p2')).body.status).toBe('duplicate')
  })
})
