// Kafka mode: an idempotent producer with acks from all in-sync replicas; the reply waits for the ack.
// Keyed tenant:environment:external_customer_id, so one customer's events (and every retry of one of
// their event ids) land in one partition, in order, and are deduplicated by one consumer in sequence.
import { Worker } from 'node:worker_threads'
import type { Producer } from 'kafkajs'
import { wireEvent, type UsageEvent } from '../core/events.ts'
import { eventKey, keyPartition } from '../core/partition.ts'
import type { Deps } from '../infra/deps.ts'
import type { KafkaHandle } from '../infra/kafka.ts'
import { batchedSink, type Sink } from './sink.ts'


/**
 * How long a request waits for the ack. kafkajs keeps reconnecting to an unreachable broker for much longer;
 * past this the client gets 503 (a send that lands later is harmless: the retry's ids are deduplicated).
 */
const ACK_TIMEOUT_MS = 8000
/** Events gathered into one produce request: far below the topics' max.message.bytes (infra/kafka.ts). */
const MAX_PRODUCE_BYTES = 2 * 1024 * 1024

/** A record holds at most this much (UTF-16 units): large enough to amortise the per-record cost, small for the consumer. */
const MAX_RECORD_BYTES = 256 * 1024

/** Records as the topic carries them, in order: each one's key and value (a JSON array of encodeEvent texts). */
interface Records {
  keys: string[]
  values: string[]
}

/**
 * Records of one key each, holding that key's events in order: fewer, larger records cost the producer
 * and the broker far less than one per event. A key with many events is split over several records.
 * Built on the request thread, so that a batch crosses to the producer thread as one string per record
 * rather than two per event (copying and collecting those cost the producer thread more than grouping).
 * Each record's value is one JSON.stringify of its wire objects (the same text as its events' encodeEvent texts
 * joined in an array, for a fraction of the cost); events are grouped by scope, then by customer, so that the
 * lookups use the events' own strings rather than a key joined for each event.
 */
function records(events: UsageEvent[]): Records {
  const scopes = new Map<string, Map<string, Map<string, object[]>>>()
  const groups: { first: UsageEvent; wires: object[] }[] = []
  let customers: Map<string, object[]> | undefined
  let tenant = ''
  let environment = ''
  for (const e of events) {
    // A batch holds few scopes, in runs (one per request): the last one's map is looked up again only on a change.
    if (!customers || e.tenantId !== tenant || e.environmentId !== environment) {
      tenant = e.tenantId
      environment = e.environmentId
      let environments = scopes.get(tenant)
      if (!environments) scopes.set(tenant, (environments = new Map()))
      customers = environments.get(environment)
      if (!customers) environments.set(environment, (customers = new Map()))
    }
    let wires = customers.get(e.externalCustomerId)
    if (!wires) {
      customers.set(e.externalCustomerId, (wires = []))
      groups.push({ first: e, wires })
    }
    wires.push(wireEvent(e))
  }
  const out: Records = { keys: [], values: [] }
  for (const { first, wires } of groups) recordsOf(eventKey(first), wires, out)
  return out
}

/** One key's records: its events in order, halved until each record is within MAX_RECORD_BYTES (or one event). */
function recordsOf(key: string, wires: object[], out: Records): void {
  const value = JSON.stringify(wires)
  if (value.length <= MAX_RECORD_BYTES || wires.length === 1) {
    out.keys.push(key)
    out.values.push(value)
    return
  }
  const half = wires.length >>> 1
  recordsOf(key, wires.slice(0, half), out)
  recordsOf(key, wires.slice(half), out)
}

const keyPartitioner = () => ({ partitionMetadata, message }: { partitionMetadata: unknown[]; message: { key?: unknown } }) =>
  keyPartition(message.key as string, partitionMetadata.length)

