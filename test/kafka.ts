// Kafka tests need a broker (KAFKA_BROKERS, e.g. from `eval "$(bash scripts/services.sh)"`). Without one
// they are skipped locally with "skipped: no Kafka", and fail in CI, where a broker is part of the run.
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { connect, createServer, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
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

/** Deletes a test's topic and its dead-letter topic: what the test wrote does not stay on the shared broker. */
export async function dropTopic(brokers: string, topic: string): Promise<void> {
  const admin = new Kafka({ brokers: brokers.split(','), logLevel: logLevel.NOTHING }).admin()
  await admin.connect()
  await admin.deleteTopics({ topics: [topic, `${topic}-dlq`] }).catch(() => {})
  await admin.disconnect()
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

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const run = promisify(execFile)

/** A TCP port nothing listens on now, on 127.0.0.1. */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
    server.once('error', reject)
  })

export interface OwnBroker {
  brokers: string
  /** kill -9 of the broker process: no clean shutdown. */
  kill(): void
  /** Starts it again on the same ports and data; resolves once it serves requests. */
  start(): Promise<void>
  stop(): Promise<void>
}

/**
 * A single-node broker of the test's own, for faults on the broker process itself: scripts/services.sh on
 * free ports and a fresh run directory, with the jars the script fetched for the shared broker. Without
 * those jars it is skipped locally with "skipped: no Kafka", and fails in CI.
 */
export async function ownBroker(): Promise<OwnBroker | undefined> {
  const script = join(ROOT, 'scripts/services.sh')
  // Without Kafka configured (a newcomer's `npm test`) nothing is fetched; in CI or beside a broker the jars are.
  if (!process.env.CI && !process.env.KAFKA_BROKERS) {
    console.warn('skipped: no Kafka')
    return undefined
  }
  try {
    await run('bash', [script, 'jars'])
  } catch (err) {
    if (process.env.CI) throw new Error(`the broker fault test needs the Kafka jars (scripts/services.sh jars failed: ${(err as Error).message})`)
    console.warn('skipped: no Kafka')
    return undefined
  }
  const [port, controllerPort] = [await freePort(), await freePort()]
  const dir = mkdtempSync(join(tmpdir(), 'meterbill-broker-'))
  const env = { ...process.env, KAFKA_PORT: String(port), KAFKA_CONTROLLER_PORT: String(controllerPort), KAFKA_RUN_DIR: dir }
  const services = async (command: 'start' | 'stop'): Promise<void> => void (await run('bash', [script, command], { env, cwd: ROOT }))
  await services('start')
  return {
    brokers: `127.0.0.1:${port}`,
    kill: () => process.kill(Number(readFileSync(join(dir, 'kafka.pid'), 'utf8')), 'SIGKILL'),
    start: () => services('start'),
    stop: async () => {
      await services('stop')
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
