// The ingest role's sink: Kafka (producer on its own thread) when brokers are configured, else the in-process
// event log and its inserter. A process without the ingest role that works tasks gets the sink event imports need.
import { invalidOperation, serviceUnavailable } from '../core/errors.ts'
import type { Deps } from '../infra/deps.ts'
import { directSink } from './direct-sink.ts'
import { threadedKafkaSink } from './kafka-sink.ts'
import { attachSink, type Sink } from './sink.ts'

export async function startIntake(deps: Deps): Promise<() => Promise<void>> {
  const sink = deps.kafka ? await threadedKafkaSink(deps) : await directSink(deps)
  attachSink(deps, sink)
  return () => sink.close()
}

/** A sink opened at its first write (most processes never import events); one that failed to open is tried again. */
function openedOnFirstWrite(open: () => Promise<Sink>): Sink {
  let opened: Promise<Sink> | undefined
  const sink = (): Promise<Sink> =>
    (opened ??= open().catch((err: Error) => {
      opened = undefined
      throw serviceUnavailable(`the event broker is unavailable: ${err.message}`)
    }))
  return {
    kind: 'kafka',
    write: async (events, bytes) => (await sink()).write(events, bytes),
    close: async () => {
      await (await opened?.catch(() => undefined))?.close()
    },
  }
}

const DIRECT_MODE = 'events cannot be imported in this process: without KAFKA_BROKERS (direct mode) events are stored only by the process that runs the ingest role, in its own event log; create the task on a process that runs the api and ingest roles together (as meterbill start does), or use Kafka'

/**
 * For event imports (/v1/tasks) in a process that works tasks (api, worker) without the ingest role. In Kafka mode
 * it produces to the topic as intake does, with the same producer. In direct mode the event log belongs to the ingest
 * process, which this one cannot reach: an event import fails with the reason rather than waiting for ever.
 */
export function startTaskIntake(deps: Deps): () => Promise<void> {
  const sink: Sink = deps.kafka
    ? openedOnFirstWrite(() => threadedKafkaSink(deps))
    : { kind: 'direct', write: () => Promise.reject(invalidOperation(DIRECT_MODE)), close: async () => {} }
  attachSink(deps, sink)
  return () => sink.close()
}
