// Two processes starting together must not both apply a migration: run two migrators on two
// separate connection pools against one fresh database, at the same time.
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openClickHouse, type ClickHouse } from '../../infra/clickhouse.ts'
import { openPostgres, type Postgres, type Sql } from '../../infra/postgres.ts'
import { migrate, splitStatements } from '../../infra/migrate.ts'
import { testConfig } from '../harness.ts'

const config = testConfig({ DATABASE_URL: '' })
const sqlDir = mkdtempSync(join(tmpdir(), 'meterbill-migrations-'))
let ch: ClickHouse
let pg: Postgres | undefined
let pools: Sql[] = []
let cleanup: () => Promise<void> = async () => {}

/** Two pools on one fresh database: a new database on the Postgres server in CI, else a fresh PGlite. */
async function twoPools(): Promise<[Sql, Sql]> {
  const url = process.env.DATABASE_URL
  if (url) {
    const name = `meterbill_migrate_${process.pid}_${Date.now()}`
    const admin = postgres(url, { max: 1, onnotice: () => {} })
    await admin.unsafe(`CREATE DATABASE ${name}`)
    const target = new URL(url)
    target.pathname = `/${name}`
    pools = [postgres(target.toString(), { max: 2, onnotice: () => {} }), postgres(target.toString(), { max: 2, onnotice: () => {} })] as unknown as Sql[]
    cleanup = async () => {
      await Promise.all(pools.map((p) => p.end()))
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name}`)
      await admin.end()
    }
    return [pools[0], pools[1]]
  }
  pg = await openPostgres(config)
  // The PGlite socket serves one connection at a time: the second pool waits its turn, as a second process would.
  return [pg.sql, pg.sql]
}

beforeAll(async () => {
  mkdirSync(join(sqlDir, 'postgres'))
  mkdirSync(join(sqlDir, 'clickhouse'))
  writeFileSync(join(sqlDir, 'postgres', '0001_a.sql'), 'CREATE TABLE mig_a (id int PRIMARY KEY);\nINSERT INTO mig_a VALUES (1);\n')
  // Not idempotent on purpose: applying it twice would fail with a duplicate key.
  writeFileSync(join(sqlDir, 'postgres', '0002_b.sql'), 'INSERT INTO mig_a VALUES (2);\n')
  writeFileSync(join(sqlDir, 'clickhouse', '0001_t.sql'), '-- a table\nCREATE TABLE mig_t (id UInt32) ENGINE = MergeTree ORDER BY id;\nINSERT INTO mig_t VALUES (1);\n')
  ch = await openClickHouse(config)
})

afterAll(async () => {
  await cleanup()
  await pg?.close()
  await ch?.close()
  rmSync(sqlDir, { recursive: true, force: true })
  rmSync(config.dataDir, { recursive: true, force: true })
})

describe('migrations', () => {
  it('apply each file once when two migrators start together', async () => {
    const [a, b] = await twoPools()
    const [ra, rb] = await Promise.all([migrate(a, ch, sqlDir), migrate(b, ch, sqlDir)])
    expect([...ra.postgres, ...rb.postgres].sort()).toEqual(['0001_a.sql', '0002_b.sql'])
    expect([...ra.clickhouse, ...rb.clickhouse]).toEqual(['0001_t.sql'])
    expect(await a`SELECT id FROM mig_a ORDER BY id`).toEqual([{ id: 1 }, { id: 2 }])
    const rs = await ch.client.query({ query: 'SELECT count() AS n FROM mig_t', format: 'JSONEachRow' })
    expect(await rs.json()).toEqual([{ n: '1' }])

    const again = await migrate(a, ch, sqlDir)
    expect(again).toEqual({ postgres: [], clickhouse: [] })
  })

  it('refuses to run when an applied file was changed', async () => {
    writeFileSync(join(sqlDir, 'postgres', '0002_b.sql'), 'INSERT INTO mig_a VALUES (3);\n')
    const [a] = pools.length ? [pools[0]] : [pg!.sql]
    await expect(migrate(a, ch, sqlDir)).rejects.toThrow(/0002_b.sql was changed/)
  })

  it('splits ClickHouse files into statements, skipping comments', () => {
    expect(splitStatements('-- c\nCREATE TABLE x (a UInt8) ENGINE = Memory;\n\nSELECT 1;\n')).toEqual([
      'CREATE TABLE x (a UInt8) ENGINE = Memory',
      'SELECT 1',
    ])
  })
})
