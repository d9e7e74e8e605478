// The Kafka producer's thread (see threadedKafkaSink): connects with the process's config, then sends each batch
// of records it is given (keys and values) and answers {id} on the broker's ack or {id, error}. {close}
// disconnects and ends the thread.
import { parentPort, workerData } from 'node:worker_threads'
import type { Config } from '../core/config.ts'
import { openKafka } from '../infra/kafka.ts'
import { openProducer, sendWith } from './kafka-sink.ts'

const port = parentPort!
const config = workerData as Config & { kafkaBrokers: string[] }
const kafka = openKafka(config)
try {
  const producer = await openProducer(kafka)
  const produce = sendWith(producer, kafka.topic)
  port.on('message', (m: { close: true } | { id: number; keys: string[]; values: string[] }) => {
    if ('close' in m) {
      void Promise.allSettled([producer.disconnect(), kafka.close()]).then(() => process.exit(0))
      return
    }
    produce(m).then(
      () => port.postMessage({ id: m.id }),
      (err: unknown) => port.postMessage({ id: m.id, error: err instanceof Error ? err.message : String(err) }),
    )
  })
  port.postMessage({})
} catch (err) {
  await kafka.close().catch(() => {})
  port.postMessage({ error: err instanceof Error ? err.message : String(err) })
}
