// Direct mode's event log end to end over HTTP, on the real engines: what intake acknowledged survives a SIGKILL
// before its insert and is counted exactly once after the restart; a full log refuses a request whole (503); a
// stop (what SIGTERM runs) inserts the backlog before it ends.
import { spawn, type ChildProcess } from 'node:child_process'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { afterAll, describe, expect, it } from 'vitest'
import type { Config } from '../core/config.ts'
import { EventLog, eventLogOf } from '../infra/event-log.ts'
import { startRoles, type Running } from '../roles.ts'
import { testConfig } from '../test/harness.ts'

const root = join(import.meta.dirname, '..')
const BOUND = 1024 * 1024
let config: Config
let running: Running | undefined
let child: ChildProcess | undefined

afterAll(async () => {
  child?.kill('SIGKILL')
  await running?.stop()
  if (config) rmSync(config.dataDir, { recursive: true, force: true })
})

const bulk = (prefix: string, n = 500) => ({
  events: Array.from({ length: n }, (_, i) => ({ event_id: `${prefix}-${i}`, event_name: 'api.call', external_customer_id: 'crash-cust', properties: { i } })),
})

async function post(port: number, key: string, body: unknown): Promise<{ status: number; body: any; retryAfter: string | null }> {
  const res = await fetch(`http://127.0.0.1:${port}/v1/events/bulk`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(body) })
  return { status: res.status, body: await res.json(), retryAfter: res.headers.get('retry-after') }
}

/** Rows of the tenant's events, and distinct ids among them, whose id starts with `prefix`. */
async function stored(r: Running, tenantId: string, prefix: string): Promise<{ rows: number; ids: number }> {
  const rs = await r.deps.ch.client.query({
    query: 'SELECT count() AS rows, uniqExact(id) AS ids FROM events WHERE tenant_id = {t:String} AND startsWith(id, {p:String})',
    query_params: { t: tenantId, p: prefix },
    format: 'JSONEachRow',
  })
  const [row] = (await rs.json()) as { rows: string; ids: string }[]
  return { rows: Number(row.rows), ids: Number(row.ids) }
}

describe('the event log behind direct-mode intake', () => {
  let tenantId = ''
  let key = ''
  let acknowledged = 0

  it('refuses a request whole once the log is full, and keeps what it acknowledged through a SIGKILL', async () => {
    config = testConfig({ KAFKA_BROKERS: '', EVENT_LOG_MAX_BACKLOG_BYTES: String(BOUND), MAX_BODY_BYTES: String(BOUND) })
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: config.dataDir, CLICKHOUSE_DATABASE: config.clickhouseDatabase, LOG_LEVEL: 'silent' }
    for (const name of ['DATABASE_URL', 'CLICKHOUSE_URL', 'CLICKHOUSE_USER', 'CLICKHOUSE_PASSWORD']) if (process.env[name]) env[name] = process.env[name]
    env.EVENT_LOG_MAX_BACKLOG_BYTES = String(BOUND)
    env.MAX_BODY_BYTES = String(BOUND)
    child = spawn(process.execPath, ['--import', 'tsx', join(root, 'test/event-log-child.ts')], { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] })
    const started = JSON.parse(await new Promise<string>((resolve) => createInterface({ input: child!.stdout! }).once('line', resolve))) as { port: number; key: string; tenantId: string }
    ;({ tenantId, key } = started)

    // A retried request (same ids) is acknowledged twice and must be counted once.
    expect((await post(started.port, key, bulk('k0'))).status).toBe(202)
    expect((await post(started.port, key, bulk('k0'))).status).toBe(202)
    acknowledged = 500
    let refused: Awaited<ReturnType<typeof post>> | undefined
    for (let b = 1; b < 40 && !refused; b++) {
      const res = await post(started.port, key, bulk(`k${b}`))
      if (res.status === 202) acknowledged += 500
      else refused = res
    }
    expect(acknowledged).toBeGreaterThan(1000)
    expect(refused).toMatchObject({ status: 503, retryAfter: '1', body: { code: 'service_unavailable', http_status_code: 503 } })
    expect(refused!.body.details.backlog_bytes).toBeGreaterThan(BOUND / 2)

    const exited = new Promise((resolve) => child!.once('exit', resolve))
    child.kill('SIGKILL')
    await exited
    child = undefined

    running = await startRoles(config, ['api', 'ingest'])
    expect(await eventLogOf(running.deps)!.settled(30_000)).toBe(true)
    expect(await stored(running, tenantId, 'k')).toEqual({ rows: acknowledged, ids: acknowledged })
    // The refused request left nothing behind: its bulk number is the first not acknowledged.
    expect(await stored(running, tenantId, `k${acknowledged / 500}-`)).toEqual({ rows: 0, ids: 0 })
  }, 60_000)

  it('inserts the backlog on stop before it ends', async () => {
    const r = running!
    const ch = r.deps.ch.client
    // Inserts fail while the table is away, so the backlog is certainly there when the stop begins.
    await ch.command({ query: 'RENAME TABLE event_batches TO event_batches_away' })
    try {
      const answers = await Promise.all([1, 2, 3, 4].map((b) => post(r.port!, key, bulk(`d${b}`))))
      expect(answers.map((a) => a.status)).toEqual([202, 202, 202, 202])
      expect(eventLogOf(r.deps)!.backlog().events).toBe(2000)
    } finally {
      await ch.command({ query: 'RENAME TABLE event_batches_away TO event_batches' })
    }
    running = undefined
    await r.stop()
    const log = await EventLog.open(join(config.dataDir, 'event-log'), { maxBacklogBytes: BOUND })
    expect(log.backlog()).toEqual({ events: 0, bytes: 0 })
    await log.close()

    running = await startRoles(config, ['api', 'ingest'])
    expect(await stored(running, tenantId, 'd')).toEqual({ rows: 2000, ids: 2000 })
    expect(await stored(running, tenantId, 'k')).toEqual({ rows: acknowledged, ids: acknowledged })
  }, 60_000)
})
