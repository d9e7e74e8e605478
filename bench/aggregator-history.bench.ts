// (10) The aggregator against stored history (issue 18, part 1): the rate one aggregator drains a topic of new events at
// with 0, 10M, … ids already stored in the environment (generated in ClickHouse, aged 2–31 days as real history is), the
// sizes in one run. Each size: the ids added to event_ids, N events pre-loaded into a topic of their own (a new topic:
// no snapshot of its filters), then the aggregator started on it: it builds the dedup filter of each partition it holds
// from event_ids (aggregator/dedup-filter.ts; chunks wait for their partition's filter). Its rate is counted from the
// moment every partition's filter is loaded (its log line) plus three chunks (those decoded while the filters loaded,
// which go through at once), to the end of the topic. Needs KAFKA_BROKERS. BENCH_HISTORY_SIZES sets the sizes (default
// 0 and 10M; 100M takes ~10 minutes to generate on 2 cores), BENCH_HISTORY_EVENTS the topic's events.
import { cpus, loadavg } from 'node:os'
import { Kafka, logLevel } from 'kafkajs'
import { pino } from 'pino'
import { loadConfig } from '../core/config.ts'
import { createMeter } from '../domains/catalog/meters/service.ts'
import { startRoles, type Running } from '../roles.ts'
import { BENCH_TOPIC_PREFIX, benchDataDir, fmt, removeBenchTopics, report } from './common.ts'
import { committedEvents, ensureYoungGeneration, preloadTopic } from './aggregator-drain.ts'

ensureYoungGeneration()

