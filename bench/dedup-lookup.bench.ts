// (9) The dedup filter against stored history (issue 18, part 1), through the program's own code on chDB in this process:
// for 1M, 10M, … ids stored in one environment (generated straight into event_ids, aged 2–31 days), the filter of
// direct mode (aggregator/dedup-filter.ts, one partition) built from event_ids: its time, its bytes an id and the
// process's memory with it; then the lookup of 50,000-id chunks with none, 1% and half of their ids stored, through
// the filter (`f.of(0).stored`) and the full lookup (`storedRows`) as the same run's baseline; then, at the largest size,
// a restart: a new filter loading the snapshot its predecessor's stop() wrote, topped up with the ids stored since,
// until its first lookup answers. DEDUP_SIZES sets the sizes (default 1M and 10M; 100M takes ~10 minutes to generate
// on 2 cores), DEDUP_RECENT the ids stored after the snapshot at the restart (default 1% of the largest size).
import { copyFile, readFile, stat } from 'node:fs/promises'
import { readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { randomUUID } from 'node:crypto'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import { pino } from 'pino'
import { loadConfig } from '../core/config.ts'
import { ID_HASH_SQL } from '../core/dedup-hash.ts'
import { openClickHouse, type ClickHouse } from '../infra/clickhouse.ts'
import { createMetrics } from '../infra/metrics.ts'
import { SQL_DIR, splitStatements } from '../infra/migrate.ts'
import { dedupFilter, type DedupFilter } from '../aggregator/dedup-filter.ts'
import { lookupOf, storedRows, type KeyLookup } from '../aggregator/store.ts'
import { benchDataDir, fmt, percentile, report } from './common.ts'

const SIZES = (process.env.DEDUP_SIZES ?? '1000000,10000000').split(',').map(Number)
const LARGEST = Math.max(...SIZES)
const RECENT = Number(process.env.DEDUP_RECENT ?? Math.round(LARGEST / 100))
const CHUNK = 50_000
const RUNS = 7
const MB = 1024 * 1024
const SLICE = 5_000_000
const startLoad = loadavg()

const dataDir = benchDataDir('dedup')
const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent' })
const ch = await openClickHouse(config)
for (const file of readdirSync(join(SQL_DIR, 'clickhouse')).sort()) {
  for (const statement of splitStatements(readFileSync(join(SQL_DIR, 'clickhouse', file), 'utf8'))) await ch.client.command({ query: statement })
}
const run = (query: string) => ch.client.command({ query, clickhouse_settings: { max_execution_time: 0 } })
const scope = { tenantId: 't', environmentId: 'e' }

// The filter's log, kept: its lines say when a load ended and whether a rebuild began.
const lines: { t: number; msg: string; ms?: number }[] = []
const logger = pino({ level: 'info', base: undefined }, {
  write: (line: string) => {
    const { msg, ms } = JSON.parse(line) as { msg: string; ms?: number }
    lines.push({ t: performance.now(), msg, ms })
    process.stderr.write(line)
  },
})

// ClickHouse as the filter gets it, with each streamed statement (a build's or a top-up's hashes) timed: the span
// from the statement's start to its last row read, the filter's parse and adds included.
const streams: { query: string; start: number; end: number; bytes: number }[] = []
const timedCh: ClickHouse = {
  ...ch,
  async *streamCsv(q) {
    const s = { query: q.query, start: performance.now(), end: Number.NaN, bytes: 0 }
    streams.push(s)
    for await (const piece of ch.streamCsv(q)) {
      s.bytes += piece.bytes.length
      yield piece
    }
    s.end = performance.now()
  },
}
const deps = { ch: timedCh, logger, config, metrics: createMetrics() }

/** Resident memory now and at its peak since the last reset (Linux /proc: chDB's memory is the process's). */
const rss = (): { now: number; peak: number } => {
  const status = readFileSync('/proc/self/status', 'utf8')
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? Number.NaN) * 1024
  return { now: kb('VmRSS'), peak: kb('VmHWM') }
}
const resetPeak = (): void => writeFileSync('/proc/self/clear_refs', '5')

