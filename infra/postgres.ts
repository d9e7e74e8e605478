// The Postgres connection: a server when DATABASE_URL is set, else PGlite under DATA_DIR served over
// a loopback socket to the same `postgres` driver, so domain code cannot tell the two apart.
import postgres from 'postgres'
import { mkdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import type { Config } from '../core/config.ts'

export type Sql = postgres.Sql<Record<string, never>>
export type Tx = postgres.TransactionSql<Record<string, never>>
/** Either the pool or a transaction: store functions take this so callers choose the transaction. */
export type Db = Sql | Tx

export interface Postgres {
  sql: Sql
  kind: 'server' | 'pglite'
  close(): Promise<void>
}

const options = {
  onnotice: () => {},
  // numeric and bigint stay strings: money becomes a Decimal in the stores, never a JS number.
  types: {},
  transform: { undefined: null },
} as const

export async function openPostgres(config: Config): Promise<Postgres> {
  if (config.databaseUrl) {
    const sql = postgres(config.databaseUrl, { ...options, max: 10, idle_timeout: 30 }) as unknown as Sql
    return { sql, kind: 'server', close: () => sql.end({ timeout: 5 }) }
  }
  const [{ PGlite }, { PGLiteSocketServer }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite-socket'),
  ])
  const dir = resolve(join(config.dataDir, 'postgres'))
  mkdirSync(dir, { recursive: true })
  const db = await PGlite.create(dir)
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0 })
  await server.start()
  const address = (server as unknown as { server: import('node:net').Server }).server.address()
  if (!address || typeof address === 'string') throw new Error('PGlite socket did not bind a port')
  // The PGlite socket serves one connection at a time.
  const sql = postgres({
    ...options,
    host: '127.0.0.1',
    port: address.port,
    user: 'postgres',
    database: 'postgres',
    max: 1,
  }) as unknown as Sql
  return {
    sql,
    kind: 'pglite',
    close: async () => {
      await sql.end({ timeout: 5 })
      await server.stop()
      await db.close()
    },
  }
}
