// (10) The aggregator against stored history (issue 18, part 1): the rate one aggregator drains a topic of new events at
// with 0, 10M, … ids already stored in the environment (generated in ClickHouse, aged 2–31 days as real history is), the
// sizes in one run. Each size: the ids added to event_ids, the dedup filter's generation filled from them (as the day's
// rotation would have), N events pre-loaded into a topic of their own, then the aggregator started on it. Its rate is
// counted from the moment its filter is in use (its top-up of the generation logged) plus three chunks (those its pipeline
// may have looked up the full way), to the end of the topic. Needs KAFKA_BROKERS. BENCH_HISTORY_SIZES sets the sizes (default 0
// and 10M; 100M takes ~10 minutes to generate on 2 cores and ~2.5 GB of memory), BENCH_HISTORY_EVENTS the topic's events.
import { cpus, loadavg } from 'node:os'
import { Kafka, logLevel } from 'kafkajs'
import { pino } from 'pino'
import { systemClock } from '../core/clock.ts'
import { loadConfig } from '../core/config.ts'
import { createLogger } from '../infra/logger.ts'
import { createMeter } from '../domains/catalog/meters/service.ts'
import { dedupFilter } from '../aggregator/dedup-filter.ts'
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
const env = { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', DATA_DIR: benchDataDir('history'), METER_BACKFILL_SETTLE_SECONDS: '0', METRICS_PORT: 'off' }
const kafka = new Kafka({ brokers: brokers.split(','), logLevel: logLevel.NOTHING })
const admin = kafka.admin()
await admin.connect()
const count = async (running: Running, query: string): Promise<number> => {
  const rs = await running.deps.ch.client.query({ query: `SELECT toString(count()) AS n FROM ${query}`, format: 'JSONEachRow' })
  return Number((await rs.json<{ n: string }>())[0].n)
}

const rows: string[] = []
const topics: string[] = []
let scope: { tenantId: string; environmentId: string } | undefined
let stored = 0
for (const size of SIZES) {
  const topic = `${BENCH_TOPIC_PREFIX}history-${process.pid}-${size}`
  topics.push(topic)
  const config = loadConfig({ ...env, KAFKA_TOPIC: topic })
  // The program without the aggregator: the tenant and a meter (first size), the topic, the history and the filter.
  let running = await startRoles(config, ['api', 'ingest'])
  if (!scope) {
    const tenant = running.bootstrap!
    scope = { tenantId: tenant.tenantId, environmentId: tenant.environments.production }
    await createMeter(running.deps, { ...scope, keyId: 'bench', roles: ['admin'] }, { name: 'tokens', event_name: 'api.call', aggregation: { type: 'SUM', field: 'tokens' } })
  }
  const generateStart = performance.now()
  for (let off = stored; off < size; off += 5_000_000) {
    const n = Math.min(5_000_000, size - off)
    await running.deps.ch.commandApart(`INSERT INTO event_ids (tenant_id, environment_id, event_id, external_customer_id, event_name, timestamp, received_at, expires_at)
      SELECT '${scope.tenantId}', '${scope.environmentId}', toString(generateUUIDv4(number)), concat('cust-', toString(number % 1000)), 'api.call',
        now64(3) - toIntervalDay(2 + number % 30), now64(3) - toIntervalDay(2 + number % 30), now() + toIntervalDay(33 - number % 30)
      FROM numbers(${n})`)
  }
  if (size > stored) await running.deps.ch.commandApart('OPTIMIZE TABLE event_ids FINAL')
  const generateSeconds = (performance.now() - generateStart) / 1000
  stored = size
  // A generation filled from scratch at this size, as the day's rotation fills one (the previous one dropped first).
  for (const g of [1, 2, 3]) {
    await running.deps.ch.client.command({ query: `DROP VIEW IF EXISTS event_id_seen_${g}_from_batches` })
    await running.deps.ch.client.command({ query: `DROP TABLE IF EXISTS event_id_seen_${g}` })
  }
  await running.deps.ch.client.command({ query: 'TRUNCATE TABLE event_id_seen_generations' })
  const fillStart = performance.now()
  await dedupFilter({ ch: running.deps.ch, logger: createLogger('silent'), clock: systemClock }).maintain(() => Promise.resolve())
  const fillSeconds = (performance.now() - fillStart) / 1000
  const eventsBefore = await count(running, 'events')
  const produceRate = await preloadTopic(kafka, topic, scope, N)
  await running.stop()

  // The aggregator drains the topic; its log says when its filter is in use.
  let trustedAt: number | undefined
  const logger = pino({ level: 'info', base: undefined }, { write: (line: string) => void (trustedAt ??= /dedup filter: generation (topped up|filled)/.test(line) ? performance.now() : undefined) })
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
  if (trustedAt === undefined) throw new Error('the dedup filter was not in use by the end of the drain')
  const atTrust = (samples.find((s) => s.t >= trustedAt!) ?? samples[samples.length - 1]).committed
  const from = samples.find((s) => s.committed >= atTrust + 3 * config.batch.aggregatorMaxRows)
  const last = samples[samples.length - 1]
  if (!from || from === last) throw new Error(`too few events (${N}) to measure past the filter's top-up`)
  const rate = (last.committed - from.committed) / ((last.t - from.t) / 1000)
  const cpuPerEvent = (last.cpu - from.cpu) / (last.committed - from.committed)
  const added = (await count(running, 'events')) - eventsBefore
  const duplicates = await count(running, "event_drops WHERE kind = 'duplicate'")
  await running.stop()
  rows.push(
    `| ${fmt(size)} | ${fmt(generateSeconds, 1)} | ${fmt(fillSeconds, 1)} | ${fmt(produceRate)} | ${fmt((trustedAt - start) / 1000, 1)} | ${fmt(rate)} | ${fmt(cpuPerEvent, 1)} | ${fmt(N / ((last.t - start) / 1000))} | ${fmt(added)} | ${fmt(duplicates)} |`,
  )
}
await admin.disconnect()
await removeBenchTopics(brokers, topics)

report(`## 10. The aggregator against stored history (issue 18, part 1)

One aggregator draining ${fmt(N)} new events (UUID ids, one SUM meter) from a topic of their own, with the given number of
ids already stored in the environment (generated in ClickHouse straight into event_ids, aged 2–31 days), the sizes one
after the other in one run, chDB in process. Before each drain the dedup filter's generation is filled from event_ids
(as the daily rotation fills it; its time is the "fill" column); the aggregator tops it up at start and looks up with it
from then on. "Steady events/s" (and the process's CPU per event, all threads) counts from three chunks after the top-up to the end of the topic; "whole drain" includes
the consumer group's join and the top-up. Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'},
${new Date().toISOString().slice(0, 16)}Z, load average ${loadavg().map((l) => l.toFixed(1)).join(', ')} at the end.

| stored ids | generate s | fill s | produced events/s | top-up done after s | steady events/s | steady CPU µs/event | whole drain events/s | events stored | duplicates dropped |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
${rows.join('\n')}`)
process.exit(0)