const SIZES = (process.env.BENCH_HISTORY_SIZES ?? '0,10000000').split(',').map(Number)
const N = Number(process.env.BENCH_HISTORY_EVENTS ?? 1_000_000)
const brokers = process.env.KAFKA_BROKERS
if (!brokers) {
  report('## 10. The aggregator against stored history\n\nNot measured: KAFKA_BROKERS is not set.')
  process.exit(0)
}
const startLoad = loadavg()
const env = { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', DATA_DIR: benchDataDir('history'), METER_BACKFILL_SETTLE_SECONDS: '0', METRICS_PORT: 'off' }
const kafka = new Kafka({ brokers: brokers.split(','), logLevel: logLevel.NOTHING })
const admin = kafka.admin()
await admin.connect()
const count = async (running: Running, query: string): Promise<number> => {
  const rs = await running.deps.ch.client.query({ query: `SELECT toString(count()) AS n FROM ${query}`, format: 'JSONEachRow' })
  return Number((await rs.json<{ n: string }>())[0].n)
}

const LOADED = /^dedup filter: (built from event_ids|loaded from its snapshot and topped up)$/
const rows: string[] = []
const topics: string[] = []
let scope: { tenantId: string; environmentId: string } | undefined
let stored = 0
let partitions = 0
for (const size of SIZES) {
  const topic = `${BENCH_TOPIC_PREFIX}history-${process.pid}-${size}`
  topics.push(topic)
  const config = loadConfig({ ...env, KAFKA_TOPIC: topic })
  partitions = config.kafkaTopics.partitions
  // The program without the aggregator: the tenant and a meter (first size), the topic, the history.
  let running = await startRoles(config, ['api', 'ingest'])
  if (!scope) {
    const tenant = running.bootstrap!
    scope = { tenantId: tenant.tenantId, environmentId: tenant.environments.production }
    await createMeter(running.deps, { ...scope, keyId: 'bench', roles: ['admin'] }, { name: 'tokens', event_name: 'api.call', aggregation: { type: 'SUM', field: 'tokens' } })
  }
  const generateStart = performance.now()
  for (let off = stored; off < size; off += 5_000_000) {
    const n = Math.min(5_000_000, size - off)
    // The customers the topic's events have (cust-0 … cust-999): each partition's filter holds its share. Stored days
    // ago (inserted_at with them).
    await running.deps.ch.commandApart(`INSERT INTO event_ids (tenant_id, environment_id, event_id, external_customer_id, event_name, timestamp, received_at, expires_at, inserted_at)
      SELECT '${scope.tenantId}', '${scope.environmentId}', toString(generateUUIDv4(number)), concat('cust-', toString(number % 1000)), 'api.call',
        now64(3) - toIntervalDay(2 + number % 30), now64(3) - toIntervalDay(2 + number % 30), now() + toIntervalDay(33 - number % 30), now() - toIntervalDay(2 + number % 30)
      FROM numbers(${off}, ${n})`)
  }
  if (size > stored) await running.deps.ch.commandApart('OPTIMIZE TABLE event_ids FINAL')
  const generateSeconds = (performance.now() - generateStart) / 1000
  stored = size
  const eventsBefore = await count(running, 'events')
  const produceRate = await preloadTopic(kafka, topic, scope, N)
  await running.stop()
  process.stderr.write(`aggregator-history: ${fmt(size)} ids stored, ${fmt(N)} events in ${topic}\n`)

  // The aggregator drains the topic; its log says when each partition's filter is loaded.
  const loads = new Map<number, { t: number; ids: number; ms: number }>()
  let loadedAt: number | undefined
  let rebuilds = 0
  const logger = pino({ level: 'info', base: undefined }, {
    write: (line: string) => {
      if (!line.includes('dedup filter')) return
      process.stderr.write(line)
      const { msg, partition, ids, ms } = JSON.parse(line) as { msg: string; partition: number; ids: number; ms: number }
      if (msg === 'dedup filter: rebuilt') rebuilds++
      if (!LOADED.test(msg)) return
      loads.set(partition, { t: performance.now(), ids, ms })
      if (loads.size === partitions) loadedAt ??= performance.now()
    },
  })
  const start = performance.now()
  running = await startRoles(config, ['api', 'ingest', 'aggregator'], { logger })
  const samples: { t: number; committed: number; cpu: number }[] = []
  for (;;) {
    const { committed, end } = await committedEvents(admin, topic)
    const cpu = process.cpuUsage()
    samples.push({ t: performance.now(), committed, cpu: cpu.user + cpu.system })
    if (committed === end) break
    await new Promise((r) => setTimeout(r, 50))
  }
  if (loadedAt === undefined) throw new Error(`${loads.size} of ${partitions} partitions' filters loaded by the end of the drain`)
  const atLoad = (samples.find((s) => s.t >= loadedAt!) ?? samples[samples.length - 1]).committed
  const from = samples.find((s) => s.committed >= atLoad + 3 * config.batch.aggregatorMaxRows)
  const last = samples[samples.length - 1]
  if (!from || from === last) throw new Error(`too few events (${N}) to measure past the filters' load`)
  const rate = (last.committed - from.committed) / ((last.t - from.t) / 1000)
  const cpuPerEvent = (last.cpu - from.cpu) / (last.committed - from.committed)
  const added = (await count(running, 'events')) - eventsBefore
  const duplicates = await count(running, "event_drops WHERE kind = 'duplicate'")
  await running.stop()
  const loaded = [...loads.values()]
  rows.push(
    `| ${fmt(size)} | ${fmt(generateSeconds, 1)} | ${fmt(produceRate)} | ${fmt((loadedAt - start) / 1000, 1)} | ${fmt(Math.max(...loaded.map((l) => l.ms)) / 1000, 1)} | ${fmt(loaded.reduce((s, l) => s + l.ids, 0))} | ${fmt(atLoad)} | ${fmt(rate)} | ${fmt(cpuPerEvent, 1)} | ${fmt(N / ((last.t - start) / 1000))} | ${fmt(added)} | ${fmt(duplicates)} | ${rebuilds} |`,
  )
}
await admin.disconnect()
await removeBenchTopics(brokers, topics)

report(`## 10. The aggregator against stored history (issue 18, part 1)

\`KAFKA_BROKERS=${brokers} BENCH_HISTORY_SIZES=${SIZES.join(',')} npx tsx bench/aggregator-history.bench.ts\`. ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'},
${new Date().toISOString().slice(0, 16)}Z, load average ${startLoad.map((l) => l.toFixed(1)).join(', ')} at the start and ${loadavg().map((l) => l.toFixed(1)).join(', ')} at the end.

One aggregator draining ${fmt(N)} new events (UUID ids, 1,000 customers, one SUM meter) from a topic of its own (${partitions}
partitions, all held by it), with the given number of ids already stored in the environment (generated in ClickHouse
straight into event_ids, aged 2–31 days), the sizes one after the other in one run, chDB in process. The aggregator builds
each partition's dedup filter from event_ids when it is assigned it (a new topic: no snapshots); a partition's chunks
wait for its filter. "Filters loaded after" counts from the call that starts the roles to the last partition's
log line; "slowest load" is that partition's own time (its log). "Steady events/s" (and the process's CPU per event, all
threads) counts from three chunks after the filters are loaded to the end of the topic; "whole drain" includes the
consumer group's join and the loads.

| stored ids | generate s | produced events/s | filters loaded after s | slowest load s | ids in the filters | committed when loaded | steady events/s | steady CPU µs/event | whole drain events/s | events stored | duplicates dropped | rebuilds |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
${rows.join('\n')}`)
process.exit(0)
