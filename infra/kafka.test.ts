// The topics this program creates on a real broker: partitions, replication factor and min.insync.replicas from the
// configuration; an existing topic left as it is, with a warning when its partition count differs.
import { ConfigResourceTypes } from 'kafkajs'
import { pino } from 'pino'
import { afterAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../core/config.ts'
import { kafkaBrokers } from '../test/kafka.ts'
import { openKafka, type KafkaHandle } from './kafka.ts'

const brokers = await kafkaBrokers()
const topic = `usage-events-topics-${process.pid}-${Date.now()}`
const handles: KafkaHandle[] = []

function open(env: Record<string, string>, lines: string[] = []): KafkaHandle {
  const config = loadConfig({ KAFKA_BROKERS: brokers!, KAFKA_TOPIC: topic, LOG_LEVEL: 'silent', ...env })
  const logger = pino({ level: 'warn', base: undefined }, { write: (line: string) => void lines.push(line) })
  const handle = openKafka({ ...config, kafkaBrokers: config.kafkaBrokers! }, { logger })
  handles.push(handle)
  return handle
}

describe.skipIf(!brokers)('Kafka topics', () => {
  afterAll(async () => {
    const admin = handles[0]?.kafka.admin()
    if (admin) {
      await admin.connect()
      await admin.deleteTopics({ topics: [topic, `${topic}-dlq`] }).catch(() => {})
      await admin.disconnect()
    }
    for (const h of handles) await h.close()
  })

  it('creates the event topic with KAFKA_PARTITIONS and both topics with KAFKA_MIN_INSYNC_REPLICAS', { timeout: 30_000 }, async () => {
    const lines: string[] = []
    const kafka = open({ KAFKA_PARTITIONS: '3', KAFKA_MIN_INSYNC_REPLICAS: '1' }, lines)
    await kafka.ensureTopics()
    expect(await kafka.partitions()).toBe(3)
    const admin = kafka.kafka.admin()
    await admin.connect()
    try {
      const { topics } = await admin.fetchTopicMetadata({ topics: [topic, kafka.dlqTopic] })
      expect(topics.map((t) => [t.name, t.partitions.length, t.partitions[0].replicas.length]).sort()).toEqual([
        [topic, 3, 1],
        [kafka.dlqTopic, 1, 1],
      ])
      const described = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [topic, kafka.dlqTopic].map((name) => ({ type: ConfigResourceTypes.TOPIC, name, configNames: ['min.insync.replicas'] })),
      })
      for (const r of described.resources) {
        expect(r.configEntries.find((e) => e.configName === 'min.insync.replicas')).toMatchObject({ configValue: '1', isDefault: false })
      }
    } finally {
      await admin.disconnect()
    }
    expect(lines).toEqual([])
  })

  it('answers the partitions of a topic another process creates while it asks (several processes starting at once)', { timeout: 30_000 }, async () => {
    const late = `${topic}-late`
    const kafka = openKafka({ ...loadConfig({ KAFKA_BROKERS: brokers!, KAFKA_TOPIC: late, LOG_LEVEL: 'silent' }), kafkaBrokers: brokers!.split(',') }, { logger: pino({ level: 'silent' }) })
    handles.push(kafka)
    const admin = kafka.kafka.admin()
    await admin.connect()
    try {
      const asked = kafka.partitions()
      await new Promise((resolve) => setTimeout(resolve, 1000))
      await admin.createTopics({ waitForLeaders: true, topics: [{ topic: late, numPartitions: 2 }] })
      expect(await asked).toBe(2)
    } finally {
      await admin.deleteTopics({ topics: [late] }).catch(() => {})
      await admin.disconnect()
    }
  })

  it('leaves an existing topic with another partition count as it is, and warns naming both counts', { timeout: 30_000 }, async () => {
    const lines: string[] = []
    const kafka = open({ KAFKA_PARTITIONS: '5' }, lines)
    await kafka.ensureTopics()
    await kafka.ensureTopics()
    expect(await kafka.partitions()).toBe(3)
    expect(lines).toHaveLength(1)
    const warning = JSON.parse(lines[0]) as { msg: string; partitions: number; configured: number }
    expect(warning).toMatchObject({ partitions: 3, configured: 5 })
    expect(warning.msg).toContain(`Kafka topic ${topic} has 3 partitions, KAFKA_PARTITIONS is 5`)
    expect(warning.msg).toContain('docs/operations.md, "Scaling out"')
  })

  it('names KAFKA_REPLICATION_FACTOR when the cluster has fewer brokers than replicas', { timeout: 30_000 }, async () => {
    const kafka = open({ KAFKA_TOPIC: `${topic}-rf`, KAFKA_REPLICATION_FACTOR: '100' })
    await expect(kafka.ensureTopics()).rejects.toThrow(/^KAFKA_REPLICATION_FACTOR 100: the cluster cannot create topics/)
  })
})
