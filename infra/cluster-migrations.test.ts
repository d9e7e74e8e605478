// Cluster mode (CLICKHOUSE_CLUSTER) on every migration file there is, whichever files are added later: the rewritten
// statements have the shape a replicated cluster needs, each parses on ClickHouse (chDB's parser, through
// formatQuery: chDB has no Keeper, so it cannot create Replicated tables), and migrate() applies them on a cluster.
// Not run here: the statements on a real cluster (docs/operations.md, ClickHouse cluster mode).
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ClickHouseClient } from '@clickhouse/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { clusterMigrations, clusterMigrationsTable, LOCAL_SUFFIX } from '../core/cluster-ddl.ts'
import { testConfig } from '../test/harness.ts'
import { openClickHouse, type ClickHouse } from './clickhouse.ts'
import { migrate, splitStatements, SQL_DIR } from './migrate.ts'
import { openPostgres, type Postgres } from './postgres.ts'

const CLUSTER = 'meterbill_cluster'
const dir = join(SQL_DIR, 'clickhouse')
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.sql'))
  .sort()
  .map((name) => ({ name, statements: splitStatements(readFileSync(join(dir, name), 'utf8')) }))
const rewritten = clusterMigrations(files, CLUSTER)
const all = rewritten.flatMap((f) => f.statements)
const flat = (s: string) => s.replace(/\s+/g, ' ').trim()

/** Tables the files create, with their engines as written. */
const created = new Map<string, string>()
for (const s of files.flatMap((f) => f.statements)) {
  const m = /^CREATE TABLE (?:IF NOT EXISTS )?(\w+)[\s\S]*?ENGINE\s*=\s*(\w+)/i.exec(s)
  if (m) created.set(m[1], m[2])
}
const dataTables = [...created].filter(([, engine]) => engine.endsWith('MergeTree')).map(([name]) => name)
const perNode = [...created].filter(([, engine]) => !engine.endsWith('MergeTree')).map(([name]) => name)

