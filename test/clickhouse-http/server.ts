// A test-only ClickHouse server: ClickHouse's HTTP interface over chDB, so the server path (CLICKHOUSE_URL:
// @clickhouse/client's HTTP connection, statements with inline rows, settings as URL parameters, exception
// bodies) runs in CI on the real engine. It speaks what that client sends: the statement in the body or in
// `query` (then the body is the INSERT's rows), `database`, `default_format`, `param_<name>` bindings, every
// other parameter a setting for that statement alone; answers X-ClickHouse-* headers, and on failure
// ClickHouse's text `Code: N. DB::Exception: … (NAME)` with X-ClickHouse-Exception-Code. What it does not
// prove: replication, distributed tables, concurrent statements on a server (it runs one at a time).
//
//   node --import tsx test/clickhouse-http/server.ts [data-dir]   → prints {"url": "http://127.0.0.1:<port>"}
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Session } from 'chdb'
import { sqlString } from '../../infra/ch-literals.ts'

/** URL parameters of ClickHouse's HTTP interface that are not settings. */
const NOT_SETTINGS = new Set(['query', 'database', 'default_format', 'query_id', 'session_id', 'session_timeout', 'session_check', 'user', 'password', 'compress', 'decompress', 'enable_http_compression', 'role'])
/** The real server's HTTP status for the exception codes our client meets (others: 500). */
const STATUS: Record<string, number> = { '60': 404, '81': 404, '62': 400, '47': 400, '53': 400, '115': 400, '394': 499 }

export interface ShimServer {
  url: string
  close(): Promise<void>
}

/**
 * A bound value as chDB takes it: the client writes `param_` values in the Escaped text format (the server
 * unescapes them while parsing); chDB escapes what it is given, so the escapes are undone here.
 */
const ESCAPES: Record<string, string> = { b: '\b', f: '\f', r: '\r', n: '\n', t: '\t', '0': '\0', a: '\x07', v: '\v' }
const unescape = (v: string): string => v.replace(/\\(.)/gs, (_, c: string) => ESCAPES[c] ?? c)


