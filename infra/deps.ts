// What every role's code is handed: configuration, the engines, a logger and the clock.
// Nothing in the domain code knows whether an engine is embedded or a server.
import type { Config } from '../core/config.ts'
import { systemClock, type Clock } from '../core/clock.ts'
import { openClickHouse, type ClickHouse } from './clickhouse.ts'
import { openKafka, type KafkaHandle } from './kafka.ts'
import { createLogger, type Logger } from './logger.ts'
import { createMetrics, type Metrics } from './metrics.ts'
import { openPostgres, type Postgres, type Sql } from './postgres.ts'

export interface Deps {
  config: Config
  sql: Sql
  ch: ClickHouse
  logger: Logger
  clock: Clock
  /**
   * Set while a test clock advances: scheduled jobs touch only that clock's customers, at `clock`'s time.
   * Absent (every other run), they leave out every customer on a test clock.
   */
  testClockId?: string
  /** This process's metrics (served by roles.ts on METRICS_HOST:METRICS_PORT). */
  metrics: Metrics
  engines: { postgres: Postgres['kind']; clickhouse: ClickHouse['kind'] }
  /** Present when KAFKA_BROKERS is set (Kafka mode); absent in direct mode. */
  kafka?: KafkaHandle
  close(): Promise<void>
}

export async function openDeps(config: Config, options: { clock?: Clock; logger?: Logger } = {}): Promise<Deps> {
  const logger = options.logger ?? createLogger(config.logLevel)
  const [pg, ch] = await Promise.all([openPostgres(config), openClickHouse(config)])
  const kafka = config.kafkaBrokers ? openKafka({ ...config, kafkaBrokers: config.kafkaBrokers }, { logger }) : undefined
  return {
    config,
    sql: pg.sql,
    ch,
    logger,
    clock: options.clock ?? systemClock,
    metrics: createMetrics(),
    engines: { postgres: pg.kind, clickhouse: ch.kind },
    kafka,
    close: async () => {
      await Promise.allSettled([pg.close(), ch.close(), kafka?.close()])
    },
  }
}
