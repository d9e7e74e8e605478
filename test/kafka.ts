// Kafka tests need a broker (KAFKA_BROKERS, e.g. from `eval "$(bash scripts/services.sh)"`). Without one
// they are skipped locally with "skipped: no Kafka", and fail in CI, where a broker is part of the run.
import { connect, type Socket } from 'node:net'
import { Kafka, logLevel, type ISocketFactory } from 'kafkajs'

export async function kafkaBrokers(): Promise<string | undefined> {
  const brokers = process.env.KAFKA_BROKERS?.trim()
  let reason = 'KAFKA_BROKERS is not set'
  if (brokers) {
    const admin = new Kafka({ brokers: brokers.split(','), logLevel: logLevel.NOTHING, connectionTimeout: 2000, retry: { retries: 1 } }).admin()
    try {
      await admin.connect()
      await admin.listTopics()
      return brokers
    } catch (err) {
      reason = `no broker answers at ${brokers}: ${(err as Error).message}`
    } finally {
      await admin.disconnect().catch(() => {})
    }
  }
  if (process.env.CI) throw new Error(`Kafka tests need a broker in CI, but ${reason}; start one with scripts/services.sh`)
  console.warn('skipped: no Kafka')
  return undefined
}

/**
 * Real sockets to the broker for openKafka's socketFactory, which the test can cut (open ones reset as
 * when the broker dies, new ones refused) and restore: a broker outage as this process sees it.
 */
export function cuttableSockets(): { factory: ISocketFactory; cut(): void; restore(): void } {
  let down = false
  const open = new Set<Socket>()
  const factory: ISocketFactory = ({ host, port, onConnect }) => {
    // Port 1 on loopback refuses the connection: what a client sees of a broker that is down.
    const socket = down ? connect({ host: '127.0.0.1', port: 1 }, onConnect) : connect({ host, port }, onConnect)
    open.add(socket)
    socket.on('close', () => open.delete(socket))
    return socket
  }
  return {
    factory,
    cut: () => {
      down = true
      for (const s of open) s.destroy(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }))
    },
    restore: () => {
      down = false
    },
  }
}
