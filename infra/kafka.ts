// The Kafka client (KAFKA_BROKERS): one kafkajs instance per process, the topics this program owns,
// and a cheap liveness probe for /v1/health.
import { Kafka, logLevel, type Admin, type ISocketFactory } from 'kafkajs'
import type { Config } from '../core/config.ts'

export interface KafkaHandle {
  kafka: Kafka
  topic: string
  dlqTopic: string
  /** Creates the event and dead-letter topics if missing. */
  ensureTopics(): Promise<void>
  /** Fails when no broker answers. */
  ping(): Promise<void>
  close(): Promise<void>
}

/** Partitions of the event topic: the aggregator scales out to this many consumers. */
export const EVENT_PARTITIONS = 6
/** The topics' max.message.bytes: above the largest request body intake accepts by default (5 MiB). */
const MAX_BATCH_BYTES = 16 * 1024 * 1024

/** `socketFactory` lets fault tests cut this process off a real broker and reconnect it. */
export function openKafka(config: Config & { kafkaBrokers: string[] }, options: { socketFactory?: ISocketFactory } = {}): KafkaHandle {
  const kafka = new Kafka({
    ...options,
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
  let admin: Admin | undefined
  const connected = async (): Promise<Admin> => {
    if (!admin) {
      const a = kafka.admin()
      await a.connect()
      admin = a
    }
    return admin
  }
  return {
    kafka,
    topic,
    dlqTopic,
    async ensureTopics() {
      const a = await connected()
      const existing = new Set(await a.listTopics())
      const missing = [topic, dlqTopic].filter((t) => !existing.has(t))
      if (missing.length === 0) return
      await a.createTopics({
        waitForLeaders: true,
        topics: missing.map((t) => ({
          topic: t,
          numPartitions: t === topic ? EVENT_PARTITIONS : 1,
          // A produce request carries up to a few MiB of one partition's records (a whole bulk request of one customer).
          configEntries: [{ name: 'max.message.bytes', value: String(MAX_BATCH_BYTES) }],
        })),
      })
    },
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
