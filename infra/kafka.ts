// The Kafka client (KAFKA_BROKERS): one kafkajs instance per process, the topics this program owns,
// and a cheap liveness probe for /v1/health.
import { setTimeout as sleep } from 'node:timers/promises'
import { Kafka, logLevel, type Admin, type Consumer, type ISocketFactory } from 'kafkajs'
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
  /**
   * The consumer group this process's consumers made through `kafka.consumer` are in (GET /health on the metrics
   * listener): joined or not, its member id and the event topic's partitions it was handed; undefined for a group no
   * consumer of this handle joins.
   */
  membership(groupId: string): Membership | undefined
  /** Fails when no broker answers. */
  ping(): Promise<void>
  close(): Promise<void>
}

/** A consumer's place in its group, from kafkajs' instrumentation events. */
export interface Membership {
  group: string
  /** joining: created, not yet in the group; rebalancing: the group is being rebalanced (partitions as they were). */
  state: 'joining' | 'joined' | 'rebalancing' | 'restarting' | 'crashed' | 'stopped'
  member_id?: string
  leader?: boolean
  /** Partitions of the event topic this member holds, ascending. */
  partitions: number[]
  /** When it came to this state. */
  since: Date
  error?: string
}

/**
 * Follows a consumer's group joins, rebalances, crashes and stop. kafkajs restarts a consumer after a retriable
 * crash (restarting) and then joins again; a crash without restart leaves it out of the group (crashed).
 */
function trackMembership(consumer: Consumer, group: string, topic: string, groups: Map<string, Membership>): Consumer {
  const set = (m: Omit<Membership, 'group' | 'since'>) => groups.set(group, { ...m, group, since: new Date() })
  set({ state: 'joining', partitions: [] })
  const { GROUP_JOIN, REBALANCING, CRASH, STOP } = consumer.events
  consumer.on(GROUP_JOIN, ({ payload }) => {
    const partitions = [...(payload.memberAssignment[topic] ?? [])].sort((a, b) => a - b)
    set({ state: 'joined', member_id: payload.memberId, leader: payload.isLeader, partitions })
  })
  // The partitions held until the rebalance hands out new ones.
  consumer.on(REBALANCING, ({ payload }) => set({ leader: groups.get(group)?.leader, state: 'rebalancing', member_id: payload.memberId, partitions: groups.get(group)?.partitions ?? [] }))
  consumer.on(CRASH, ({ payload }) => set({ state: payload.restart ? 'restarting' : 'crashed', partitions: [], error: payload.error.message }))
  consumer.on(STOP, () => set({ state: 'stopped', partitions: [] }))
  return consumer
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
  // Every consumer made through this handle reports its group membership (the aggregator's, for GET /health).
  const groups = new Map<string, Membership>()
  const consumer = kafka.consumer.bind(kafka)
  kafka.consumer = (consumerConfig) => trackMembership(consumer(consumerConfig), consumerConfig.groupId, topic, groups)
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
  /**
   * The event topic's partitions. A topic another process has just created can be unknown to the broker asked for a
   * moment (its metadata not yet there): asked again for up to 10 s, as several processes starting at once hit it.
   */
  const partitions = async (): Promise<number> => {
    for (let waited = 0; ; waited += 200) {
      try {
        const { topics } = await (await connected()).fetchTopicMetadata({ topics: [topic] })
        return topics[0].partitions.length
      } catch (err) {
        if ((err as { type?: string }).type !== 'UNKNOWN_TOPIC_OR_PARTITION' || waited >= 10_000) throw err
        await sleep(200)
      }
    }
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
    membership: (groupId) => groups.get(groupId),
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