/** Each size's filters have a name (a directory of snapshots) of their own: its first is built from event_ids. */
const snapshotOf = (name: string): string => join(dataDir, 'dedup-filter', name, '0.bloom')
/** A filter of direct mode (one partition, 0), loaded (from the snapshot when there is one) before it returns. */
async function loaded(name: string): Promise<DedupFilter> {
  const f = dedupFilter(deps, { name, partitions: async () => 1 })
  await f.assign([0])
  await f.of(0).stored(lookupOf([]))
  return f
}

const newIds = (n: number): string[] => Array.from({ length: n }, () => randomUUID())
const chunkOf = (storedIds: string[]): KeyLookup => lookupOf([...storedIds, ...newIds(CHUNK - storedIds.length)].map((id) => ({ ...scope, id })))

/** ms of one call, checking it found `expected` stored rows. */
async function timed(lookup: () => Promise<unknown[]>, expected: number): Promise<number> {
  const t = performance.now()
  const found = (await lookup()).length
  const ms = performance.now() - t
  if (found !== expected) throw new Error(`found ${found} of ${expected}`)
  return ms
}

const seconds = (ms: number) => fmt(ms / 1000, 1)
const HASHES = `SELECT toUInt32(bitShiftRight(h, 32)) AS hi, toUInt32(bitAnd(h, 4294967295)) AS lo FROM (SELECT ${ID_HASH_SQL} AS h FROM event_ids WHERE expires_at > now())`
const KINDS = [
  { name: 'none', stored: 0 },
  { name: '1%', stored: CHUNK / 100 },
  { name: 'half', stored: CHUNK / 2 },
] as const

