// Kafka tests need a broker (KAFKA_BROKERS, e.g. from `eval "$(bash scripts/services.sh)"`). Without one
// they are skipped locally with "skipped: no Kafka", and fail in CI, where a broker is part of the run.
import { Kafka, logLevel } from 'kafkajs'

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
