import type { Deps } from './deps.ts'
import { eventLogOf } from './event-log.ts'

interface EngineState {
  kind: string
  status: 'ok' | 'down'
  error?: string
}

/** Direct mode's event log: events acknowledged and not yet inserted (intake answers 503 past max_backlog_bytes). */
interface EventLogState {
  status: 'ok' | 'full' | 'down'
  backlog_events: number
  backlog_bytes: number
  max_backlog_bytes: number
  error?: string
}

export interface Health {
  status: 'ok' | 'degraded'
  engines: Record<string, EngineState>
  event_log?: EventLogState
}

async function probe(kind: string, check: () => Promise<unknown>): Promise<EngineState> {
  try {
    await check()
    return { kind, status: 'ok' }
  } catch (err) {
    return { kind, status: 'down', error: (err as Error).message }
  }
}

export async function checkHealth(deps: Deps): Promise<Health> {
  const entries: [string, EngineState][] = await Promise.all([
    probe(deps.engines.postgres, () => deps.sql`SELECT 1`).then((s): [string, EngineState] => ['postgres', s]),
    probe(deps.engines.clickhouse, () => deps.ch.client.query({ query: 'SELECT 1', format: 'JSONEachRow' }).then((r) => r.json())).then(
      (s): [string, EngineState] => ['clickhouse', s],
    ),
    // Kafka only in Kafka mode: direct mode has no broker to be down.
    ...(deps.kafka ? [probe('kafka', () => deps.kafka!.ping()).then((s): [string, EngineState] => ['kafka', s])] : []),
  ])
  const engines = Object.fromEntries(entries)
  const log = eventLogOf(deps)
  const event_log: EventLogState | undefined = log && {
    status: log.failed ? 'down' : log.backlog().bytes >= log.maxBacklogBytes ? 'full' : 'ok',
    backlog_events: log.backlog().events,
    backlog_bytes: log.backlog().bytes,
    max_backlog_bytes: log.maxBacklogBytes,
    ...(log.failed ? { error: log.failed.message } : {}),
  }
  // A full log is busy, not broken (intake answers 503 with Retry-After meanwhile): only a failed one degrades health.
  const ok = entries.every(([, s]) => s.status === 'ok') && event_log?.status !== 'down'
  return { status: ok ? 'ok' : 'degraded', engines, ...(event_log ? { event_log } : {}) }
}
