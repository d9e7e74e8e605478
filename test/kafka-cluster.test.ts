// Kafka mode on a real three-node cluster (KAFKA_CLUSTER_SIZE=3 bash scripts/services.sh start, then
// KAFKA_CLUSTER_BROKERS=<its KAFKA_BROKERS>): the program creates its topics with KAFKA_REPLICATION_FACTOR=3 and
// KAFKA_MIN_INSYNC_REPLICAS=2, and intake's acks=all producer goes on being acknowledged while one node is stopped,
// every record stored once. Skipped without KAFKA_CLUSTER_BROKERS ("skipped: no Kafka cluster"): CI runs one broker.
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../core/config.ts'
import { openKafka, type KafkaHandle } from '../infra/kafka.ts'
import { openProducer, sendWith } from '../ingest/kafka-sink.ts'

const brokers = process.env.KAFKA_CLUSTER_BROKERS?.trim()
if (!brokers) console.warn('skipped: no Kafka cluster')
const ROOT = fileURLToPath(new URL('..', import.meta.url))
const run = promisify(execFile)

/** The script's node N is the N-th address of KAFKA_BROKERS it printed; its ports are base + 2(N - 1). */
function clusterEnv(list: string): NodeJS.ProcessEnv {
  const ports = list.split(',').map((b) => Number(b.trim().split(':').pop()))
  if (ports.some((p, i) => p !== ports[0] + 2 * i)) throw new Error(`KAFKA_CLUSTER_BROKERS ${list} is not a cluster of scripts/services.sh (ports base, base+2, ...)`)
  return { ...process.env, KAFKA_CLUSTER_SIZE: String(ports.length), KAFKA_CLUSTER_BASE_PORT: String(ports[0]) }
}
const services = (command: string, node: number) => run('bash', ['scripts/services.sh', command, String(node)], { cwd: ROOT, env: clusterEnv(brokers!) })

const topic = `usage-events-cluster-${process.pid}-${Date.now()}`
let kafka: KafkaHandle | undefined
let stopped: number | undefined

describe.skipIf(!brokers)('Kafka mode on a three-node cluster', () => {
  afterAll(async () => {
    if (stopped !== undefined) await services('start-node', stopped)
    if (kafka) {
      const admin = kafka.kafka.admin()
      await admin.connect()
      await admin.deleteTopics({ topics: [topic, kafka.dlqTopic] }).catch(() => {})
      await admin.disconnect()
      await kafka.close()
    }
  }, 60_000)

  it('keeps acknowledging intake with one node stopped, each record stored once, and the node rejoins', { timeout: 60_000 }, async () => {
    const config = loadConfig({ KAFKA_BROKERS: brokers, KAFKA_TOPIC: topic, KAFKA_PARTITIONS: '3', KAFKA_REPLICATION_FACTOR: '3', KAFKA_MIN_INSYNC_REPLICAS: '2', LOG_LEVEL: 'silent' })
    kafka = openKafka({ ...config, kafkaBrokers: config.kafkaBrokers! })
    const producer = await openProducer(kafka)
    const produce = sendWith(producer, topic)
    const batch = (from: number) => {
      const keys = Array.from({ length: 30 }, (_, i) => `t:e:c${from + i}`)
      return { keys, values: keys.map((k) => `["${k}"]`) }
    }
    const admin = kafka.kafka.admin()
    await admin.connect()
    const isr = async () => (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0].partitions.map((p) => p.isr.length)
    const stored = async () => (await admin.fetchTopicOffsets(topic)).reduce((n, p) => n + Number(p.high), 0)
    try {
      expect(await kafka.partitions()).toBe(3)
      expect(await isr()).toEqual([3, 3, 3])
      await produce(batch(0))

      // The node that leads partition 0 (the script's node N has node.id N); its partitions' leaders move to in-sync replicas.
      stopped = (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0].partitions.find((p) => p.partitionId === 0)!.leader
      await services('stop-node', stopped)
      await produce(batch(30))
      await produce(batch(60))
      expect(await isr()).toEqual([2, 2, 2])
      expect(await stored()).toBe(90)

      await services('start-node', stopped)
      stopped = undefined
      for (const until = Date.now() + 30_000; Date.now() < until && (await isr()).some((n) => n < 3); ) await new Promise((r) => setTimeout(r, 500))
      expect(await isr()).toEqual([3, 3, 3])
      await produce(batch(90))
      expect(await stored()).toBe(120)
    } finally {
      await admin.disconnect()
      await producer.disconnect()
    }
  })
})
