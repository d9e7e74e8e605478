// The ClickHouse client: a server when CLICKHOUSE_URL is set, else chDB in-process under DATA_DIR.
// Both are driven through @clickhouse/client, so the same SQL and the same calls run on both.
import { ClickHouseError, createClient, parseError, type ClickHouseClient, type ClickHouseSettings } from '@clickhouse/client'
import { mkdirSync, rmSync } from 'node:fs'
import { rm, writeFile } from 'node:fs/promises'
import { availableParallelism } from 'node:os'
import { join, resolve } from 'node:path'
import type { Config } from '../core/config.ts'
import type { CsvPiece as CsvText } from '../core/csv.ts'
import { inlineParams, LONG_QUERY, sqlString } from './ch-literals.ts'
import type { StreamChunk } from 'chdb'

export interface ClickHouse {
  client: ClickHouseClient
  /**
   * For reads that should not wait behind another statement (the batch writer's dedup lookup behind a long insert,
   * an analytics breakdown beside the usage its cost reads, concurrent requests' reads): on chDB sessions of its own
   * (a session runs one statement at a time), each statement on the least busy; on a server, `client` itself.
   */
  reader: ClickHouseClient
  kind: 'server' | 'chdb'
  database: string
  /** CLICKHOUSE_CLUSTER: the server's cluster the migrations create their tables on (infra/migrate.ts), else absent. */
  cluster?: string
  /**
   * One INSERT of rows already encoded in `format`, its settings on this statement only. On chDB the rows
   * go through a file (`FROM INFILE`): given in the statement, ClickHouse handled them as query text first,
   * which cost more than parsing them (50,000 events: 6.4–7.1 µs of CPU an event inline, 4.7–5.2 from a file).
   */
  insertRaw(insert: RawInsert): Promise<void>
  /**
   * Runs `use` with a table expression that reads `rows` (text in `format`, columns as in `structure`): on
   * chDB a file() of them (the 50,000 ids of a chunk's lookup: ~15 ms as statement text, ~2 ms from a
   * file); on a server a format() of them inline, as the request body carries the statement.
   */
  withRows<T>(rows: RowsText, use: (table: string) => Promise<T>): Promise<T>
  /**
   * A SELECT's rows one at a time as ClickHouse produces them (JSONEachRow), never the whole result in memory (CSV
   * exports): `client.query(...).stream()` on chDB hands over a result it has already read whole. On a server the
   * response body is read as it comes, and the server cancels the query when the request goes
   * (cancel_http_readonly_queries_on_client_close). On chDB a session of its own streams chunks of a block each (a
   * statement on a connection with an open stream ends that stream; the other connections stay free), closed when the
   * iteration ends. Aborting `signal`, leaving the loop or an error stops the query; on chDB an abort takes effect
   * when the chunk being computed is done (chDB checks between chunks).
   */
  streamRows<T>(query: StreamQuery): AsyncIterable<T>
  /**
   * The same, as ClickHouse's own CSV (strings quoted, CRLF line ends), or with `format: 'TabSeparatedRaw'` a statement's
   * one String column of records built in SQL (infra/ch-csv.ts), each ending in CR, written as they are with LF after:
   * pieces of text with their row counts, for exports that pass ClickHouse's bytes through rather than parse and
   * rewrite each row (~10× faster). On chDB a piece is a chunk (exact rows); on a server a run of lines (a line break
   * inside a quoted cell counts as a row).
   */
  streamCsv(query: StreamQuery & { format?: CsvFormat }): AsyncIterable<CsvPiece>
  /**
   * A statement beside the inserts and lookups, for maintenance taking seconds (a slice of the dedup filter's fill): on
   * chDB a session of its own, as `client` and `reader` run one statement at a time.
   */
  commandApart(query: string): Promise<void>
  close(): Promise<void>
}

/** How long the server client waits for an answer: the longest a statement of this process can run on a server. */
const REQUEST_TIMEOUT_MS = 60_000

/** ClickHouse's CSV as RFC 4180 with ISO instants: CRLF line ends, `%f` as the column's 3 digits of milliseconds. */
const CSV_SETTINGS = { output_format_csv_crlf_end_of_line: 1, formatdatetime_f_prints_scale_number_of_digits: 1 } as const

/** A piece of streamCsv: always bytes, ClickHouse's. */
type CsvPiece = CsvText & { bytes: Uint8Array }

/** RowBinary: fixed-width numbers as bytes, for a reader that decodes them itself (the dedup filter's hashes). */
type CsvFormat = 'CSV' | 'TabSeparatedRaw' | 'RowBinary'
/** The settings each format of streamCsv is written with (records built in SQL need none). */
const FORMAT_SETTINGS: Record<CsvFormat, Record<string, number>> = { CSV: CSV_SETTINGS, TabSeparatedRaw: {}, RowBinary: {} }

