// A server process for the intake benchmark: `direct`, `kafka`, or `ceiling` (the same app, parsing,
// authenticating and validating every event, with a sink that discards them: the cost of everything but
// storage). Prints {port, key} as one JSON line.
import { loadConfig } from '../core/config.ts'
import { attachSink } from '../ingest/sink.ts'
import { startRoles } from '../roles.ts'
import { BENCH_TOPIC_PREFIX, benchDataDir, removeBenchTopics } from './common.ts'

const mode = process.argv[2] as 'direct' | 'kafka' | 'ceiling'
const env: Record<string, string | undefined> = {
  ...process.env,
  PORT: '0',
  HOST: '127.0.0.1',
  LOG_LEVEL: 'silent',
  DATA_DIR: benchDataDir(mode),
  RATE_LIMIT_PER_SECOND: '1000000',
  KAFKA_BROKERS: mode === 'kafka' ? process.env.KAFKA_BROKERS : '',
  KAFKA_TOPIC: `${BENCH_TOPIC_PREFIX}${process.pid}`,
}
const running = await startRoles(loadConfig(env), ['ingest'])
if (mode === 'ceiling') attachSink(running.deps, { kind: 'direct', write: async () => {}, close: async () => {} })
process.stdout.write(`${JSON.stringify({ port: running.port, key: running.bootstrap!.apiKey })}\n`)
/** Leaves nothing behind on the shared broker: its topics (removeBenchTopics); the data directory goes with the process (benchDataDir). */
async function cleanUp(): Promise<void> {
  if (mode === 'kafka') await removeBenchTopics(env.KAFKA_BROKERS!, [env.KAFKA_TOPIC!])
}
process.on('SIGTERM', () => {
  running.stop().then(cleanUp).then(() => process.exit(0), () => process.exit(1))
})
