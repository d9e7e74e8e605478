// The ingest role's sink: Kafka (producer on its own thread) when brokers are configured, else the in-process
// event log and its inserter.
import type { Deps } from '../infra/deps.ts'
import { directSink } from './direct-sink.ts'
import { threadedKafkaSink } from './kafka-sink.ts'
import { attachSink } from './sink.ts'

export async function startIntake(deps: Deps): Promise<() => Promise<void>> {
  const sink = deps.kafka ? await threadedKafkaSink(deps) : await directSink(deps)
  attachSink(deps, sink)
  return () => sink.close()
}
