// GET /health on the metrics listener, which every role has (the aggregator and the worker serve no API): the
// process's roles and engines, and for an aggregator in Kafka mode its consumer group, membership and partitions,
// from the group join kafkajs reports and from what the aggregator reports (reportAssignment).
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { consumerGroup } from '../aggregator/consumer.ts'
import { reportAssignment } from '../infra/kafka-assignment.ts'
import { startHarness, type Harness } from './harness.ts'
import { dropTopic, kafkaBrokers } from './kafka.ts'

// One chDB data directory per process: each test stops its harness before the next starts one.
let h: Harness | undefined
afterEach(async () => {
  await h?.stop()
  h = undefined
})

async function health(h: Harness): Promise<{ status: number; body: any }> {
  const res = await fetch(`http://127.0.0.1:${h.running.metricsPort}/health`)
  expect(res.headers.get('content-type')).toBe('application/json')
  return { status: res.status, body: await res.json() }
}

describe('GET /health on the metrics listener', () => {
  it('answers for a worker: its roles and engines', { timeout: 60_000 }, async () => {
    h = await startHarness({ roles: ['worker'], env: { KAFKA_BROKERS: '' } })
    const { status, body } = await health(h)
    expect(status).toBe(200)
    const { engines } = h.running.deps
    expect(body).toEqual({
      status: 'ok',
      pid: process.pid,
      roles: ['worker'],
      engines: { postgres: { kind: engines.postgres, status: 'ok' }, clickhouse: { kind: engines.clickhouse, status: 'ok' } },
    })
    expect((await fetch(`http://127.0.0.1:${h.running.metricsPort}/nothing`)).status).toBe(404)
  })
})

const brokers = await kafkaBrokers()
const topic = `usage-events-health-${process.pid}-${Date.now()}`

describe.skipIf(!brokers)('GET /health of an aggregator', () => {
  afterAll(async () => {
    await dropTopic(brokers!, topic)
  })

  it('shows its consumer group, its membership and the partitions it holds', { timeout: 90_000 }, async () => {
    h = await startHarness({ roles: ['aggregator'], env: { KAFKA_BROKERS: brokers!, KAFKA_TOPIC: topic, KAFKA_PARTITIONS: '4' } })
    let body: any
    for (const until = Date.now() + 60_000; Date.now() < until; await new Promise((r) => setTimeout(r, 250))) {
      body = (await health(h!)).body
      if (body.consumer?.state === 'joined') break
    }
    expect(body).toMatchObject({ status: 'ok', roles: ['aggregator'], engines: { kafka: { status: 'ok' } } })
    // The group's only member holds every partition.
    expect(body.consumer).toMatchObject({ group: consumerGroup(topic), topic, state: 'joined', leader: true, partitions: [0, 1, 2, 3], topic_partitions: 4 })
    expect(body.consumer.member_id).toEqual(expect.any(String))

    // What the aggregator reports after the join is what it holds.
    reportAssignment(h.running.deps, [3, 1])
    expect((await health(h!)).body.consumer).toMatchObject({ state: 'joined', partitions: [1, 3] })
  })
})