interface StreamQuery {
  query: string
  query_params?: Record<string, unknown>
  signal?: AbortSignal
  /** Settings of this statement only (a long statement's max_query_size). */
  settings?: Record<string, string>
}

interface RawInsert {
  table: string
  /** The columns the rows give, in their order (JSONCompactEachRow); absent: every column, by name. */
  columns?: readonly string[]
  format: 'JSONEachRow' | 'JSONCompactEachRow'
  /** The rows, one a line: text, or its UTF-8 bytes. */
  rows: string | Uint8Array
  settings: ClickHouseSettings
}

interface RowsText {
  format: 'JSONCompactEachRow' | 'TabSeparated'
  structure: string
  text: string
}

/**
 * chDB's errors as this package's ClickHouseError: chdb/connection raises its own load of the class (CommonJS
 * beside this ESM import), which `instanceof` does not recognise, and the batch writer tells data errors by it.
 */
const ownError = (err: unknown): unknown =>
  err instanceof Error && !(err instanceof ClickHouseError) && 'code' in err && 'type' in err
    ? new ClickHouseError({ message: err.message, code: String(err.code), type: String(err.type) })
    : err

/** A statement's SETTINGS clause. */
const settingsClause = (settings: ClickHouseSettings): string => {
  const set = Object.entries(settings).filter((e): e is [string, string | number | boolean] => e[1] !== undefined)
  return set.length === 0 ? '' : ` SETTINGS ${set.map(([k, v]) => `${k} = ${typeof v === 'string' ? sqlString(v) : Number(v)}`).join(', ')}`
}

/** Line feeds in a piece of CSV: its rows, counting a line break inside a quoted cell as one more. */
function lineFeeds(bytes: Buffer): number {
  let n = 0
  for (let i = bytes.indexOf(10); i !== -1; i = bytes.indexOf(10, i + 1)) n++
  return n
}

/** The exception a server wrote into a stream after its marker (`<tag>\n<message>\n<length> <tag>\r\n__exception__\r\n`), as a ClickHouseError. */
async function exceptionAfter(start: Buffer, rest: AsyncIterable<Buffer>, tag: string): Promise<Error> {
  const parts = [start]
  for await (const chunk of rest) parts.push(chunk)
  const text = Buffer.concat(parts).toString('utf8')
  const end = text.lastIndexOf(`\n`, text.lastIndexOf(` ${tag}`))
  return parseError(text.slice(text.indexOf('\n') + 1, end === -1 ? undefined : end).trim())
}

/**
 * Sessions of the reader on chDB, one a core (2 to 4). A session runs one statement at a time, and concurrent
 * analytics requests all waited on one reader: on 2 cores, 8 connections asking for one customer's month by day got
 * 66–80 answers a second with one session, 86–98 with two, 72 with three (docs/analytics.md).
 */
const READER_SESSIONS = Math.max(2, Math.min(4, availableParallelism()))

/**
 * Connections as one: each statement goes to the one running the fewest (the first when even). A chDB connection
 * materializes a result before it answers, so a statement has ended when its call resolves. Same session state in all.
 */
function leastBusy<C extends object>(connections: C[]): C {
  const running = connections.map(() => 0)
  return new Proxy(connections[0], {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target)
      if (typeof value !== 'function') return value
      if (prop === 'close') return () => Promise.all(connections.map((c) => (Reflect.get(c, prop) as () => Promise<void>).call(c))).then(() => undefined)
      if (prop !== 'query' && prop !== 'exec' && prop !== 'command' && prop !== 'insert' && prop !== 'ping') return value.bind(target)
      return async (...args: unknown[]) => {
        let k = 0
        for (let i = 1; i < connections.length; i++) if (running[i] < running[k]) k = i
        running[k]++
        try {
          return await (Reflect.get(connections[k], prop) as (...a: unknown[]) => Promise<unknown>).apply(connections[k], args)
        } finally {
          running[k]--
        }
      }
    },
  })
}

type Statement = { query: string; query_params?: Record<string, unknown>; clickhouse_settings?: ClickHouseSettings }

/**
 * A chDB connection whose statements carry their parameters inlined (inlineParams): chdb-node binds parameters under
 * one process-wide lock, so two connections' parameterized reads ran one after the other. Inlined arrays can make a
 * statement longer than ClickHouse's default max_query_size: such a statement raises it.
 */
function withInlinedParams<C extends object>(connection: C): C {
  return new Proxy(connection, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target)
      if (typeof value !== 'function') return value
      if (prop !== 'query' && prop !== 'exec' && prop !== 'command') return value.bind(target)
      return (params: Statement) => {
        const values = params.query_params
        if (!values || Object.keys(values).length === 0) return value.call(target, params)
        const query = inlineParams(params.query, values)
        const long = query.length >= 256_000 && !params.clickhouse_settings?.max_query_size
        return value.call(target, { ...params, query, query_params: undefined, ...(long && { clickhouse_settings: { ...params.clickhouse_settings, ...LONG_QUERY } }) })
      }
    },
  })
}

