// Rows handed to ClickHouse in bulk (a batch's insert, a chunk's lookup ids): on chDB they pass through files under
// DATA_DIR, which must not pile up, and a refused row must still be told apart from other failures.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ClickHouseError } from '@clickhouse/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { testConfig } from '../test/harness.ts'
import { openClickHouse, type ClickHouse } from './clickhouse.ts'

const config = testConfig()
const io = join(config.dataDir, 'clickhouse-io')
let ch: ClickHouse
beforeAll(async () => {
  // What a crash left behind.
  mkdirSync(io, { recursive: true })
  writeFileSync(join(io, 'left-over'), '["x"]')
  ch = await openClickHouse(config)
  await ch.client.command({ query: 'CREATE TABLE rows_in (a String, n UInt32) ENGINE = MergeTree ORDER BY a SETTINGS non_replicated_deduplication_window = 10' })
})
afterAll(() => ch?.close())

const count = async (): Promise<string> => {
  const rs = await ch.client.query({ query: 'SELECT toString(count()) AS c, toString(sum(n)) AS total FROM rows_in', format: 'JSONEachRow' })
  const [row] = await rs.json<{ c: string; total: string }>()
  return `${row.c} rows, total ${row.total}`
}

describe.skipIf(process.env.CLICKHOUSE_URL)('bulk rows on chDB', () => {
  it('removes files a crash left at start, and keeps none after statements, failed ones included', async () => {
    const rows = '{"a":"it\'s","n":1}\n{"a":"b","n":2}'
    // The token (quoted in the statement) makes the second insert a no-op.
    for (let i = 0; i < 2; i++) await ch.insertRaw({ table: 'rows_in', format: 'JSONEachRow', rows, settings: { insert_deduplication_token: "tok'1" } })
    expect(await count()).toBe('2 rows, total 3')

    const asked = await ch.withRows({ format: 'JSONCompactEachRow', structure: 'a String', text: '["b"]\n["z"]' }, async (table) => {
      const rs = await ch.client.query({ query: `SELECT a FROM rows_in WHERE a IN (SELECT a FROM ${table})`, format: 'JSONEachRow' })
      return rs.json<{ a: string }>()
    })
    expect(asked).toEqual([{ a: 'b' }])
    await expect(ch.withRows({ format: 'JSONCompactEachRow', structure: 'a String', text: '["b"]' }, () => Promise.reject(new Error('gave up')))).rejects.toThrow('gave up')

    expect(existsSync(io)).toBe(true)
    expect(readdirSync(io)).toEqual([])
  })

  it('reports a row it cannot read as a ClickHouseError with its code, and stores nothing of the insert', async () => {
    const before = await count()
    const refused = await ch.insertRaw({ table: 'rows_in', format: 'JSONEachRow', rows: '{"a":"c","n":3}\n{"a":"d","n":"four"}', settings: {} }).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(ClickHouseError)
    expect(refused).toMatchObject({ code: '27', type: 'CANNOT_PARSE_INPUT_ASSERTION_FAILED' })
    expect(await count()).toBe(before)
    expect(readdirSync(io)).toEqual([])
  })
})

describe.skipIf(process.env.CLICKHOUSE_URL)('the reader on chDB', () => {
  it('answers a read while another one runs, each of its sessions set up alike (database, 64-bit integers quoted)', async () => {
    const order: string[] = []
    const long = ch.reader
      .query({ query: 'SELECT sleepEachRow(1) FROM numbers(2) SETTINGS max_block_size = 1', format: 'JSONEachRow' })
      .then((rs) => rs.json())
      .then(() => order.push('long'))
    const short = ch.reader
      .query({ query: 'SELECT currentDatabase() AS db, toUInt64(7) AS n', format: 'JSONEachRow' })
      .then((rs) => rs.json())
      .then((rows) => (order.push('short'), rows))
    expect(await short).toEqual([{ db: ch.database, n: '7' }])
    await long
    expect(order).toEqual(['short', 'long'])
  })
})
