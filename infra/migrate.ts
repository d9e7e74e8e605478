// Forward-only migrations from sql/postgres and sql/clickhouse, applied in file-name order and
// recorded with a checksum. One Postgres transaction holds an advisory lock for the whole run, so
// two processes starting together apply each file once: the second waits, then finds nothing to do.
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Sql, Tx } from './postgres.ts'
import type { ClickHouse } from './clickhouse.ts'
import { chDateTime } from './ch-literals.ts'
import { clusterMigrations, clusterMigrationsTable } from '../core/cluster-ddl.ts'

export const SQL_DIR = fileURLToPath(new URL('../sql', import.meta.url))
const LOCK_KEY = 7_400_113_001

interface MigrationFile {
  name: string
  sql: string
  checksum: string
}

export interface MigrationResult {
  postgres: string[]
  clickhouse: string[]
}

function readMigrations(dir: string): MigrationFile[] {
  let names: string[]
  try {
    names = readdirSync(dir).filter((f) => f.endsWith('.sql'))
  } catch {
    return []
  }
  return names.sort().map((name) => {
    const sql = readFileSync(join(dir, name), 'utf8')
    return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') }
  })
}

/** ClickHouse takes one statement per request: split on semicolons that end a line. */
export function splitStatements(sql: string): string[] {
  return sql
    .split(/;\s*(?:\n|$)/)
    .map((s) =>
      s
        .split('\n')
        .filter((line) => !line.trim().startsWith('--'))
        .join('\n')
        .trim(),
    )
    .filter((s) => s.length > 0)
}

function checkUnchanged(kind: string, file: MigrationFile, recorded: string | undefined): boolean {
  if (recorded === undefined) return false
  if (recorded !== file.checksum) {
    throw new Error(`${kind} migration ${file.name} was changed after it was applied; add a new migration instead`)
  }
  return true
}

async function migratePostgres(tx: Tx, files: MigrationFile[]): Promise<string[]> {
  await tx`CREATE TABLE IF NOT EXISTS schema_migrations (
    name text PRIMARY KEY, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`
  const rows = await tx<{ name: string; checksum: string }[]>`SELECT name, checksum FROM schema_migrations`
  const done = new Map(rows.map((r) => [r.name, r.checksum]))
  const applied: string[] = []
  for (const file of files) {
    if (checkUnchanged('postgres', file, done.get(file.name))) continue
    await tx.unsafe(file.sql)
    await tx`INSERT INTO schema_migrations (name, checksum) VALUES (${file.name}, ${file.checksum})`
    applied.push(file.name)
  }
  return applied
}

/**
 * Each file's statements: as written, or on a cluster (CLICKHOUSE_CLUSTER) rewritten by core/cluster-ddl.ts, every
 * file in order so that a file's rewriting knows the tables of those before it, applied or not.
 */
function clickHouseStatements(files: MigrationFile[], cluster: string | undefined): string[][] {
  const plain = files.map((f) => splitStatements(f.sql))
  if (!cluster) return plain
  return clusterMigrations(files.map((f, i) => ({ name: f.name, statements: plain[i] })), cluster).map((f) => [...f.statements])
}

/**
 * The bookkeeping table. On a cluster one replicated table across every node, brought up to date before it is read:
 * a process migrating through another node than the last one must not apply a file again (a backfill would count twice).
 */
async function migrationsTable(ch: ClickHouse): Promise<void> {
  const { client, cluster } = ch
  if (!cluster) {
    await client.command({
      query: `CREATE TABLE IF NOT EXISTS schema_migrations (name String, checksum String, applied_at DateTime64(3, 'UTC'))
            ENGINE = MergeTree ORDER BY name`,
    })
    return
  }
  await client.command({ query: clusterMigrationsTable(cluster) })
  try {
    await client.command({ query: 'SYSTEM SYNC REPLICA schema_migrations' })
  } catch (err) {
    throw new Error(
      `CLICKHOUSE_CLUSTER=${cluster}: schema_migrations is not a replicated table (${(err as Error).message.split('\n')[0]}); ` +
        'this database was migrated without the cluster, and cluster mode needs a fresh database (docs/operations.md, ClickHouse cluster mode)',
    )
  }
}

async function migrateClickHouse(ch: ClickHouse, files: MigrationFile[]): Promise<string[]> {
  const { client } = ch
  await migrationsTable(ch)
  const statements = clickHouseStatements(files, ch.cluster)
  const rs = await client.query({ query: 'SELECT name, checksum FROM schema_migrations', format: 'JSONEachRow' })
  const done = new Map((await rs.json<{ name: string; checksum: string }>()).map((r) => [r.name, r.checksum]))
  const applied: string[] = []
  for (const [i, file] of files.entries()) {
    if (checkUnchanged('clickhouse', file, done.get(file.name))) continue
    for (const statement of statements[i]) await client.command({ query: statement })
    await client.insert({
      table: 'schema_migrations',
      values: [{ name: file.name, checksum: file.checksum, applied_at: chDateTime(new Date()) }],
      format: 'JSONEachRow',
    })
    applied.push(file.name)
  }
  return applied
}

export async function migrate(sql: Sql, ch: ClickHouse, dir: string = SQL_DIR): Promise<MigrationResult> {
  const pgFiles = readMigrations(join(dir, 'postgres'))
  const chFiles = readMigrations(join(dir, 'clickhouse'))
  return sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${LOCK_KEY})`
    const postgres = await migratePostgres(tx, pgFiles)
    const clickhouse = await migrateClickHouse(ch, chFiles)
    return { postgres, clickhouse }
  }) as Promise<MigrationResult>
}
