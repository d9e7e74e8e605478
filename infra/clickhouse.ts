// The ClickHouse client: a server when CLICKHOUSE_URL is set, else chDB in-process under DATA_DIR.
// Both are driven through @clickhouse/client, so the same SQL and the same calls run on both.
import { createClient, parseError, type ClickHouseClient, type ClickHouseSettings } from '@clickhouse/client'
import { mkdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import type { Config } from '../core/config.ts'

export interface ClickHouse {
  client: ClickHouseClient
  /**
   * For reads that should not wait behind a long insert (the batch writer's dedup lookup): on chDB a
   * second connection, as one connection runs one statement at a time; on a server, `client` itself.
   */
  reader: ClickHouseClient
  kind: 'server' | 'chdb'
  database: string
  /**
   * One INSERT of rows already encoded in `format`, its settings on this statement only. On chDB the rows
   * go to the engine's parser as they are: through the client (statement text prefixed with `SET …;` per
   * setting) a batch's insert took several times longer, and the settings stayed set in the session.
   */
  insertRaw(insert: RawInsert): Promise<void>
  close(): Promise<void>
}

export interface RawInsert {
  table: string
  /** The columns the rows give, in their order (JSONCompactEachRow); absent: every column, by name. */
  columns?: readonly string[]
  format: 'JSONEachRow' | 'JSONCompactEachRow'
  /** The rows, one a line: text, or its UTF-8 bytes (chDB reads them without a copy). */
  rows: string | Uint8Array
  settings: ClickHouseSettings
}

export async function openClickHouse(config: Config): Promise<ClickHouse> {
  const database = config.clickhouseDatabase
  if (config.clickhouse) {
    const { url, user, password } = config.clickhouse
    const admin = createClient({ url, username: user, password })
    await admin.command({ query: `CREATE DATABASE IF NOT EXISTS ${database}` })
    await admin.close()
    const client = createClient({
      url,
      username: user,
      password,
      database,
      request_timeout: 60_000,
      clickhouse_settings: { async_insert: 0, output_format_json_quote_64bit_integers: 1 },
    })
    const insertRaw = async ({ table, columns, format, rows, settings }: RawInsert): Promise<void> => {
      const values = typeof rows === 'string' ? rows : Buffer.from(rows.buffer, rows.byteOffset, rows.byteLength).toString('utf8')
      await client.command({ query: `INSERT INTO ${table}${columns ? ` (${columns.join(', ')})` : ''} FORMAT ${format}\n${values}`, clickhouse_settings: settings })
    }
    return { client, reader: client, kind: 'server', database, insertRaw, close: () => client.close() }
  }
  // chDB binds one data directory per process: one client for the whole process.
  const { createChdbConnection } = await import('chdb/connection')
  const path = resolve(join(config.dataDir, 'clickhouse'))
  mkdirSync(path, { recursive: true })
  const connect = async () => {
    const connection = createChdbConnection({ path })
    const client = createClient({
      // chdb types its Connection against its own copy of @clickhouse/client-common; the shapes match.
      connection: connection as unknown as NonNullable<Parameters<typeof createClient>[0]>['connection'],
    })
    // chDB ignores the client's `database` option; its session keeps USE, a server's HTTP client does not.
    await client.command({ query: `CREATE DATABASE IF NOT EXISTS ${database}` })
    await client.command({ query: `USE ${database}` })
    // Set once on the session: as the client's clickhouse_settings, chDB runs a SET statement per setting before
    // every query (+0.3 ms on a 4 ms usage query).
    await client.command({ query: 'SET async_insert = 0' })
    await client.command({ query: 'SET output_format_json_quote_64bit_integers = 1' })
    return { connection, client }
  }
  const { connection, client } = await connect()
  const reader = (await connect()).client
  const insertRaw = async ({ table, columns, format, rows, settings }: RawInsert): Promise<void> => {
    const chdbSettings = Object.fromEntries(Object.entries(settings).filter((e): e is [string, string | number | boolean] => e[1] !== undefined))
    // Errors as the client reports them (ClickHouseError with code and type), whichever path inserted.
    await connection.chdb
      .rawInsert({ table, columns, format, values: rows, settings: chdbSettings })
      .catch((err: unknown) => Promise.reject(parseError(err instanceof Error ? err : String(err))))
  }
  return { client, reader, kind: 'chdb', database, insertRaw, close: async () => void (await Promise.all([reader.close(), client.close()])) }
}
