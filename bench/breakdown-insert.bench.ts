// What the usage breakdown views (sql/clickhouse/0005_usage_breakdowns.sql) add to the batch insert: 50,000-event
// batches written the way the aggregator writes them into event_batches of two databases in one chDB, `base`
// (migrations before 0005) and `breakdowns` (all of them), the same rows into each, alternated (the order flips each
// round). CPU of the whole process (chDB runs in it) per insert, with background merges stopped so each insert is
// charged its own work only; the difference is taken round by round (paired), which the machine's other load skews
// less than either number. ROUNDS, EVENTS and CUSTOMERS change the shape; MIGRATION=0006 measures that migration's view
// (the reconciliation's drop counts) the same way: migrations before it against those up to it.
import { randomUUID } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadConfig } from '../core/config.ts'
import { openClickHouse } from '../infra/clickhouse.ts'
import { SQL_DIR, splitStatements } from '../infra/migrate.ts'
import { batchLine, expiresText } from '../aggregator/store.ts'
import { benchDataDir, fmt, report } from './common.ts'

const ROUNDS = Number(process.env.ROUNDS ?? 30)
const EVENTS = Number(process.env.EVENTS ?? 50_000)
const CUSTOMERS = Number(process.env.CUSTOMERS ?? 1000)
const SOURCES = ['api', 'sdk', 'import']

const ch = await openClickHouse(loadConfig({ DATA_DIR: benchDataDir('breakdowns'), LOG_LEVEL: 'silent' }))
const files = readdirSync(join(SQL_DIR, 'clickhouse')).filter((f) => f.endsWith('.sql')).sort()
const MIGRATION = process.env.MIGRATION ?? '0005'
const DATABASES = { base: files.filter((f) => f < MIGRATION), breakdowns: files.filter((f) => f.slice(0, 4) <= MIGRATION) } as const
type Db = keyof typeof DATABASES
for (const [db, list] of Object.entries(DATABASES)) {
  await ch.client.command({ query: `CREATE DATABASE IF NOT EXISTS ${db}` })
  await ch.client.command({ query: `USE ${db}` })
  for (const f of list) for (const s of splitStatements(readFileSync(join(SQL_DIR, 'clickhouse', f), 'utf8'))) await ch.client.command({ query: s })
}
await ch.client.command({ query: `USE ${ch.database}` })
await ch.client.command({ query: 'SYSTEM STOP MERGES' })

let clock = Date.parse('2024-03-01T00:00:00Z')
/** A batch as the aggregator writes it: one SUM meter, customers and sources spread over ~10 minutes of events. */
function batch(): Buffer {
  const lines: string[] = []
  const expires = expiresText(new Date(clock + 35 * 86_400_000))
  for (let k = 0; k < EVENTS; k++) {
    const at = new Date(clock + Math.floor((k * 600_000) / EVENTS))
    const event = { id: randomUUID(), tenantId: 'ten_bench', environmentId: 'env_bench', eventName: 'api.call', externalCustomerId: `cust-${k % CUSTOMERS}`, customerId: '', source: SOURCES[k % SOURCES.length], timestamp: at, receivedAt: at, properties: { tokens: k % 5000, model: 'gpt-4o' } }
    lines.push(batchLine({ kind: 'stored', event, rows: [{ meterId: 'mtr_bench', revision: 1, value: String(k % 5000), groupValue: '', uniqueValue: '' }] }, expires))
  }
  clock += 600_000
  return Buffer.from(lines.join('\n'))
}

/** The batch writer's insert (aggregator/store.ts insertBatch) into one database; CPU and wall milliseconds. */
async function insert(db: Db, rows: Buffer): Promise<{ cpu: number; wall: number }> {
  const cpu = process.cpuUsage()
  const t = performance.now()
  await ch.insertRaw({
    table: `${db}.event_batches`,
    format: 'JSONCompactEachRow',
    rows,
    settings: {
      insert_deduplication_token: randomUUID(),
      deduplicate_blocks_in_dependent_materialized_views: 1,
      max_insert_block_size: '10000000',
      max_block_size: '10000000',
      min_insert_block_size_rows: '0',
      min_insert_block_size_bytes: '0',
      parallel_view_processing: 1,
      optimize_on_insert: 0,
      input_format_json_read_objects_as_strings: 1,
      input_format_parallel_parsing: 0,
    },
  })
  const used = process.cpuUsage(cpu)
  return { cpu: (used.user + used.system) / 1000, wall: performance.now() - t }
}

const results: Record<Db, { cpu: number; wall: number }[]> = { base: [], breakdowns: [] }
for (const db of Object.keys(DATABASES) as Db[]) await insert(db, batch()) // warm-up
for (let r = 0; r < ROUNDS; r++) {
  const rows = batch()
  for (const db of (r % 2 === 0 ? ['base', 'breakdowns'] : ['breakdowns', 'base']) as Db[]) results[db].push(await insert(db, rows))
}
await ch.close()

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b)
const median = (xs: number[]) => sorted(xs)[Math.floor(xs.length / 2)]
const quartile = (xs: number[]) => sorted(xs)[Math.floor(xs.length / 4)]
const perEvent = (ms: number) => fmt((ms * 1000) / EVENTS, 2)
const cpu = (db: Db) => results[db].map((x) => x.cpu)
const paired = results.breakdowns.map((x, i) => x.cpu - results.base[i].cpu)
const label = (db: Db) => (MIGRATION === '0005' ? db : db === 'base' ? `before ${MIGRATION}` : `with ${MIGRATION}`)
const row = (db: Db) => `| ${label(db)} | ${fmt(median(cpu(db)))} (${perEvent(median(cpu(db)))} µs) | ${fmt(quartile(cpu(db)))} | ${fmt(median(results[db].map((x) => x.wall)))} |`
const title = MIGRATION === '0005' ? 'Usage breakdown views: insert cost' : `Migration ${MIGRATION}'s views: insert cost`
report(`## ${title}

${ROUNDS} rounds of ${fmt(EVENTS)}-event batches (${fmt(CUSTOMERS)} customers, ${SOURCES.length} sources, one meter) into \`event_batches\`
with and without migration ${MIGRATION}'s views, alternated, merges stopped; CPU of the process per insert (chDB runs in it).

| database | CPU median, ms (per event) | CPU lower quartile, ms | wall median, ms |
| --- | --- | --- | --- |
${row('base')}
${row('breakdowns')}

The views add ${fmt(median(paired))} ms of CPU per insert (median of the paired differences), ${fmt((100 * median(paired)) / median(cpu('base')), 1)}% of the
insert without them; lower quartiles: ${fmt((100 * (quartile(cpu('breakdowns')) - quartile(cpu('base')))) / quartile(cpu('base')), 1)}%.`)