export async function openClickHouse(config: Config): Promise<ClickHouse> {
  const database = config.clickhouseDatabase
  if (config.clickhouse) {
    const { url, user, password, cluster } = config.clickhouse
    const admin = createClient({ url, username: user, password })
    // On a cluster the database of every node: the migrations' ON CLUSTER statements run in it on each.
    await admin.command({ query: `CREATE DATABASE IF NOT EXISTS ${database}${cluster ? ` ON CLUSTER ${cluster}` : ''}` })
    await admin.close()
    const client = createClient({
      url,
      username: user,
      password,
      database,
      request_timeout: REQUEST_TIMEOUT_MS,
      clickhouse_settings: { async_insert: 0, output_format_json_quote_64bit_integers: 1 },
    })
    const insertRaw = async ({ table, columns, format, rows, settings }: RawInsert): Promise<void> => {
      const values = typeof rows === 'string' ? rows : Buffer.from(rows.buffer, rows.byteOffset, rows.byteLength).toString('utf8')
      await client.command({ query: `INSERT INTO ${table}${columns ? ` (${columns.join(', ')})` : ''} FORMAT ${format}\n${values}`, clickhouse_settings: settings })
    }
    const withRows = <T>({ format, structure, text }: RowsText, use: (table: string) => Promise<T>): Promise<T> =>
      use(`format(${format}, ${sqlString(structure)}, ${sqlString(text)})`)
    async function* streamRows<T>({ query, query_params, signal, settings }: StreamQuery): AsyncGenerator<T> {
      const rs = await client.query({ query, query_params, format: 'JSONEachRow', abort_signal: signal, clickhouse_settings: { cancel_http_readonly_queries_on_client_close: 1, ...settings } })
      try {
        for await (const rows of rs.stream<T>()) {
          for (const row of rows) {
            signal?.throwIfAborted()
            yield row.json()
          }
        }
      } finally {
        rs.close()
      }
    }
    // The response body as it comes (exec): the client's row reader takes a CR before a line feed for the start of a
    // mid-stream exception (ClickHouse ≥ 25.11), and CSV lines end with CRLF here. Such an exception is then found by
    // its tagged marker, held back across chunk edges so that no byte of it reaches the export.
    async function* streamCsv({ query, query_params, signal, settings, format = 'CSV' }: StreamQuery & { format?: CsvFormat }): AsyncGenerator<CsvPiece> {
      const { stream, response_headers } = await client.exec({
        query: `${query}\nFORMAT ${format}`,
        query_params,
        abort_signal: signal,
        clickhouse_settings: { cancel_http_readonly_queries_on_client_close: 1, ...FORMAT_SETTINGS[format], ...settings },
      })
      const tag = response_headers['x-clickhouse-exception-tag']
      const marker = typeof tag === 'string' ? Buffer.from(`\r\n__exception__\r\n${tag}`) : undefined
      let held: Buffer = Buffer.alloc(0)
      try {
        for await (const chunk of stream as AsyncIterable<Buffer>) {
          signal?.throwIfAborted()
          let data = held.length > 0 ? Buffer.concat([held, chunk]) : chunk
          if (marker) {
            const at = data.indexOf(marker)
            if (at !== -1) throw await exceptionAfter(data.subarray(at + marker.length), stream as AsyncIterable<Buffer>, String(tag))
            const keep = Math.min(marker.length - 1, data.length)
            held = data.subarray(data.length - keep)
            data = data.subarray(0, data.length - keep)
          }
          if (data.length > 0) yield { bytes: data, rows: lineFeeds(data) }
        }
        if (held.length > 0) yield { bytes: held, rows: lineFeeds(held) }
      } finally {
        stream.destroy()
      }
    }
    const commandApart = async (query: string): Promise<void> => void (await client.command({ query }))
    return { client, reader: client, kind: 'server', database, ...(cluster && { cluster }), insertRaw, withRows, streamRows, streamCsv, commandApart, close: () => client.close() }
  }
  // chDB binds one data directory per process: one client for the whole process.
  const { createChdbConnection } = await import('chdb/connection')
  const { Session } = await import('chdb')
  const path = resolve(join(config.dataDir, 'clickhouse'))
  mkdirSync(path, { recursive: true })
  type Connection = NonNullable<NonNullable<Parameters<typeof createClient>[0]>['connection']>
  /** A chDB session's connection, its session set up (database, settings). */
  const session = async (): Promise<Connection> => {
    // chdb types its Connection against its own copy of @clickhouse/client-common; the shapes match.
    const connection = withInlinedParams(createChdbConnection({ path })) as unknown as Connection
    const client = createClient({ connection })
    // chDB ignores the client's `database` option; its session keeps USE, a server's HTTP client does not.
    await client.command({ query: `CREATE DATABASE IF NOT EXISTS ${database}` })
    await client.command({ query: `USE ${database}` })
    // Set once on the session: as the client's clickhouse_settings, chDB runs a SET statement per setting before
    // every query (+0.3 ms on a 4 ms usage query).
    await client.command({ query: 'SET async_insert = 0' })
    await client.command({ query: 'SET output_format_json_quote_64bit_integers = 1' })
    return connection
  }
  const client = createClient({ connection: await session() })
  const sessions = await Promise.all(Array.from({ length: READER_SESSIONS }, session))
  const reader = createClient({ connection: leastBusy(sessions) })
  // Files handed to chDB, each removed once its statement is done; what a crash left is removed at the next start.
  const files = resolve(join(config.dataDir, 'clickhouse-io'))
  rmSync(files, { recursive: true, force: true })
  mkdirSync(files, { recursive: true })
  let lastFile = 0
  /** Runs `use` with the path of a file holding `data`, as a SQL string literal. */
  const throughFile = async <T>(data: string | Uint8Array, use: (pathLiteral: string) => Promise<T>): Promise<T> => {
    const path = join(files, String(++lastFile))
    try {
      await writeFile(path, data)
      return await use(sqlString(path))
    } finally {
      await rm(path, { force: true })
    }
  }
  const insertRaw = ({ table, columns, format, rows, settings }: RawInsert): Promise<void> =>
    throughFile(rows, async (file) => {
      await client
        .command({ query: `INSERT INTO ${table}${columns ? ` (${columns.join(', ')})` : ''} FROM INFILE ${file}${settingsClause(settings)} FORMAT ${format}` })
        .catch((err: unknown) => Promise.reject(ownError(err)))
    })
  const withRows = <T>({ format, structure, text }: RowsText, use: (table: string) => Promise<T>): Promise<T> =>
    throughFile(text, (file) => use(`file(${file}, ${format}, ${sqlString(structure)})`))
  /** A stream's error as ClickHouseError when it is ClickHouse's (`Code: N. DB::Exception: … (TYPE)`); an abort stays an AbortError. */
  const streamError = (err: unknown): unknown => {
    if (!(err instanceof Error) || err.name === 'AbortError' || !/^Code: \d+\./.test(err.message)) return err
    const parsed = parseError(err.message)
    return parsed instanceof ClickHouseError ? parsed : err
  }
  /** A statement's result chunks in `format` (with the settings it needs) on a session of its own, closed when the iteration ends. */
  async function* chunks({ query, query_params, signal, settings }: StreamQuery, format: string, formatSettings: Record<string, number>): AsyncGenerator<StreamChunk> {
    signal?.throwIfAborted()
    const session = new Session(path)
    try {
      await session.queryAsync(`USE ${database}`)
      for (const [name, value] of Object.entries(formatSettings)) await session.queryAsync(`SET ${name} = ${value}`)
      // The session is this stream's own: its settings are the statement's.
      for (const [name, value] of Object.entries(settings ?? {})) await session.queryAsync(`SET ${name} = ${sqlString(value)}`)
      const options = { format, signal }
      const stream = query_params && Object.keys(query_params).length > 0 ? session.queryStreamBind(query, query_params, options) : session.queryStream(query, options)
      for await (const chunk of stream) {
        // chDB checks the signal between chunks; the reader stops at once.
        signal?.throwIfAborted()
        yield chunk
      }
    } catch (err) {
      throw streamError(err)
    } finally {
      session.close()
    }
  }
  async function* streamRows<T>(q: StreamQuery): AsyncGenerator<T> {
    for await (const chunk of chunks(q, 'JSONEachRow', { output_format_json_quote_64bit_integers: 1 })) {
      for (const row of chunk.rows<T>()) {
        q.signal?.throwIfAborted()
        yield row
      }
    }
  }
  async function* streamCsv({ format = 'CSV', ...q }: StreamQuery & { format?: CsvFormat }): AsyncGenerator<CsvPiece> {
    // A copy: the chunk's bytes are chDB's, and the socket may still be writing them when the next chunk comes.
    for await (const chunk of chunks(q, format, FORMAT_SETTINGS[format])) yield { bytes: Buffer.from(chunk.raw()), rows: chunk.numRows }
  }
  const commandApart = async (query: string): Promise<void> => {
    const session = new Session(path)
    try {
      await session.queryAsync(`USE ${database}`)
      await session.queryAsync(query)
    } catch (err) {
      throw streamError(err)
    } finally {
      session.close()
    }
  }
  return { client, reader, kind: 'chdb', database, insertRaw, withRows, streamRows, streamCsv, commandApart, close: async () => void (await Promise.all([reader.close(), client.close()])) }
}
