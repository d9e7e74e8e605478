// (9) How the exactly-once lookup grows with stored history (issue 18, part 1): the time the dedup lookup takes to find
// which ids of a 50,000-id chunk are stored, against 1M, 10M, … stored ids of one environment, through the program's
// own code (storedRows, dedupFilter) on chDB in this process: `current` is the full lookup (the chunk's sipHash64s
// matched by a scan of the scope's id_hash column of event_ids), `filter` the dedup filter's Set probe and then the
// exact lookup of its hits only, for chunks with half, 1% and none of their ids stored. Also the filter's fill time and
// the process's memory with it. DEDUP_SIZES sets the sizes (default 1M and 10M; 100M takes ~10 minutes to generate on
// 2 cores and ~2.5 GB of memory).
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { randomUUID } from 'node:crypto'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { systemClock } from '../core/clock.ts'
import { loadConfig } from '../core/config.ts'
import { openClickHouse } from '../infra/clickhouse.ts'
import { createLogger } from '../infra/logger.ts'
import { SQL_DIR, splitStatements } from '../infra/migrate.ts'
import { dedupFilter } from '../aggregator/dedup-filter.ts'
import { lookupOf, storedRows, type KeyLookup } from '../aggregator/store.ts'
import { fmt, percentile, report } from './common.ts'

const SIZES = (process.env.DEDUP_SIZES ?? '1000000,10000000').split(',').map(Number)
const CHUNK = 50_000
const RUNS = 7
const MB = 1024 * 1024

const dir = mkdtempSync(join(tmpdir(), 'meterbill-bench-dedup-'))
const ch = await openClickHouse(loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent' }))
for (const file of readdirSync(join(SQL_DIR, 'clickhouse')).sort()) {
  for (const statement of splitStatements(readFileSync(join(SQL_DIR, 'clickhouse', file), 'utf8'))) await ch.client.command({ query: statement })
}
const run = (query: string) => ch.client.command({ query, clickhouse_settings: { max_execution_time: 0 } })
const scope = { tenantId: 't', environmentId: 'e' }
const logger = createLogger('info')

async function timed(lookup: () => Promise<unknown[]>, expected: number): Promise<{ p50: number; min: number }> {
  const times: number[] = []
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now()
    const found = (await lookup()).length
    times.push(performance.now() - t)
    if (found !== expected) throw new Error(`found ${found} of ${expected}`)
  }
  times.sort((a, b) => a - b)
  return { p50: percentile(times, 50), min: times[0] }
}

const rows: string[] = []
const memory: string[] = []
let stored = 0
for (const size of SIZES) {
  for (let off = stored; off < size; off += 5_000_000) {
    const n = Math.min(5_000_000, size - off)
    // Straight into event_ids, as history written before the filter (the fill below reads it).
    await run(`INSERT INTO event_ids (tenant_id, environment_id, event_id, expires_at)
      SELECT 't', 'e', toString(generateUUIDv4(number)), now() + INTERVAL 35 DAY FROM numbers(${n})`)
  }
  await run('OPTIMIZE TABLE event_ids FINAL')
  stored = size
  // A generation filled from scratch at this size (the previous one dropped first).
  for (const g of [1, 2, 3]) {
    await run(`DROP VIEW IF EXISTS event_id_seen_${g}_from_batches`)
    await run(`DROP TABLE IF EXISTS event_id_seen_${g}`)
  }
  await run('TRUNCATE TABLE event_id_seen_generations')
  const filter = dedupFilter({ ch, logger, clock: systemClock })
  const rssBefore = process.memoryUsage().rss
  const fillStart = performance.now()
  await filter.maintain(() => Promise.resolve())
  const fillSeconds = (performance.now() - fillStart) / 1000
  const rss = process.memoryUsage().rss
  const set = await ch.client.query({ query: "SELECT total_rows, total_bytes FROM system.tables WHERE database = currentDatabase() AND name = 'event_id_seen_1'", format: 'JSONEachRow' })
  const [{ total_rows: setIds, total_bytes: setBytes }] = await set.json<{ total_rows: string; total_bytes: string }>()
  const rs = await ch.client.query({ query: `SELECT event_id FROM event_ids ORDER BY rand() LIMIT ${CHUNK / 2}`, format: 'JSONCompactEachRow' })
  const old = (await rs.json<[string]>()).map(([id]) => id)
  const chunk = (storedIds: number): KeyLookup => lookupOf([...old.slice(0, storedIds), ...Array.from({ length: CHUNK - storedIds }, () => randomUUID())].map((id) => ({ ...scope, id })))
  const [half, few, none] = [chunk(CHUNK / 2), chunk(CHUNK / 100), chunk(0)]
  const current = await timed(() => storedRows(ch, half), CHUNK / 2)
  const filtered = await timed(() => filter.stored(half, [scope]), CHUNK / 2)
  const fewFiltered = await timed(() => filter.stored(few, [scope]), CHUNK / 100)
  const noneFiltered = await timed(() => filter.stored(none, [scope]), 0)
  await filter.stop()
  rows.push(`| ${fmt(size)} | ${fmt(current.p50, 1)} | ${fmt(filtered.p50, 1)} | ${fmt(fewFiltered.p50, 1)} | ${fmt(noneFiltered.p50, 1)} | ${fmt(noneFiltered.min, 1)} |`)
  memory.push(`| ${fmt(size)} | ${fmt(Number(setIds))} | ${fmt(fillSeconds, 1)} | ${fmt(Number(setBytes) / MB)} | ${fmt(Number(setBytes) / Number(setIds), 1)} | ${fmt(rssBefore / MB)} | ${fmt(rss / MB)} |`)
}
await ch.close()
rmSync(dir, { recursive: true, force: true })

report(`## 9. The exactly-once lookup against stored history (issue 18, part 1)

A ${fmt(CHUNK)}-id chunk of UUIDs looked up among the stored ids of one environment, ${RUNS} runs each (p50, ms), chDB in process,
through the program's code: \`current\` is the full lookup (storedRows: the chunk's sipHash64s matched by a scan of the
scope's id_hash column of event_ids), \`filter\` the dedup filter (aggregator/dedup-filter.ts: the Set probe of the
chunk's scoped hashes, then the exact lookup in event_ids of the hits only), for a chunk with half, 1% and none of its ids
stored. Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${new Date().toISOString().slice(0, 16)}Z, load average
${loadavg().map((l) => l.toFixed(1)).join(', ')} at the end.

| stored ids | current, half stored | filter, half stored | filter, 1% stored | filter, none stored | filter, none stored, min |
| ---: | ---: | ---: | ---: | ---: | ---: |
${rows.join('\n')}

The filter's generation filled from event_ids at each size: its Set's size as ClickHouse counts it (system.tables), and
the process's resident memory before and after the fill (chDB's caches included; memory freed by the previous size's
Set is reused rather than returned):

| stored ids | ids in the Set | fill s | Set MB | Set bytes per id | RSS MB before fill | RSS MB after |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: |
${memory.join('\n')}`)
process.exit(0)
