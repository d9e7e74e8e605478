// The ingest role's sink: Kafka when brokers are configured, else the in-process direct writer.
import type { Deps } from '../infra/deps.ts'
import { directSink } from './direct-sink.ts'
import { kafkaSink } from './kafka-sink.ts'
import { attachSink } from './sink.ts'

export async function startIntake(deps: Deps): Promise<() => Promise<void>> {
  const sink = deps.kafka ? await kafkaSink(deps, deps.kafka) : directSink(deps)
  attachSink(deps, sink)
  return () => sink.close()
}
