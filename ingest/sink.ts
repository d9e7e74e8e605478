// Where accepted events go: Kafka (reply after the broker's ack) or the local event log (reply after its
// fsync; direct-sink.ts). The running program attaches one sink to its deps; intake only knows this interface.
import type { UsageEvent } from '../core/events.ts'
import { serviceUnavailable } from '../core/errors.ts'
import type { Deps } from '../infra/deps.ts'
import { Batcher, type BatchLimits } from '../aggregator/batcher.ts'

export interface Sink {
  kind: 'kafka' | 'direct'
  /**
   * Resolves once the events are durable; rejects with service_unavailable when they may not be, or with
   * invalid_operation when this process can never store them (ingest/start.ts startTaskIntake, direct mode).
   */
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

/**
 * A sink that gathers the events of concurrent requests into batches and writes each with `write`; every
 * request waits for its batch. A failed batch answers 503 to each of its requests: nothing was accepted.
 */
export function batchedSink(
  deps: Deps,
  kind: Sink['kind'],
  limits: Omit<BatchLimits, 'maxPendingRows'>,
  write: (events: UsageEvent[]) => Promise<void>,
  unavailable: string,
  close: () => Promise<void> = async () => {},
): Sink {
  const batcher = new Batcher<UsageEvent>({ ...limits, maxPendingRows: deps.config.maxPendingEvents }, async (events) => {
    try {
      await write(events)
    } catch (err) {
      deps.logger.warn({ err, sink: kind }, 'usage events not accepted')
      throw serviceUnavailable(`${unavailable}; nothing was accepted, retry with the same event ids`)
    }
  })
  return {
    kind,
    write: (events, bytes) => batcher.add(events, bytes),
    close: async () => {
      await batcher.drain()
      await close()
    },
  }
}
