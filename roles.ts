// Starts the roles of the program in this process: `start` runs them all on embedded defaults,
// each role also runs alone for deployments that scale out.
import { setFlagsFromString } from 'node:v8'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Config } from './core/config.ts'
import type { Clock } from './core/clock.ts'
import { createApp } from './http/app.ts'
import { apiRoutes } from './http/api-routes.ts'
import { startLastUsedFlusher } from './domains/tenancy/keys/service.ts'
import { bootstrapIfEmpty, type NewTenant } from './domains/tenancy/tenants/service.ts'
import { openDeps, type Deps } from './infra/deps.ts'
import type { Logger } from './infra/logger.ts'
import { checkHealth } from './infra/health.ts'
import { assignmentOf } from './infra/kafka-assignment.ts'
import { serveMetrics, type HealthCheck } from './infra/metrics.ts'
import { migrate } from './infra/migrate.ts'
import { jobs } from './worker/jobs.ts'
import { startScheduler } from './infra/scheduler.ts'
import { ingestRoutes } from './http/routes/intake.ts'
import { startIntake, startTaskIntake } from './ingest/start.ts'
import { ingestEvents } from './ingest/service.ts'
import { plugEventIntake } from './domains/tasks/intake.ts'
import { plugConnectionCredentials } from './domains/exports/connection-credentials.ts'
import { refuseConnectionInUse } from './domains/exports/service.ts'
import { connectionDeletion } from './domains/integrations/service.ts'
import { s3CredentialsOf } from './domains/integrations/s3-credentials.ts'
import { startBackfillLoop } from './aggregator/backfill.ts'
import { consumerGroup, startAggregator } from './aggregator/consumer.ts'

// Imported events (/v1/tasks) enter as POST /v1/events/bulk's do.
plugEventIntake(ingestEvents)
// Scheduled exports read the bucket credentials of an s3 connection; a connection a task uses is not deleted under it.
plugConnectionCredentials(s3CredentialsOf)
connectionDeletion.register(refuseConnectionInUse)

export const ROLE_NAMES = ['api', 'ingest', 'aggregator', 'worker'] as const
export type RoleName = (typeof ROLE_NAMES)[number]

export interface Running {
  deps: Deps
  port?: number
  /** Where GET /metrics is served; absent with METRICS_PORT=off. */
  metricsPort?: number
  bootstrap?: NewTenant
  stop(): Promise<void>
}

/** A listener that could not bind its address: the message names the variable to change; the CLI prints it without a stack. */
export class ListenError extends Error {
  constructor(variable: string, host: string, port: number, err: NodeJS.ErrnoException, alternative = '') {
    const why = err.code === 'EADDRINUSE' ? 'address in use' : err.code === 'EACCES' ? 'permission denied' : err.code === 'EADDRNOTAVAIL' ? 'no such address here' : err.message
    super(`${variable} ${port} on ${host}: ${why} (set ${variable} to another port${alternative})`, { cause: err })
    this.name = 'ListenError'
  }
}

/**
 * GET /health on the metrics listener, for every role (the aggregator and the worker serve no API): the roles of this
 * process, its engines as /v1/health has them, and an aggregator's consumer group membership and partitions.
 * Degraded when an engine is down or the aggregator's consumer crashed for good.
 */
function processHealth(deps: Deps, roles: readonly RoleName[]): HealthCheck {
  return async () => {
    const consuming = roles.includes('aggregator') && deps.kafka
    const [engines, consumer] = await Promise.all([checkHealth(deps), consuming ? assignmentOf(deps, consumerGroup(deps.kafka!.topic)) : undefined])
    const status = engines.status === 'ok' && consumer?.state !== 'crashed' ? 'ok' : 'degraded'
    const { status: _, ...rest } = engines
    return { status, pid: process.pid, roles: [...roles], ...rest, ...(consumer ? { consumer } : {}) }
  }
}

export async function startRoles(
  config: Config,
  roles: readonly RoleName[],
  options: { logger?: Logger; clock?: Clock } = {},
): Promise<Running> {
  // A flag NODE_OPTIONS refuses, so set here: less memory for more CPU (docs/operations.md, "Memory").
  if (config.heapGrowingPercent > 0) setFlagsFromString(`--heap-growing-percent=${config.heapGrowingPercent}`)
  const deps = await openDeps(config, options)
  const stops: (() => Promise<void>)[] = []
  try {
    const applied = await migrate(deps.sql, deps.ch)
    if (applied.postgres.length + applied.clickhouse.length > 0) deps.logger.info(applied, 'migrations applied')
    const bootstrap = await bootstrapIfEmpty(deps)
    let metricsPort: number | undefined
    if (config.metrics) {
      const { host, port } = config.metrics
      const served = await serveMetrics(deps.metrics, host, port, processHealth(deps, roles)).catch((err: NodeJS.ErrnoException) => {
        throw new ListenError('METRICS_PORT', host, port, err, ', or off')
      })
      metricsPort = served.port
      stops.push(served.stop)
    }

    // Event imports run where tasks run (api, worker): without the ingest role here, through a sink of their own
    // (pushed before the server's stop, so closed after it).
    if (!roles.includes('ingest') && (roles.includes('api') || roles.includes('worker'))) stops.push(startTaskIntake(deps))

    let port: number | undefined
    if (roles.includes('api') || roles.includes('ingest')) {
      const routes = [...(roles.includes('api') ? apiRoutes : []), ...(roles.includes('ingest') ? ingestRoutes : [])]
      // Pushed before the server's stop, so it runs after it: the last accepted events are written.
      if (roles.includes('ingest')) stops.push(await startIntake(deps))
      const app = createApp(deps, routes)
      const server: Server = await new Promise((resolve, reject) => {
        const s = app.listen(config.port, config.host, () => resolve(s))
        s.once('error', (err: NodeJS.ErrnoException) => reject(new ListenError('PORT', config.host, config.port, err)))
      })
      server.requestTimeout = 60_000
      port = (server.address() as AddressInfo).port
      stops.push(() => new Promise<void>((resolve) => server.close(() => resolve())))
      stops.push(startLastUsedFlusher(deps))
    }
    if (roles.includes('worker')) stops.push(startScheduler(deps, jobs))
    if (roles.includes('api') || roles.includes('worker')) stops.push(startBackfillLoop(deps))
    // In direct mode the ingest role inserts from its event log itself: there is nothing to consume.
    if (roles.includes('aggregator') && deps.kafka) stops.push(await startAggregator(deps, deps.kafka))

    return {
      deps,
      port,
      metricsPort,
      bootstrap,
      stop: async () => {
        for (const stop of stops.reverse()) await stop().catch((err) => deps.logger.warn({ err }, 'while stopping'))
        await deps.close()
      },
    }
  } catch (err) {
    for (const stop of stops.reverse()) await stop().catch(() => {})
    await deps.close()
    throw err
  }
}
