// Event imports in a deployment split by role, worked by a worker process without the ingest role: in Kafka mode
// it produces the events to the topic as intake does; in direct mode (the event log belongs to the ingest process)
// the task fails with the reason instead of waiting for ever.
import { Kafka, logLevel } from 'kafkajs'
import { afterAll, describe, expect, it } from 'vitest'
import { decodeRecord } from '../../core/events.ts'
import type { Actor } from '../../core/scope.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { dropTopic, kafkaBrokers } from '../../test/kafka.ts'
import { createTask, getTask } from './service.ts'
import { runTask } from './run.ts'

const actorOf = (h: Harness): Actor => ({ tenantId: h.tenant.tenantId, environmentId: h.tenant.environments.production, keyId: 'roles-test', roles: ['admin'] })
const eventsFile = (customer: string) =>
  [1, 2, 3].map((i) => JSON.stringify({ event_name: 'api.call', external_customer_id: customer, timestamp: '2026-11-01T10:00:00Z', properties: { n: i } })).join('\n')

async function importEvents(h: Harness, customer: string) {
  const deps = h.running.deps
  const task = await createTask(deps, actorOf(h), { task_type: 'IMPORT', entity_type: 'EVENTS', file_type: 'JSON', file: eventsFile(customer) })
  await runTask(deps, task.id)
  return getTask(deps, actorOf(h), task.id)
}

describe('a worker without the ingest role, direct mode', () => {
  let h: Harness | undefined
  afterAll(() => h?.stop())

  it('fails an event import with the reason, having stored nothing', { timeout: 60_000 }, async () => {
    h = await startHarness({ roles: ['worker'], env: { KAFKA_BROKERS: '' } })
    expect(await importEvents(h, 'direct-c')).toMatchObject({
      task_status: 'FAILED',
      processed_records: 0,
      successful_records: 0,
      error_summary: expect.stringContaining('events cannot be imported in this process: without KAFKA_BROKERS (direct mode)'),
    })
  })
})

const brokers = await kafkaBrokers()
const topic = `usage-events-task-roles-${process.pid}-${Date.now()}`

describe.skipIf(!brokers)('a worker without the ingest role, Kafka mode', () => {
  let h: Harness | undefined
  afterAll(async () => {
    await h?.stop()
    await dropTopic(brokers!, topic)
  })

  it('produces the imported events to the intake topic, keyed and with ids fixed by task and row', { timeout: 90_000 }, async () => {
    h = await startHarness({ roles: ['worker'], env: { KAFKA_BROKERS: brokers!, KAFKA_TOPIC: topic } })
    const task = await importEvents(h, 'kafka-c')
    expect(task).toMatchObject({ task_status: 'COMPLETED', total_records: 3, successful_records: 3, failed_records: 0 })

    const consumer = new Kafka({ brokers: brokers!.split(','), logLevel: logLevel.NOTHING }).consumer({ groupId: `${topic}-reader` })
    const records: { key: string; value: string }[] = []
    await consumer.connect()
    await consumer.subscribe({ topic, fromBeginning: true })
    await consumer.run({ eachMessage: async ({ message }) => void records.push({ key: message.key!.toString(), value: message.value!.toString() }) })
    for (const deadline = Date.now() + 30_000; records.length < 1 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 100))
    await consumer.disconnect()

    const { tenantId, environmentId } = actorOf(h)
    expect(records.map((r) => r.key)).toEqual([`${tenantId}:${environmentId}:kafka-c`])
    const events = decodeRecord(records[0].value).map((d) => (d.ok ? `${d.event.id} ${String(d.event.properties.n)}` : 'undecodable'))
    expect(events).toEqual([`${task.id}-1 1`, `${task.id}-2 2`, `${task.id}-3 3`])
  })
})