const buildRows: string[] = []
const partsRows: string[] = []
const lookupRows: string[] = []
const restartRows: string[] = []
let stored = 0
let generatedSeconds = 0
for (const size of SIZES) {
  const generateStart = performance.now()
  for (let off = stored; off < size; off += SLICE) {
    const n = Math.min(SLICE, size - off)
    // History stored days ago (inserted_at aged with it): a top-up after a snapshot reads none of it.
    await run(`INSERT INTO event_ids (tenant_id, environment_id, event_id, external_customer_id, event_name, timestamp, received_at, expires_at, inserted_at)
      SELECT 't', 'e', toString(generateUUIDv4(number)), concat('cust-', toString(number % 1000)), 'api.call',
        now64(3) - toIntervalDay(2 + number % 30), now64(3) - toIntervalDay(2 + number % 30), now() + toIntervalDay(33 - number % 30), now() - toIntervalDay(2 + number % 30)
      FROM numbers(${off}, ${n})`)
  }
  if (size > stored) await run('OPTIMIZE TABLE event_ids FINAL')
  generatedSeconds += (performance.now() - generateStart) / 1000
  stored = size
  process.stderr.write(`dedup-lookup: ${fmt(size)} ids stored (${fmt(generatedSeconds)} s so far)\n`)

  // (a, b) The filter built from event_ids: no snapshot yet at this size.
  const name = `size-${size}`
  const snapshotFile = snapshotOf(name)
  const before = rss()
  resetPeak()
  const buildStart = performance.now()
  const streamed = streams.length
  const built = await loaded(name)
  const buildMs = performance.now() - buildStart
  const after = rss()
  const [{ ids, bytes }] = built.held()
  const hashes = streams[streamed]
  const stopStart = performance.now()
  await built.stop()
  const stopMs = performance.now() - stopStart
  const snapshotBytes = (await stat(snapshotFile)).size
  const original = join(dataDir, `snapshot-${size}.bloom`)
  await copyFile(snapshotFile, original)
  buildRows.push(
    `| ${fmt(size)} | ${fmt(ids)} | ${seconds(buildMs)} | ${seconds(hashes.end - hashes.start)} | ${fmt(bytes / MB, 1)} | ${fmt(bytes / ids, 2)} | ${fmt(before.now / MB)} | ${fmt(after.now / MB)} | ${fmt((after.now - before.now) / ids, 2)} | ${fmt(after.peak / MB)} | ${fmt(stopMs)} |`,
  )

  // Where the build's time goes: ClickHouse computing the hashes (no output), then sending them as CSV (not parsed).
  const computeStart = performance.now()
  await run(`SELECT sum(hi) + sum(lo) FROM (${HASHES}) FORMAT Null`)
  const computeMs = performance.now() - computeStart
  const csvStart = performance.now()
  let csvBytes = 0
  for await (const piece of ch.streamCsv({ query: HASHES })) csvBytes += piece.bytes.length
  const csvMs = performance.now() - csvStart
  partsRows.push(
    `| ${fmt(size)} | ${seconds(computeMs)} | ${seconds(csvMs)} | ${fmt(csvBytes / MB)} | ${seconds(hashes.end - hashes.start)} | ${fmt((hashes.end - hashes.start - csvMs) / (ids / 1e6))} |`,
  )

  // (c) Chunks with none, 1% and half of their ids stored: distinct ids each run, new ones never seen. Each run a filter
  // loaded anew from the size's snapshot, so the 150,000 ids the run's chunks add (held, as the aggregator holds them
  // until their insert lands) do not pile up over the runs past the filter's headroom (a rebuild).
  const rs = await ch.client.query({ query: `SELECT event_id FROM event_ids ORDER BY rand() LIMIT ${(RUNS * CHUNK) / 2}`, format: 'JSONCompactEachRow' })
  const sample = (await rs.json<[string]>()).map(([id]) => id)
  const times = KINDS.map(() => ({ full: [] as number[], filter: [] as number[] }))
  const rebuildsBefore = lines.filter((l) => l.msg === 'dedup filter: rebuilt').length
  for (let r = 0; r < RUNS; r++) {
    await copyFile(original, snapshotFile)
    const f = await loaded(name)
    for (const [k, kind] of KINDS.entries()) {
      // (Under RUNS × 25,000 stored ids the runs share some.)
      const lookup = chunkOf(Array.from({ length: kind.stored }, (_, i) => sample[((r * CHUNK) / 2 + i) % sample.length]))
      // Alternately first: the one after reads event_ids' granules the other just read.
      const full = () => timed(() => storedRows(ch, lookup), kind.stored)
      const filtered = () => timed(() => f.of(0).stored(lookup), kind.stored)
      if (r % 2 === 0) {
        times[k].full.push(await full())
        times[k].filter.push(await filtered())
      } else {
        times[k].filter.push(await filtered())
        times[k].full.push(await full())
      }
    }
    await f.stop()
    process.stderr.write(`dedup-lookup: ${fmt(size)}, run ${r + 1}: ${times.map((t, k) => `${KINDS[k].name} ${fmt(t.full[r])}/${fmt(t.filter[r])} ms`).join(', ')}\n`)
  }
  const rebuilds = lines.filter((l) => l.msg === 'dedup filter: rebuilt').length - rebuildsBefore
  const p50 = (xs: number[]) => percentile([...xs].sort((a, b) => a - b), 50)
  lookupRows.push(
    `| ${fmt(size)} | ${times.map((t) => `${fmt(p50(t.full), 1)} | ${fmt(p50(t.filter), 1)} | ${fmt(p50(t.filter) / p50(t.full), 2)}`).join(' | ')} | ${rebuilds} | ${loadavg()[0].toFixed(1)} |`,
  )

  // (d) At the largest size: a restart. The snapshot stop() wrote, then ids stored since (inserted_at now), then a new
  // filter loading it until its first lookup (a chunk of new ids) answers.
  if (size !== LARGEST) continue
  await copyFile(original, snapshotFile)
  for (let off = 0; off < RECENT; off += SLICE) {
    await run(`INSERT INTO event_ids (tenant_id, environment_id, event_id, external_customer_id, event_name, timestamp, received_at, expires_at)
      SELECT 't', 'e', toString(generateUUIDv4(number)), concat('cust-', toString(number % 1000)), 'api.call', now64(3), now64(3), now() + toIntervalDay(35)
      FROM numbers(${size + off}, ${Math.min(SLICE, RECENT - off)})`)
  }
  const first = chunkOf([])
  await run(`SYSTEM DROP MARK CACHE`)
  const fileStart = performance.now()
  await readFile(snapshotFile)
  const fileMs = performance.now() - fileStart
  const streamedBefore = streams.length
  const linesBefore = lines.length
  const restartStart = performance.now()
  const f = dedupFilter(deps, { name, partitions: async () => 1 })
  await f.assign([0])
  await timed(() => f.of(0).stored(first), 0)
  const restartMs = performance.now() - restartStart
  const loadLine = lines.slice(linesBefore).find((l) => l.msg.startsWith('dedup filter: loaded from its snapshot'))
  if (!loadLine) throw new Error('the restart did not load the snapshot')
  const topUp = streams[streamedBefore]
  const [held] = f.held()
  await f.stop()
  restartRows.push(
    `| ${fmt(size)} | ${fmt(snapshotBytes / MB)} | ${fmt(RECENT)} | ${fmt(held.ids - CHUNK)} | **${fmt(restartMs)}** | ${fmt(topUp.start - restartStart)} | ${fmt(fileMs)} | ${fmt(topUp.end - topUp.start)} | ${fmt(restartMs - (loadLine.t - restartStart))} |`,
  )
}
await ch.close()