describe('cluster mode: every migration file rewritten', () => {
  it('has files and data tables to rewrite', () => {
    expect(files.length).toBeGreaterThanOrEqual(7)
    expect(dataTables).toEqual(expect.arrayContaining(['events', 'event_ids', 'meter_usage', 'meter_usage_1m', 'event_drop_counts']))
    expect(perNode).toEqual(expect.arrayContaining(['event_batches', 'meter_usage_sourced', 'meter_usage_backfill']))
  })

  it('runs every statement but the inserts ON CLUSTER, and creates everything IF NOT EXISTS', () => {
    for (const s of all) {
      if (/^INSERT\b/i.test(s)) expect(s, s).not.toMatch(/ON CLUSTER/i)
      else expect(flat(s), s).toMatch(new RegExp(`^\\w+ (?:MATERIALIZED VIEW |TABLE |VIEW )?(?:IF (?:NOT )?EXISTS )?\\S+ ON CLUSTER ${CLUSTER}\\b`, 'i'))
      if (/^CREATE\b/i.test(s)) expect(s, s).toMatch(/^CREATE (TABLE|MATERIALIZED VIEW|VIEW|DICTIONARY|FUNCTION) IF NOT EXISTS /i)
      if (/\bADD COLUMN\b/i.test(s)) expect(s, s).toMatch(/ADD COLUMN IF NOT EXISTS/i)
    }
  })

  it('leaves no plain MergeTree engine: every one Replicated, under <table>_local, with a Keeper path of its own', () => {
    const engines = all.flatMap((s) => [...s.matchAll(/ENGINE\s*=\s*(\w+)(?:\(('[^']*'))?/gi)].map((m) => ({ s, engine: m[1], path: m[2] })))
    const paths = new Set<string>()
    for (const { s, engine, path } of engines) {
      if (!engine.endsWith('MergeTree')) continue
      expect(engine, s).toMatch(/^Replicated/)
      const table = /^CREATE TABLE IF NOT EXISTS (\w+)/.exec(s)![1]
      expect(table.endsWith(LOCAL_SUFFIX), s).toBe(true)
      expect(path).toBe(`'/clickhouse/tables/{shard}/{database}/${table}'`)
      expect(paths.has(path!), path).toBe(false)
      paths.add(path!)
    }
    expect(paths.size).toBe(dataTables.length)
    for (const s of all) expect(s).not.toMatch(/non_replicated_deduplication_window/)
    // Dedup of retried batch inserts on replicas, where the files asked for it on one node.
    const windows = files.flatMap((f) => f.statements).filter((s) => /non_replicated_deduplication_window/.test(s)).length
    expect(all.filter((s) => /\breplicated_deduplication_window = 1000/.test(s)).length).toBe(windows)
  })

  it('keeps every data table name for reads as a Distributed table over its _local table', () => {
    for (const table of dataTables) {
      const distributed = all.filter((s) => flat(s).startsWith(`CREATE TABLE IF NOT EXISTS ${table} ON CLUSTER ${CLUSTER} AS ${table}_local ENGINE = Distributed('${CLUSTER}', currentDatabase(), ${table}_local, `))
      expect(distributed, table).toHaveLength(1)
      // After its local table, which it copies.
      expect(all.indexOf(distributed[0])).toBeGreaterThan(all.findIndex((s) => s.startsWith(`CREATE TABLE IF NOT EXISTS ${table}_local `)))
    }
    for (const table of perNode) {
      expect(all.some((s) => flat(s).startsWith(`CREATE TABLE IF NOT EXISTS ${table} ON CLUSTER ${CLUSTER} `) && /ENGINE = (Null|Set|Memory)\b/.test(s)), table).toBe(true)
      expect(all.some((s) => s.includes(`${table}_local`)), table).toBe(false)
    }
  })

  it('points every materialized view at local tables: it writes a _local (or per-node) table and is fed by one', () => {
    const views = all.filter((s) => /^CREATE MATERIALIZED VIEW/.test(s))
    expect(views.length).toBeGreaterThanOrEqual(12)
    for (const v of views) {
      const [, target] = /\bTO (\w+)/.exec(v)!
      const [, source] = /\bFROM (\w+)/.exec(v)!
      for (const table of [target, source]) {
        expect(dataTables.includes(table), `${table} is Distributed: ${v}`).toBe(false)
        expect(table.endsWith(LOCAL_SUFFIX) || perNode.includes(table), v).toBe(true)
      }
    }
  })

  it('inserts a backfill into a local table on the migrating node, without Keeper dedup when replicated', () => {
    const inserts = all.filter((s) => /^INSERT/.test(s))
    expect(inserts.length).toBeGreaterThanOrEqual(3)
    for (const s of inserts) {
      const [, target] = /^INSERT INTO (\w+)/.exec(s)!
      expect(target.endsWith(LOCAL_SUFFIX) || perNode.includes(target), s).toBe(true)
      if (target.endsWith(LOCAL_SUFFIX)) expect(s).toMatch(/^INSERT INTO \w+\s+SETTINGS insert_deduplicate = 0/)
    }
  })

  it('truncates and alters the local tables, an added column on the Distributed one too', () => {
    for (const s of all.filter((x) => /^(TRUNCATE|ALTER|DELETE|OPTIMIZE)/.test(x))) {
      const [, table] = /^(?:TRUNCATE TABLE|TRUNCATE|ALTER TABLE|DELETE FROM|OPTIMIZE TABLE) (?:IF EXISTS )?(\w+)/.exec(s)!
      const base = table.endsWith(LOCAL_SUFFIX) ? table.slice(0, -LOCAL_SUFFIX.length) : table
      if (!/^ALTER/.test(s) || !/\b(ADD|DROP|MODIFY|RENAME|COMMENT) COLUMN\b/.test(s)) expect(dataTables.includes(table), s).toBe(false)
      else if (dataTables.includes(base)) expect(all.some((x) => x !== s && x.startsWith(s.replace(table, table === base ? `${base}_local` : base).split(' ON CLUSTER')[0] + ' ON CLUSTER'))).toBe(true)
    }
    expect(all.map(flat)).toEqual(expect.arrayContaining([
      `ALTER TABLE event_ids_local ON CLUSTER ${CLUSTER} ADD COLUMN IF NOT EXISTS id_hash UInt64 MATERIALIZED sipHash64(event_id)`,
      `ALTER TABLE event_ids ON CLUSTER ${CLUSTER} ADD COLUMN IF NOT EXISTS id_hash UInt64 MATERIALIZED sipHash64(event_id)`,
    ]))
  })

  it('is the same text every time', () => {
    expect(clusterMigrations(files, CLUSTER)).toEqual(rewritten)
  })
})

describe('cluster mode: every rewritten statement parses on ClickHouse (chDB)', () => {
  const config = testConfig()
  let ch: ClickHouse
  beforeAll(async () => {
    ch = await openClickHouse(config)
  })
  afterAll(async () => {
    await ch?.close()
    rmSync(config.dataDir, { recursive: true, force: true })
  })

  it('formats each one back with its ON CLUSTER, engines and targets', async () => {
    const statements = [clusterMigrationsTable(CLUSTER), 'SYSTEM SYNC REPLICA schema_migrations', ...all]
    for (const s of statements) {
      const rs = await ch.client.query({ query: 'SELECT formatQuery({q:String}) AS f', query_params: { q: s }, format: 'JSONEachRow' })
      const [{ f }] = await rs.json<{ f: string }>()
      // The parser read what was meant: the same cluster, engine and target in its own spelling.
      if (!/^(INSERT|SYSTEM)/.test(s)) expect(f, s).toContain(`ON CLUSTER ${CLUSTER}`)
      for (const engine of s.match(/\b(Replicated\w*MergeTree|Distributed)(?=\()/g) ?? []) expect(f, s).toContain(`ENGINE = ${engine}(`)
      const target = /\bTO (\w+)/.exec(s)?.[1]
      if (/^CREATE MATERIALIZED VIEW/.test(s)) expect(f, s).toContain(`TO ${target}`)
    }
  })

  it('refuses to pass a statement that does not parse', async () => {
    const rs = ch.client.query({ query: 'SELECT formatQuery({q:String})', query_params: { q: 'CREATE TABLE t ON CLUSTER c (a UInt8 ENGINE = Null' }, format: 'JSONEachRow' })
    await expect(rs).rejects.toThrow(/SYNTAX_ERROR|Syntax error/)
  })
})

describe('cluster mode: migrate()', () => {
  const config = testConfig({ DATABASE_URL: '' })
  const sqlDir = mkdtempSync(join(tmpdir(), 'meterbill-cluster-migrations-'))
  let pg: Postgres
  beforeAll(async () => {
    mkdirSync(join(sqlDir, 'clickhouse'))
    for (const f of files) copyFileSync(join(dir, f.name), join(sqlDir, 'clickhouse', f.name))
    pg = await openPostgres(config)
  })
  afterAll(async () => {
    await pg?.close()
    rmSync(sqlDir, { recursive: true, force: true })
    rmSync(config.dataDir, { recursive: true, force: true })
  })

  /** A ClickHouse that records the statements sent, with `applied` already in its schema_migrations. */
  function recording(applied: string[], failSync = false) {
    const sent: string[] = []
    const inserted: string[] = []
    const client = {
      async command({ query }: { query: string }) {
        sent.push(query)
        if (failSync && query.startsWith('SYSTEM SYNC REPLICA')) throw new Error('Code: 48. DB::Exception: Table schema_migrations is not replicated (NOT_IMPLEMENTED)\nstack')
        return {}
      },
      async query() {
        return { json: async () => files.filter((f) => applied.includes(f.name)).map((f) => ({ name: f.name, checksum: checksum(f.name) })) }
      },
      async insert({ values }: { values: { name: string }[] }) {
        inserted.push(...values.map((v) => v.name))
        return {}
      },
    } as unknown as ClickHouseClient
    const ch = { client, reader: client, kind: 'server', database: 'meterbill', cluster: CLUSTER } as unknown as ClickHouse
    return { ch, sent, inserted }
  }
  const sums = new Map<string, string>()
  const checksum = (name: string) => sums.get(name)!

  it('creates the replicated bookkeeping table, syncs it, and applies each file rewritten, once', async () => {
    const { createHash } = await import('node:crypto')
    for (const f of files) sums.set(f.name, createHash('sha256').update(readFileSync(join(dir, f.name), 'utf8')).digest('hex'))
    const { ch, sent, inserted } = recording([])
    const result = await migrate(pg.sql, ch, sqlDir)
    expect(result.clickhouse).toEqual(files.map((f) => f.name))
    expect(inserted).toEqual(files.map((f) => f.name))
    expect(sent).toEqual([clusterMigrationsTable(CLUSTER), 'SYSTEM SYNC REPLICA schema_migrations', ...all])
  })

  it('applies only the files not applied, rewritten knowing the tables of those that were', async () => {
    const { ch, sent } = recording(files.slice(0, 3).map((f) => f.name))
    await migrate(pg.sql, ch, sqlDir)
    expect(sent.slice(2)).toEqual(rewritten.slice(3).flatMap((f) => f.statements))
    expect(sent).toContain(`ALTER TABLE event_ids_local ON CLUSTER ${CLUSTER} ADD COLUMN IF NOT EXISTS id_hash UInt64 MATERIALIZED sipHash64(event_id)`)
  })

  it('refuses a database migrated without the cluster', async () => {
    const { ch } = recording([], true)
    await expect(migrate(pg.sql, ch, sqlDir)).rejects.toThrow(/schema_migrations is not a replicated table .*NOT_IMPLEMENTED.*cluster mode needs a fresh database/)
  })
})
