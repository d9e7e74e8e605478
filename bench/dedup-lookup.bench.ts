// (9) How the exactly-once lookup grows with stored history (issue 18, part 1): the time ClickHouse takes to find
// which of a 50,000-id chunk (half stored, half new) are stored, against 1M, 10M, … stored ids of one environment,
// for the current table (event_ids ordered by id; the chunk's hashes matched by a scan of the scope's id_hash
// column) and for a candidate ordered by the id's hash with a fine granularity (a chunk reads only the granules its
// hashes fall in, once the stored ids far outnumber chunk × granularity). chDB in this process; DEDUP_SIZES sets the
// sizes (default 1M and 10M; 100M takes ~10 minutes to generate on 2 cores).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { randomUUID } from 'node:crypto'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Session } from 'chdb'
import { fmt, percentile, report } from './common.ts'

const SIZES = (process.env.DEDUP_SIZES ?? '1000000,10000000').split(',').map(Number)
const GRANULARITY = Number(process.env.DEDUP_GRANULARITY ?? 256)
const CHUNK = 50_000
const RUNS = 7

const dir = mkdtempSync(join(tmpdir(), 'meterbill-bench-dedup-'))
const session = new Session(join(dir, 'data'))
const run = (sql: string): string => session.query(sql, 'TSV')
run(`CREATE TABLE current (tenant_id LowCardinality(String), environment_id LowCardinality(String), event_id String,
  id_hash UInt64 MATERIALIZED sipHash64(event_id)) ENGINE = ReplacingMergeTree ORDER BY (tenant_id, environment_id, event_id)`)
run(`CREATE TABLE by_hash (tenant_id LowCardinality(String), environment_id LowCardinality(String), id_hash UInt64, event_id String)
  ENGINE = ReplacingMergeTree ORDER BY (tenant_id, environment_id, id_hash) SETTINGS index_granularity = ${GRANULARITY}`)

const idsFile = join(dir, 'ids.tsv')
const chunk = `SELECT sipHash64(event_id) FROM file('${idsFile}', TSV, 'event_id String')`
const QUERIES = {
  current: `SELECT event_id FROM current PREWHERE id_hash IN (${chunk}) WHERE tenant_id = 't' AND environment_id = 'e'`,
  by_hash: `SELECT event_id FROM by_hash WHERE tenant_id = 't' AND environment_id = 'e' AND id_hash IN (${chunk})`,
}

async function timed(sql: string): Promise<{ p50: number; min: number; found: number }> {
  const times: number[] = []
  let found = 0
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now()
    found = (await session.queryAsync(sql, { format: 'TSV' })).text().trim().split('\n').length
    times.push(performance.now() - t)
  }
  times.sort((a, b) => a - b)
  return { p50: percentile(times, 50), min: times[0], found }
}

/** Granules of by_hash the chunk's hashes select, of all (EXPLAIN indexes). */
function granules(): string {
  const m = /Granules: (\d+)\/(\d+)/.exec(run(`EXPLAIN indexes = 1 ${QUERIES.by_hash}`))
  return m ? `${fmt(Number(m[1]))} of ${fmt(Number(m[2]))}` : '?'
}

const rows: string[] = []
let stored = 0
for (const size of SIZES) {
  for (let off = stored; off < size; off += 5_000_000) {
    const n = Math.min(5_000_000, size - off)
    run(`INSERT INTO current (tenant_id, environment_id, event_id) SELECT 't', 'e', toString(generateUUIDv4(number)) FROM numbers(${n})`)
  }
  run('TRUNCATE TABLE by_hash')
  run('INSERT INTO by_hash SELECT tenant_id, environment_id, id_hash, event_id FROM current')
  run('OPTIMIZE TABLE current FINAL')
  run('OPTIMIZE TABLE by_hash FINAL')
  stored = size
  const old = run(`SELECT event_id FROM current ORDER BY rand() LIMIT ${CHUNK / 2}`).trim().split('\n')
  writeFileSync(idsFile, [...old, ...Array.from({ length: CHUNK / 2 }, () => randomUUID())].join('\n'))
  const a = await timed(QUERIES.current)
  const b = await timed(QUERIES.by_hash)
  if (a.found !== CHUNK / 2 || b.found !== CHUNK / 2) throw new Error(`found ${a.found} and ${b.found} of ${CHUNK / 2}`)
  rows.push(`| ${fmt(size)} | ${fmt(a.p50, 1)} | ${fmt(a.min, 1)} | ${fmt(b.p50, 1)} | ${fmt(b.min, 1)} | ${granules()} |`)
}
session.close()
rmSync(dir, { recursive: true, force: true })

report(`## 9. The exactly-once lookup against stored history (issue 18, part 1)

A ${fmt(CHUNK)}-id chunk (half stored, half new) looked up among the stored ids of one environment, ${RUNS} runs each, chDB in
process: \`current\` is event_ids as it is (ordered by id; the chunk's sipHash64s matched by scanning the scope's id_hash
column), \`by_hash\` a candidate ordered by (tenant, environment, id_hash) with index_granularity ${GRANULARITY}, whose
primary key selects only the granules the chunk's hashes fall in. Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'},
${new Date().toISOString().slice(0, 16)}Z, load average ${loadavg().map((l) => l.toFixed(1)).join(', ')} at the end.

| stored ids | current p50 ms | current min ms | by_hash p50 ms | by_hash min ms | by_hash granules read |
| ---: | ---: | ---: | ---: | ---: | ---: |
${rows.join('\n')}`)
process.exit(0)