const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${new Date().toISOString().slice(0, 16)}Z, load average ${startLoad.map((l) => l.toFixed(1)).join(', ')} at the start and ${loadavg().map((l) => l.toFixed(1)).join(', ')} at the end`
report(`## 9. The dedup filter against stored history (issue 18, part 1)

\`DEDUP_SIZES=${SIZES.join(',')} npx tsx bench/dedup-lookup.bench.ts\` (history generated in ${fmt(generatedSeconds)} s). ${machine}.
chDB in process, one environment's ids (UUIDs) generated straight into event_ids, aged 2–31 days; the filter of direct
mode (one partition) through the program's code (aggregator/dedup-filter.ts).

Built from event_ids at each size (no snapshot yet): its ids and time, the span of the hashes' statement (ClickHouse's
xxHash64 of each id, read as CSV, parsed and added), the Bloom filter's bytes, and the process's resident memory
before and after the build and at its peak during it (chDB's memory included); the snapshot's write at stop():

| stored ids | ids in the filter | build s | of which hashes streamed s | filter MB | filter bytes per id | RSS MB before | RSS MB after | RSS growth bytes per id | peak RSS MB | stop() ms |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
${buildRows.join('\n')}

Where the build's hashes statement spends its time: ClickHouse computing the hashes alone (FORMAT Null), then streaming
them as the CSV the filter reads without parsing it, against the build's own span (parsing and adding too):

| stored ids | hashes computed s | CSV streamed, not parsed s | CSV MB | build's span s | parse and add ms per million ids |
| ---: | ---: | ---: | ---: | ---: | ---: |
${partsRows.join('\n')}

A ${fmt(CHUNK)}-id chunk looked up, p50 of ${RUNS} runs (ms), each run's chunks of distinct ids, with none, 1% and half of them
stored: \`full\` the lookup without a filter (storedRows: the chunk's sipHash64s matched by a scan of the scope's id_hash
column), \`filter\` \`f.of(0).stored(lookupOf(keys))\` (the probe, then the exact lookup of its hits only); the ratio filter / full;
the rebuilds the filters began (their ids past the headroom: a run's chunks add 150,000, under 1.2M stored ids too many):

| stored ids | none: full | none: filter | none: ratio | 1%: full | 1%: filter | 1%: ratio | half: full | half: filter | half: ratio | rebuilds begun | load average after |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
${lookupRows.join('\n')}

A restart at the largest size: a new filter loading the snapshot stop() wrote, topped up with the ids stored since
(inserted_at ≥ the snapshot's time less 10 minutes: the ids generated after it), until its first lookup (50,000 new ids)
answers. "Before the top-up" is the load's first steps (the old Set generations' check, ClickHouse's clock, the snapshot
read and copied), the snapshot file's read alone measured just before; "after" is the first lookup:

| stored ids | snapshot MB | ids stored since | ids in the filter after its top-up | first lookup answered after ms | before the top-up ms | snapshot file read ms | top-up ms | first lookup ms |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
${restartRows.join('\n')}`)
process.exit(0)
