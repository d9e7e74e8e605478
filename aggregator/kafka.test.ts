// Kafka mode on a real broker: intake replies after the ack, the aggregator stores every event once
// through a crash between insert and commit, a replay of the whole topic, resent ids with other
// timestamps, dead records and a lost broker connection; the rollups agree with a raw recount.
import { Kafka, logLevel } from 'kafkajs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../test/harness.ts'
import { cuttableSockets, kafkaBrokers } from '../test/kafka.ts'
import { openKafka } from '../infra/kafka.ts'
import { readyMeter, send, usage, type TestEvent } from '../test/usage-helpers.ts'
import { meterUsage } from '../domains/usage/queries/service.ts'
import { consumerGroup, startAggregator } from './consumer.ts'

const brokers = await kafkaBrokers()
const topic = `usage-events-test-${process.pid}-${Date.now()}`
let h: Harness
let count: string
let sum: string
let stopAggregator: (() => Promise<void>) | undefined

const RANGE = { start_time: '2024-07-01T00:00:00Z', end_time: '2024-08-01T00:00:00Z' }
const events = (prefix: string, n: number, customers: number): TestEvent[] =>
  Array.from({ length: n }, (_, i) => ({
    id: `${prefix}-${i}`,
    customer: `c${i % customers}`,
    at: new Date(Date.UTC(2024, 6, 1 + (i % 28), i % 24, i % 60, i % 60, i % 1000)).toISOString(),
    props: { n: (i % 7) + 0.25 },
  }))