async function body(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const c of req) chunks.push(c as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

/** A read whose result is streamed (chunk by chunk, cancelled when the client goes); anything else is run whole. */
const READ = /^\s*(SELECT|WITH|SHOW|DESCRIBE|DESC|EXISTS|EXPLAIN)\b/i
/** Sessions at most: a server runs statements side by side (a stream left open must not block the rest). */
const SESSIONS = 8

interface Conn {
  session: Session
  database: string
}

/** ClickHouse's error text, as a server writes it. */
function exceptionText(err: unknown): { code: string; text: string } {
  const message = (err instanceof Error ? err.message : String(err)).replace(/^Query failed: /, '')
  const code = /Code: (\d+)\./.exec(message)?.[1] ?? '1002'
  return { code, text: `${message.includes('Code: ') ? message : `Code: ${code}. DB::Exception: ${message}. (UNKNOWN_EXCEPTION)`} (version chdb)` }
}

export async function startShim(dataDir = mkdtempSync(join(tmpdir(), 'meterbill-ch-http-')), port = 0): Promise<ShimServer> {
  const idle: Conn[] = []
  const all: Conn[] = []
  const waiting: ((c: Conn) => void)[] = []
  const acquire = async (): Promise<Conn> => {
    const free = idle.pop()
    if (free) return free
    if (all.length < SESSIONS) {
      const conn = { session: new Session(dataDir), database: 'default' }
      all.push(conn)
      return conn
    }
    return new Promise((resolve) => waiting.push(resolve))
  }
  const release = (conn: Conn): void => {
    const next = waiting.shift()
    if (next) next(conn)
    else idle.push(conn)
  }

  async function run(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost')
    if (url.pathname === '/ping') return void res.end('Ok.\n')
    const params = url.searchParams
    const data = await body(req)
    const head = params.get('query')
    const statement = head === null ? data : data ? `${head}\n${data}` : head
    const bindings: Record<string, string> = {}
    const settings: [string, string][] = []
    for (const [k, v] of params) {
      if (k.startsWith('param_')) bindings[k.slice(6)] = unescape(v)
      else if (!NOT_SETTINGS.has(k)) settings.push([k, v])
    }
    const format = params.get('default_format') ?? 'TabSeparated'
    res.setHeader('X-ClickHouse-Query-Id', params.get('query_id') ?? crypto.randomUUID())
    res.setHeader('X-ClickHouse-Timezone', 'UTC')
    res.setHeader('X-ClickHouse-Format', format)
    const fail = (err: unknown): void => {
      const { code, text } = exceptionText(err)
      res.statusCode = STATUS[code] ?? 500
      res.setHeader('X-ClickHouse-Exception-Code', code)
      res.end(`${text}\n`)
    }
    const conn = await acquire()
    try {
      // USE and SET are the session's: each request sets its own and gives the settings back.
      const wanted = params.get('database') ?? 'default'
      if (wanted !== conn.database) {
        conn.session.query(`USE ${wanted}`)
        conn.database = wanted
      }
      for (const [k, v] of settings) conn.session.query(`SET ${k} = ${sqlString(v)}`)
      try {
        if (READ.test(statement)) await stream(conn.session, statement, bindings, format, res)
        else {
          // chdb-node runs every statement with bindings one at a time, process-wide (its parameter chain): a server
          // runs writes side by side, so a statement without any goes on its own (a slow insert does not hold a DDL up).
          const result = Object.keys(bindings).length === 0 ? await conn.session.queryAsync(statement, { format }) : await conn.session.queryBindAsync(statement, bindings, { format })
          res.setHeader('X-ClickHouse-Summary', JSON.stringify({ read_rows: String(result.rowsRead), read_bytes: String(result.bytesRead), elapsed_ns: String(Math.round(result.elapsed * 1e9)) }))
          res.end(Buffer.from(result.bytes()))
        }
      } finally {
        for (const [k] of settings) conn.session.query(`SET ${k} = DEFAULT`)
      }
    } catch (err) {
      if (!res.headersSent) fail(err)
      else if (!res.writableEnded) res.end()
    } finally {
      release(conn)
    }
  }

  /**
   * A read's chunks as they come, waiting for the client to take each; the query is cancelled when the client
   * goes. An error after the first byte is written as a server writes it (`__exception__` and the tag the headers
   * announced), which the client turns into a ClickHouseError.
   */
  async function stream(session: Session, statement: string, bindings: Record<string, string>, format: string, res: ServerResponse): Promise<void> {
    const tag = crypto.randomUUID().replace(/-/g, '').slice(0, 16)
    const chunks = session.queryStreamBind(statement, bindings, { format })
    const gone = (): void => chunks.cancel()
    res.once('close', gone)
    try {
      for await (const chunk of chunks) {
        if (!res.headersSent) {
          res.setHeader('X-ClickHouse-Exception-Tag', tag)
          res.writeHead(200)
        }
        if (res.destroyed) return
        if (!res.write(Buffer.from(chunk.raw()))) await new Promise((r) => res.once('drain', r).once('close', r))
      }
      res.end()
    } catch (err) {
      if (!res.headersSent || res.destroyed) throw err
      const text = Buffer.from(`${exceptionText(err).text}\n`)
      res.end(Buffer.concat([Buffer.from(`\r\n__exception__\r\n${tag}\r\n`), text, Buffer.from(`${text.length} ${tag}\r\n__exception__\r\n`)]))
    } finally {
      res.off('close', gone)
    }
  }

  const server = createServer((req, res) => {
    run(req, res).catch((err: unknown) => {
      if (!res.headersSent) {
        res.statusCode = 500
        res.end(`Code: 1002. DB::Exception: ${String(err)}. (UNKNOWN_EXCEPTION)\n`)
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('no port')
  return {
    url: `http://127.0.0.1:${address.port}`,
    close: async () => {
      await new Promise((resolve) => server.close(resolve))
      for (const c of all) c.session.close()
    },
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const shim = await startShim(process.argv[2], Number(process.env.PORT ?? 0))
  console.log(JSON.stringify({ url: shim.url }))
}
