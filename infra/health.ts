import type { Deps } from './deps.ts'

interface EngineState {
  kind: string
  status: 'ok' | 'down'
  error?: string
}

export interface Health {
  status: 'ok' | 'degraded'
  engines: Record<string, EngineState>
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
  return { status: entries.every(([, s]) => s.status === 'ok') ? 'ok' : 'degraded', engines }
}
