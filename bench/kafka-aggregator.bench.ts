// (2) Kafka → ClickHouse: a topic pre-loaded with N events is drained by one aggregator (the sustained
// rate the consumer, dedup lookup, meter resolution and insert reach, pipelined), then the end-to-end lag
// of single events sent over HTTP while the aggregator idles. Needs KAFKA_BROKERS.
import { Kafka, logLevel } from 'kafkajs'
import { loadConfig } from '../core/config.ts'
import { createMeter } from '../domains/catalog/meters/service.ts'
import { startRoles } from '../roles.ts'
import { BENCH_TOPIC_PREFIX, benchDataDir, fmt, YOUNG_GENERATION, percentile, removeBenchTopics, report } from './common.ts'
import { committedEvents, ensureYoungGeneration, preloadTopic } from './aggregator-drain.ts'

ensureYoungGeneration()

const N = Number(process.env.BENCH_KAFKA_EVENTS ?? 500_000)
const brokers = process.env.KAFKA_BROKERS
if (!brokers) {
  report('## 2. Kafka → ClickHouse\n\nNot measured: KAFKA_BROKERS is not set.')
  process.exit(0)
}
const topic = `${BENCH_TOPIC_PREFIX}agg-${process.pid}-${Date.now()}`
const env = { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', DATA_DIR: benchDataDir('agg'), KAFKA_TOPIC: topic, METER_BACKFILL_SETTLE_SECONDS: '0', RATE_LIMIT_PER_SECOND: '1000000' }
const config = loadConfig(env)

// The program without the aggregator first: it creates the tenant, the topics and a meter.
let running = await startRoles(config, ['api', 'ingest'])
const tenant = running.bootstrap!
const scope = { tenantId: tenant.tenantId, environmentId: tenant.environments.production }
const actor = { ...scope, keyId: 'bench', roles: ['admin' as const] }
await createMeter(running.deps, actor, { name: 'tokens', event_name: 'api.call', aggregation: { type: 'SUM', field: 'tokens' } })

const kafka = new Kafka({ brokers: brokers.split(','), logLevel: logLevel.NOTHING })
const produceRate = await preloadTopic(kafka, topic, scope, N)
await running.stop()

// Now the aggregator alone drains the topic.
running = await startRoles(config, ['api', 'ingest', 'aggregator'])
const admin = kafka.admin()
await admin.connect()
const drainStart = performance.now()
const cpuStart = process.cpuUsage()
for (;;) {
  const { committed, end } = await committedEvents(admin, topic)
  if (committed === end) break
  await new Promise((r) => setTimeout(r, 100))
}
const drainSeconds = (performance.now() - drainStart) / 1000
const cpu = process.cpuUsage(cpuStart)
const rs = await running.deps.ch.client.query({ query: 'SELECT toString(count()) AS n FROM events', format: 'JSONEachRow' })
const stored = Number(((await rs.json()) as { n: string }[])[0].n)

// Lag: one event at a time over HTTP (reply after the broker ack), until the lookup finds it stored.
const lags: number[] = []
for (let i = 0; i < 30; i++) {
  const id = `lag-${i}`
  const t = performance.now()
  const res = await fetch(`http://127.0.0.1:${running.port}/v1/events`, { method: 'POST', headers: { 'x-api-key': tenant.apiKey, 'content-type': 'application/json' }, body: JSON.stringify({ event_id: id, event_name: 'api.call', external_customer_id: 'lag' }) })
  if (res.status !== 202) throw new Error(`intake answered ${res.status}`)
  for (;;) {
    const q = await running.deps.ch.client.query({ query: 'SELECT count() AS n FROM event_ids WHERE event_id = {id:String}', query_params: { id }, format: 'JSONEachRow' })
    if (Number(((await q.json()) as { n: string }[])[0].n) > 0) break
    await new Promise((r) => setTimeout(r, 5))
  }
  lags.push(performance.now() - t)
}
lags.sort((a, b) => a - b)
// Leave nothing behind on the shared broker: a run writes hundreds of megabytes.
await admin.disconnect()
await removeBenchTopics(brokers, [topic])
await running.stop()

report(`## 2. Kafka → ClickHouse

${fmt(N)} events with UUID ids pre-loaded into a ${brokers} topic (6 partitions; produced at ${fmt(produceRate)} events/s by one kafkajs
producer), then drained by one aggregator process (\`${YOUNG_GENERATION}\`) with one SUM meter: dedup lookup, meter resolution, one insert per
chunk of up to ${fmt(config.batch.aggregatorMaxRows)} rows (AGGREGATOR_MAX_ROWS) into chDB, commit after the insert; up to two chunks are
fetched, parsed, looked up and resolved while the one before them is inserted.

| measure | value |
| --- | ---: |
| events stored | ${fmt(stored)} of ${fmt(N)} |
| drain time | ${fmt(drainSeconds, 1)} s |
| sustained Kafka → ClickHouse | ${fmt(N / drainSeconds)} events/s |
| CPU per event while draining (all threads: JavaScript, chDB, GC) | ${fmt((cpu.user + cpu.system) / N, 1)} µs |
| end-to-end lag (HTTP 202 → stored), p50 | ${fmt(percentile(lags, 50), 1)} ms |
| end-to-end lag, p99 (30 events) | ${fmt(percentile(lags, 99), 1)} ms |`)
process.exit(0)
