// The Kafka client (KAFKA_BROKERS): one kafkajs instance per process, the topics this program owns,
// and a cheap liveness probe for /v1/health.
import { Kafka, logLevel, type Admin, type ISocketFactory } from 'kafkajs'
import type { Config } from '../core/config.ts'
import { createLogger, type Logger } from './logger.ts'

export interface KafkaHandle {
  kafka: Kafka
  topic: string
  dlqTopic: string
  /**
   * Creates the event and dead-letter topics if missing, with KAFKA_PARTITIONS, KAFKA_REPLICATION_FACTOR and
   * KAFKA_MIN_INSYNC_REPLICAS. An existing topic is left as it is: a partition count other than the configured one is
   * logged as a warning (docs/operations.md, "Scaling out").
   */
  ensureTopics(): Promise<void>
  /** The event topic's partition count as the broker has it now (not the configured one); fails when the topic is missing. */
  partitions(): Promise<number>
  /** Fails when no broker answers. */
  ping(): Promise<void>
  close(): Promise<void>
}

/** The topics' max.message.bytes: above the largest request body intake accepts by default (5 MiB). */
const MAX_BATCH_BYTES = 16 * 1024 * 1024

/**
 * `socketFactory` lets fault tests cut this process off a real broker and reconnect it; `logger` takes the warning
 * of ensureTopics (default: a logger at LOG_LEVEL, as a producer thread has no other).
 */
export function openKafka(
  config: Config & { kafkaBrokers: string[] },
  options: { socketFactory?: ISocketFactory; logger?: Logger } = {},
): KafkaHandle {
  const { logger = createLogger(config.logLevel), socketFactory } = options
  const kafka = new Kafka({
    ...(socketFactory ? { socketFactory } : {}),
    clientId: 'meterbill',
    brokers: config.kafkaBrokers,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 3000,
    requestTimeout: 10_000,
    // A request that cannot reach a broker fails within seconds: intake answers 503 rather than hanging.
    retry: { retries: 3, initialRetryTime: 200, maxRetryTime: 2000 },
  })
  const topic = config.kafkaTopic
  const dlqTopic = `${topic}-dlq`
  const settings = config.kafkaTopics
  /** The partition-count warning once per handle: the intake thread and the aggregator of one process each ensure the topics. */
  let warned = false
  let admin: Admin | undefined
  const connected = async (): Promise<Admin> => {
    if (!admin) {
      const a = kafka.admin()
      await a.connect()
      admin = a
    }
    return admin
  }
  const partitions = async (): Promise<number> => {
    const { topics } = await (await connected()).fetchTopicMetadata({ topics: [topic] })
    return topics[0].partitions.length
  }
  return {
    kafka,
    topic,
    dlqTopic,
    async ensureTopics() {
      const a = await connected()
      const existing = new Set(await a.listTopics())
      const missing = [topic, dlqTopic].filter((t) => !existing.has(t))
      if (missing.length > 0) {
        const created = await a
          .createTopics({
            waitForLeaders: true,
            topics: missing.map((t) => ({
              topic: t,
              numPartitions: t === topic ? settings.partitions : 1,
              replicationFactor: settings.replicationFactor,
              configEntries: [
                // A produce request carries up to a few MiB of one partition's records (a whole bulk request of one customer).
                { name: 'max.message.bytes', value: String(MAX_BATCH_BYTES) },
                ...(settings.minInsyncReplicas ? [{ name: 'min.insync.replicas', value: String(settings.minInsyncReplicas) }] : []),
              ],
            })),
          })
          .catch((err: Error & { errors?: (Error & { type?: string })[] }) => {
            // kafkajs answers "Topic creation errors" with one error per topic, which do not say what to change.
            const replication = (err.errors ?? []).find((e) => e.type === 'INVALID_REPLICATION_FACTOR')
            if (replication) {
              throw new Error(`KAFKA_REPLICATION_FACTOR ${settings.replicationFactor}: the cluster cannot create topics ${missing.join(', ')} (${replication.message})`, { cause: err })
            }
            throw err
          })
        // Created here: as configured. Not created: another process made it first (its settings are checked below).
        if (created && missing.includes(topic)) return
      }
      if (warned) return
      const actual = await partitions()
      if (actual !== settings.partitions) {
        warned = true
        logger.warn(
          { topic, partitions: actual, configured: settings.partitions },
          `Kafka topic ${topic} has ${actual} partitions, KAFKA_PARTITIONS is ${settings.partitions}: the topic is left as it is. ` +
            'Adding partitions moves customers to other partitions; see docs/operations.md, "Scaling out", for the procedure',
        )
      }
    },
    partitions,
    async ping() {
      try {
        await (await connected()).describeCluster()
      } catch (err) {
        // A broken connection is dropped so the next probe reconnects.
        await admin?.disconnect().catch(() => {})
        admin = undefined
        throw err
      }
    },
    async close() {
      await admin?.disconnect()
      admin = undefined
    },
  }
}