const expectedSum = (n: number) => Array.from({ length: n }, (_, i) => (i % 7) + 0.25).reduce((a, b) => a + b, 0)

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let failure: unknown
  // A check that throws is tried again: after a test blocks this process, a kept-alive connection may be reset once.
  while (!(await check().catch((err: unknown) => {
      failure = err
      return false
    }))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`, { cause: failure })
    await new Promise((r) => setTimeout(r, 200))
  }
}

/** An aggregator that dies after its first insert, before the commit; then one that goes on from there. */
async function dieBetweenInsertAndCommit(): Promise<void> {
  let inserted = 0
  stopAggregator = await startAggregator(h.running.deps, h.running.deps.kafka!, {
    afterInsert: async () => {
      inserted++
      throw new Error('killed between insert and commit')
    },
  })
  await until('the dying aggregator inserted a chunk', async () => inserted > 0)
  await stopAggregator()
  stopAggregator = await startAggregator(h.running.deps, h.running.deps.kafka!)
}

const total = async (meter: string, customer?: string) =>
  (await usage(h, { meter_id: meter, ...RANGE, ...(customer ? { external_customer_id: customer } : {}) })).value

describe.skipIf(!brokers)('Kafka mode', () => {
  beforeAll(async () => {
    // The aggregator is started by the tests themselves, so that they can crash and restart it.
    h = await startHarness({ roles: ['api', 'ingest'], env: { KAFKA_BROKERS: brokers!, KAFKA_TOPIC: topic, METER_BACKFILL_SETTLE_SECONDS: '0', AGGREGATOR_MAX_ROWS: '500' } })
    count = await readyMeter(h, { name: 'count', event_name: 'job', aggregation: { type: 'COUNT' } })
    sum = await readyMeter(h, { name: 'sum', event_name: 'job', aggregation: { type: 'SUM', field: 'n' } })
  })
  afterAll(async () => {
    await stopAggregator?.()
    await h?.stop()
  })

  it('reports the broker in /v1/health', async () => {
    const health = await h.http('GET', '/v1/health', { key: null })
    expect(health.body.engines.kafka).toEqual({ kind: 'kafka', status: 'ok' })
  })

  it('stores each event once although the aggregator dies between insert and commit', async () => {
    await send(h, events('a', 3000, 40), { customer: 'x', name: 'job' })
    await dieBetweenInsertAndCommit()
    await until('all 3000 events are counted', async () => (await total(count)) === '3000')
    expect(await total(sum)).toBe(String(expectedSum(3000)))
  })

  it('keeps totals exact when 10% of the events are resent with the same id and another timestamp', async () => {
    const resent = events('a', 3000, 40)
      .filter((_, i) => i % 10 === 0)
      .map((e) => ({ ...e, at: '2024-07-30T12:00:00.000Z', props: { n: 1000 } }))
    await send(h, resent, { customer: 'x', name: 'job' })
    await until('the resent copies are dropped', async () => (await h.http('GET', `/v1/events/lookup?event_id=${resent[299].id}`)).body.status === 'duplicate')
    expect(await total(count)).toBe('3000')
    expect(await total(sum)).toBe(String(expectedSum(3000)))
  })

  it('replays the whole topic from the start without counting anything twice', async () => {
    await stopAggregator!()
    const admin = new Kafka({ brokers: brokers!.split(','), logLevel: logLevel.NOTHING }).admin()
    await admin.connect()
    await admin.resetOffsets({ groupId: consumerGroup(topic), topic, earliest: true })
    stopAggregator = await startAggregator(h.running.deps, h.running.deps.kafka!)
    await until('the replay caught up', async () => {
      const [committed] = await admin.fetchOffsets({ groupId: consumerGroup(topic), topics: [topic] })
      const ends = await admin.fetchTopicOffsets(topic)
      return ends.every((e) => committed.partitions.find((p) => p.partition === e.partition)?.offset === e.high)
    })
    await admin.disconnect()
    expect(await total(count)).toBe('3000')
    expect(await total(sum)).toBe(String(expectedSum(3000)))
    expect(await total(count, 'c7')).toBe('75')
  })

  it('sends records that are not events to the dead-letter topic, with the reason', async () => {
    const kafka = new Kafka({ brokers: brokers!.split(','), logLevel: logLevel.NOTHING })
    const producer = kafka.producer()
    await producer.connect()
    const stranger = { id: 'bad-1', tenant_id: h.tenant.tenantId, environment_id: h.tenant.environments.production, external_customer_id: 'x' }
    await producer.send({ topic, messages: [{ key: 'k', value: 'not json' }, { key: 'k', value: JSON.stringify(stranger) }] })
    await producer.disconnect()
    await until('the lookup reports the rejected record', async () => (await h.http('GET', '/v1/events/lookup?event_id=bad-1')).status === 200)
    expect((await h.http('GET', '/v1/events/lookup?event_id=bad-1')).body).toMatchObject({ status: 'rejected', reason: 'event_name is missing' })

    const consumer = kafka.consumer({ groupId: `dlq-reader-${process.pid}-${Date.now()}` })
    await consumer.connect()
    await consumer.subscribe({ topic: `${topic}-dlq`, fromBeginning: true })
    const reasons: string[] = []
    await consumer.run({ eachMessage: async ({ message }) => void reasons.push(String(message.headers?.reason)) })
    await until('both dead records are read back', async () => reasons.length >= 2, 30_000)
    await consumer.disconnect()
    expect(reasons.sort()).toEqual(['event_name is missing', 'not JSON'])
    expect(await total(count)).toBe('3000')
  })

  it('keeps totals exact when the aggregator loses the broker, and catches up after reconnecting', async () => {
    await stopAggregator!()
    const net = cuttableSockets()
    stopAggregator = await startAggregator(h.running.deps, openKafka({ ...h.config, kafkaBrokers: brokers!.split(',') }, { socketFactory: net.factory }))
    const batch = events('b', 2000, 40)
    await send(h, batch.slice(0, 1000), { customer: 'x', name: 'job' })
    await until('the first half is counted', async () => (await total(count)) === '4000')
    net.cut()
    // Intake has its own connection: these wait in Kafka until the aggregator is back.
    await send(h, batch.slice(1000), { customer: 'x', name: 'job' })
    await new Promise((r) => setTimeout(r, 3000))
    expect(await total(count)).toBe('4000')
    net.restore()
    await until('all 5000 events are counted', async () => (await total(count)) === '5000', 120_000)
    expect(await total(sum)).toBe(String(expectedSum(3000) + expectedSum(2000)))
  }, 180_000)

  it('reads a failed chunk again, and the chunks queued behind it, although the fetch had moved past them', async () => {
    await stopAggregator!()
    let failures = 0
    stopAggregator = await startAggregator(h.running.deps, h.running.deps.kafka!, {
      // The first chunk's commit fails after a pause in which the next chunks are fetched and queued.
      afterInsert: async () => {
        if (failures++ > 0) return
        await new Promise((r) => setTimeout(r, 1000))
        throw new Error('commit lost')
      },
    })
    await send(h, events('c', 2000, 40), { customer: 'x', name: 'job' })
    await until('all 7000 events are counted', async () => (await total(count)) === '7000')
    expect(failures).toBeGreaterThan(4)
    expect(await total(sum)).toBe(String(expectedSum(3000) + 2 * expectedSum(2000)))
  })

  it('recovers when the group drops it (its thread blocked past the session timeout) and counts each event once', async () => {
    await stopAggregator!()
    // Sent first: the block below stops this whole process, the API included.
    await send(h, events('d', 1000, 40), { customer: 'x', name: 'job' })
    const inserted: string[] = []
    stopAggregator = await startAggregator(h.running.deps, h.running.deps.kafka!, {
      // Nothing runs for 30 s, heartbeats included: the coordinator forgets the member (session 10 s), so
      // this chunk's commit is refused and the member must rejoin and read it again. Three times the session:
      // a broker starved of CPU checks its sessions late (at 12 s it sometimes had not yet).
      afterInsert: async ({ partition, first }) => {
        inserted.push(`${partition}:${first}`)
        if (inserted.length === 1) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 30_000)
      },
    })
    // The blocked chunk was inserted before the block, so the count is whole at once: wait for what proves the rejoin,
    // the chunk inserted again after its commit was refused (the count alone once passed before it, and failed).
    await until('the blocked chunk is inserted again', async () => inserted.filter((r) => r === inserted[0]).length > 1, 90_000)
    await until('all 8000 events are counted', async () => (await total(count)) === '8000')
    expect(await total(sum)).toBe(String(expectedSum(3000) + 2 * expectedSum(2000) + expectedSum(1000)))
  }, 120_000)

  it('per-minute views agree with a recount from raw rows', async () => {
    const scope = { tenantId: h.tenant.tenantId, environmentId: h.tenant.environments.production }
    for (const meterId of [count, sum]) {
      const q = { meterId, start: new Date(RANGE.start_time), end: new Date(RANGE.end_time), windowSize: 'DAY' as const }
      const [views, raw] = await Promise.all([meterUsage(h.running.deps, scope, q), meterUsage(h.running.deps, scope, { ...q, source: 'raw' })])
      expect(views.results.map((w) => w.value.toFixed())).toEqual(raw.results.map((w) => w.value.toFixed()))
    }
  })

  it("reports what the client sent after a crash: a chunk read again adds no duplicates, a real resend is one", async () => {
    await stopAggregator?.()
    // Last: its events would count in the totals the tests above check. One customer: one partition, and the resend in
    // the same chunk as its original.
    const once = events('once', 300, 1).map((e) => ({ ...e, customer: 'replayed' }))
    await send(h, once, { customer: 'replayed', name: 'job' })
    await send(h, [{ ...once[7], at: '2024-07-20T00:00:00.000Z' }], { customer: 'replayed', name: 'job' })
    await dieBetweenInsertAndCommit()
    await until('the 300 events are counted', async () => (await total(count, 'replayed')) === '300')
    await until('the resend is recorded', async () => (await h.http('GET', '/v1/events/lookup?event_id=once-7')).body.status === 'duplicate')
    expect((await h.http('GET', '/v1/events/lookup?event_id=once-7')).body.duplicates).toHaveLength(1)
    expect((await h.http('GET', '/v1/events/lookup?event_id=once-0')).body.status).toBe('stored')
    const drops = await h.running.deps.ch.client.query({ query: "SELECT count() AS n FROM event_drops WHERE startsWith(event_id, 'once-')", format: 'JSONEachRow' })
    expect(Number((await drops.json<{ n: string }>())[0].n)).toBe(1)
  })

  it('counts each event once when a second aggregator joins while the first holds chunks in its pipeline', async () => {
    await stopAggregator?.()
    const moving = events('moving', 6000, 40).map((e) => ({ ...e, customer: `m${e.customer}` }))
    await send(h, moving, { customer: 'm', name: 'job' })
    // The first member's inserts are slow to commit, so chunks wait in its pipeline when the group rebalances.
    let inserted = 0
    const first = await startAggregator(h.running.deps, h.running.deps.kafka!, {
      afterInsert: async () => {
        inserted++
        await new Promise((r) => setTimeout(r, 400))
      },
    })
    let second: (() => Promise<void>) | undefined
    try {
      await until('the first aggregator inserted a chunk', async () => inserted > 0)
      second = await startAggregator(h.running.deps, h.running.deps.kafka!)
      const counts = async () => {
        const rs = await h.running.deps.ch.client.query({ query: "SELECT count() AS n, uniqExact(id) AS ids FROM events WHERE startsWith(id, 'moving-')", format: 'JSONEachRow' })
        return (await rs.json<{ n: string; ids: string }>())[0]
      }
      await until('the 6000 events are stored', async () => Number((await counts()).ids) === 6000, 120_000)
      // Nothing late: a chunk inserted twice would add rows after the ids were all there.
      await new Promise((r) => setTimeout(r, 3000))
      expect(await counts()).toEqual({ n: '6000', ids: '6000' })
    } finally {
      await second?.()
      await first()
      stopAggregator = undefined
    }
  }, 180_000)
})