function withinAckTimeout<T>(p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no broker ack within ${ACK_TIMEOUT_MS} ms`)), ACK_TIMEOUT_MS)
  })
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer))
}

/** The producer intake needs: idempotent, acks from all in-sync replicas on every send. */
export async function openProducer(kafka: KafkaHandle): Promise<Producer> {
  await kafka.ensureTopics()
  const producer: Producer = kafka.kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
    createPartitioner: keyPartitioner,
    // Bounded, unlike kafkajs' idempotent default (forever): a down broker must become a 503. A producer retry that
    // duplicates a record is harmless: the aggregator stores each event id once.
    retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 2000 },
  })
  await producer.connect()
  return producer
}

/** Sends records and resolves on the broker's ack (acks=all); rejects when there is none. */
export type Produce = (batch: Records) => Promise<void>

export const sendWith =
  (producer: Producer, topic: string): Produce =>
  async ({ keys, values }) =>
    void (await producer.send({ topic, acks: -1, messages: keys.map((key, i) => ({ key, value: values[i] })) }))

// Concurrent requests share one produce request (the producer sends one at a time): each waits for its ack.
function sinkOver(deps: Deps, produce: Produce, close: () => Promise<void>): Sink {
  return batchedSink(
    deps,
    'kafka',
    { maxRows: deps.config.batch.maxRows, maxBytes: MAX_PRODUCE_BYTES, lingerMs: Math.min(deps.config.batch.lingerMs, 5) },
    (events) => withinAckTimeout(produce(records(events))),
    'the event broker is unavailable',
    close,
  )
}

type Reply = { id: number; error?: string }

export interface ProducerThread {
  produce: Produce
  /** Disconnects the producer and ends the thread. */
  close(): Promise<void>
  /** Resolves when the thread has ended, for whatever reason. */
  exited: Promise<void>
}

/** Starts a producer thread; resolves once it is connected, rejects when it cannot connect. */
export async function producerThread(deps: Deps): Promise<ProducerThread> {
  const worker = new Worker(new URL('./producer-thread.mjs', import.meta.url), { workerData: deps.config })
  const waiting = new Map<number, { resolve(): void; reject(err: Error): void }>()
  let lastId = 0
  let gone: Error | undefined
  const exited = new Promise<void>((resolve) =>
    worker.once('exit', (code) => {
      gone = new Error(`the Kafka producer thread exited with code ${code}`)
      for (const w of waiting.values()) w.reject(gone)
      waiting.clear()
      resolve()
    }),
  )
  worker.on('error', (err) => deps.logger.error({ err }, 'Kafka producer thread failed'))
  const ready = await new Promise<Reply>((resolve) => {
    worker.once('message', resolve)
    void exited.then(() => resolve({ id: 0, error: gone!.message }))
  })
  if (ready.error !== undefined) {
    await worker.terminate()
    throw new Error(ready.error)
  }
  worker.on('message', (m: Reply) => {
    const w = waiting.get(m.id)
    waiting.delete(m.id)
    if (m.error === undefined) w?.resolve()
    else w?.reject(new Error(m.error))
  })
  return {
    produce: (batch) => {
      if (gone) return Promise.reject(gone)
      const id = ++lastId
      const done = new Promise<void>((resolve, reject) => waiting.set(id, { resolve, reject }))
      worker.postMessage({ id, ...batch })
      return done
    },
    close: async () => {
      if (!gone) worker.postMessage({ close: true })
      await exited
    },
    exited,
  }
}

/**
 * Kafka mode with the producer on a worker thread (producer-thread.ts): kafkajs' record encoding and CRC take
 * about 40% of intake's time on the request thread, and there they run beside request handling instead. A
 * batch crosses as two arrays of strings (its records' keys and values). A thread that dies fails the batch it
 * holds (503); the next batch starts a new one.
 */
export async function threadedKafkaSink(deps: Deps, start = producerThread): Promise<Sink> {
  let thread: Promise<ProducerThread> | undefined
  let closing = false
  const current = () => {
    if (!thread) {
      const t = start(deps)
      thread = t
      // A thread that failed to start or died is replaced on the next batch.
      void t
        .then((h) => h.exited, () => undefined)
        .then(() => {
          if (thread === t && !closing) thread = undefined
        })
    }
    return thread
  }
  await current()
  return sinkOver(
    deps,
    async (batch) => (await current()).produce(batch),
    async () => {
      closing = true
      await (await thread?.catch(() => undefined))?.close()
    },
  )
}
