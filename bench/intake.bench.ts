// (1) HTTP bulk intake: events/s accepted and p99 latency at 100 and 1000 events per request, in direct
// mode and (with KAFKA_BROKERS) Kafka mode, each as a ratio to a parse-and-validate-only server measured
// in the same run. Server and load generator share this machine's cores.
import { blast, bulkBodies, cpuSeconds, fmt, YOUNG_GENERATION, intakeServer, report, type LoadResult } from './common.ts'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8)
// For iterating on one mode: INTAKE_ROWS=kafka-1000 measures only that row (with its ceiling); all rows by default.
const ONLY = process.env.INTAKE_ROWS?.match(/^(\w+)-(\d+)$/)
const SIZES = ONLY ? [Number(ONLY[2])] : [100, 1000]
// The broker's CPU per event (BROKER_PID: the Kafka process, on the same cores), printed beside the table.
const BROKER_PID = process.env.BROKER_PID ? Number(process.env.BROKER_PID) : undefined
const CONCURRENCY = 16

type Measured = LoadResult & { cpuPerEvent: number; brokerCpuPerEvent: number }

async function measure(mode: string): Promise<Record<number, Measured>> {
  const s = await intakeServer(mode)
  const results: Record<number, Measured> = {}
  const body = bulkBodies()
  try {
    for (const size of SIZES) {
      // A short warm-up (JIT, connections, first batches) before the measured run.
      await blast({ port: s.port, path: '/v1/events/bulk', key: s.key, eventsPerRequest: size, body, concurrency: CONCURRENCY, seconds: 1 })
      const cpu = cpuSeconds(s.child.pid!)
      const broker = BROKER_PID ? cpuSeconds(BROKER_PID) : Number.NaN
      const r = await blast({ port: s.port, path: '/v1/events/bulk', key: s.key, eventsPerRequest: size, body, concurrency: CONCURRENCY, seconds: SECONDS })
      results[size] = {
        ...r,
        cpuPerEvent: ((cpuSeconds(s.child.pid!) - cpu) * 1e6) / r.events,
        brokerCpuPerEvent: ((cpuSeconds(BROKER_PID ?? 0) - broker) * 1e6) / r.events,
      }
    }
  } finally {
    s.child.kill('SIGTERM')
    await new Promise((r) => s.child.once('exit', r))
  }
  return results
}

const modes = ONLY ? ['ceiling', ...(ONLY[1] === 'ceiling' ? [] : [ONLY[1]])] : ['ceiling', 'direct', ...(process.env.KAFKA_BROKERS ? ['kafka'] : [])]
const all: Record<string, Record<number, Measured>> = {}
for (const mode of modes) all[mode] = await measure(mode)

const rows = modes.flatMap((mode) =>
  SIZES.map((size) => {
    const r = all[mode][size]
    const ratio = r.eventsPerSecond / all.ceiling[size].eventsPerSecond
    return `| ${mode} | ${size} | ${fmt(r.eventsPerSecond)} | ${fmt(r.p50, 1)} | ${fmt(r.p99, 1)} | ${mode === 'ceiling' ? '1.00' : fmt(ratio, 2)} | ${fmt(r.cpuPerEvent, 1)} | ${fmt(r.clientCpuPerEvent, 1)} | ${r.failed} |`
  }),
)
if (BROKER_PID) {
  for (const mode of modes) for (const size of SIZES) process.stderr.write(`broker CPU ${mode}-${size}: ${fmt(all[mode][size].brokerCpuPerEvent, 2)} µs/event\n`)
}
report(`## 1. HTTP bulk intake

${CONCURRENCY} keep-alive connections, ${SECONDS} s per row after a 1 s warm-up; every event distinct (1000 customers).
Each connection reuses one body buffer of fixed-width fields and writes each event's sequence number, customer, tokens,
model and the current time into it per request (bench/common.ts \`bulkBodies\`), so the load generator, on the same
cores, spends little CPU; "client CPU" is the generator process's CPU per accepted event (bodies and HTTP client).
"ceiling" is the same program (auth, rate limit, JSON parse, validation, normalisation) with a sink that
discards events; ratio = events/s of the row ÷ ceiling events/s at the same request size. Servers run with
\`${YOUNG_GENERATION}\` (docs/usage.md); in Kafka mode the producer runs on its own thread. Server CPU: all threads of
the server process over the measured run ÷ events accepted; it moves less with other load on the machine than events/s.${process.env.KAFKA_BROKERS ? ` Kafka: ${process.env.KAFKA_BROKERS}, acks=all, idempotent producer.` : ' Kafka mode not measured (KAFKA_BROKERS unset).'}

| mode | events/request | events/s accepted | p50 ms | p99 ms | ratio to ceiling | server CPU µs/event | client CPU µs/event | non-202 |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
${rows.join('\n')}`)
