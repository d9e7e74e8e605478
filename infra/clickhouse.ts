// The ClickHouse client: a server when CLICKHOUSE_URL is set, else chDB in-process under DATA_DIR.
// Both are driven through @clickhouse/client, so the same SQL and the same calls run on both.
import { createClient, type ClickHouseClient } from '@clickhouse/client'
import { mkdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import type { Config } from '../core/config.ts'

export interface ClickHouse {
  client: ClickHouseClient
  kind: 'server' | 'chdb'
  database: string
  close(): Promise<void>
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
    return { client, kind: 'server', database, close: () => client.close() }
  }
  // chDB binds one data directory per process: one client for the whole process.
  const { createChdbConnection } = await import('chdb/connection')
  const path = resolve(join(config.dataDir, 'clickhouse'))
  mkdirSync(path, { recursive: true })
  const client = createClient({
    // chdb types its Connection against its own copy of @clickhouse/client-common; the shapes match.
    connection: createChdbConnection({ path }) as unknown as NonNullable<Parameters<typeof createClient>[0]>['connection'],
    clickhouse_settings: { async_insert: 0, output_format_json_quote_64bit_integers: 1 },
  })
  // chDB ignores the client's `database` option; its session keeps USE, a server's HTTP client does not.
  await client.command({ query: `CREATE DATABASE IF NOT EXISTS ${database}` })
  await client.command({ query: `USE ${database}` })
  return { client, kind: 'chdb', database, close: () => client.close() }
}

/** A DateTime64(3, 'UTC') literal as ClickHouse parses it in JSONEachRow and in query parameters. */
export const chDateTime = (d: Date): string => d.toISOString().replace('T', ' ').replace('Z', '')
