// Where accepted events go: Kafka (reply after the broker's ack) or straight to ClickHouse (reply after
// the insert). The running program attaches one sink to its deps; intake only knows this interface.
import type { UsageEvent } from '../core/events.ts'
import { serviceUnavailable } from '../core/errors.ts'
import type { Deps } from '../infra/deps.ts'

export interface Sink {
  kind: 'kafka' | 'direct'
  /** Resolves once the events are durable; rejects with service_unavailable when they may not be. */
  write(events: UsageEvent[], bytes: number): Promise<void>
  close(): Promise<void>
}

const sinks = new WeakMap<Deps, Sink>()

export const attachSink = (deps: Deps, sink: Sink): void => {
  sinks.set(deps, sink)
}

export function sinkOf(deps: Deps): Sink {
  const sink = sinks.get(deps)
  if (!sink) throw serviceUnavailable('event intake is not running in this process')
  return sink
}
