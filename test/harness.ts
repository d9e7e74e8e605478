// Test harness: starts the real program in-process on real engines (PGlite or the Postgres of
// DATABASE_URL, in a database of its own), chDB, Kafka when KAFKA_BROKERS is set, with a fresh data directory and a fresh
// tenant per test file, and drives it over HTTP.
import { mkdtempSync, rmSync } from 'node:fs'
import postgres from 'postgres'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig, type Config } from '../core/config.ts'
import type { Clock } from '../core/clock.ts'
import { createTenant, type NewTenant } from '../domains/tenancy/tenants/service.ts'
import { startRoles, type RoleName, type Running } from '../roles.ts'
import { seedEmbeddedPostgres } from './global-setup.ts'

interface HttpResult<T = any> {
  status: number
  body: T
  headers: Headers
}

export interface Harness {
  running: Running
  config: Config
  baseUrl: string
  tenant: NewTenant
  /** The tenant's production admin key. */
  key: string
  http<T = any>(method: string, path: string, options?: { body?: unknown; key?: string | null; headers?: Record<string, string>; raw?: string }): Promise<HttpResult<T>>
  newTenant(name?: string): Promise<NewTenant>
  stop(): Promise<void>
}

/** Variables a test run passes through: the engines CI configured. Everything else is the test's own. */
const PASS_THROUGH = ['DATABASE_URL', 'KAFKA_BROKERS', 'CLICKHOUSE_URL', 'CLICKHOUSE_USER', 'CLICKHOUSE_PASSWORD']

export function testConfig(overrides: Record<string, string> = {}): Config {
  const env: Record<string, string> = { LOG_LEVEL: 'silent', PORT: '0', HOST: '127.0.0.1', METRICS_PORT: '0' }
  for (const name of PASS_THROUGH) if (process.env[name]) env[name] = process.env[name]!
  env.DATA_DIR = mkdtempSync(join(tmpdir(), 'meterbill-test-'))
  seedEmbeddedPostgres(env.DATA_DIR)
  // A database of its own per test process when running on a ClickHouse server.
  env.CLICKHOUSE_DATABASE = `meterbill_test_${process.pid}`
  return loadConfig({ ...env, ...overrides })
}

/**
 * On a Postgres server (CI), a database of this test file's own: scheduled jobs run over every tenant,
 * so test files sharing one database would see each other's subscriptions and invoices.
 */
/** A database of its own on the Postgres server at `serverUrl` (`meterbill_test_` ones are dropped by .ci/run's cleanup). */
export async function ownDatabase(serverUrl: string, name = `meterbill_test_${process.pid}_${Date.now()}`): Promise<{ url: string; drop(): Promise<void> }> {
  const admin = () => postgres(serverUrl, { max: 1, onnotice: () => {} })
  const create = admin()
  await create.unsafe(`CREATE DATABASE ${name}`)
  await create.end()
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    drop: async () => {
      const drop = admin()
      await drop.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await drop.end()
    },
  }
}

export async function startHarness(
  options: { roles?: RoleName[]; clock?: Clock; env?: Record<string, string> } = {},
): Promise<Harness> {
  const server = options.env?.DATABASE_URL ?? process.env.DATABASE_URL
  const database = server ? await ownDatabase(server) : undefined
  const config = testConfig({ ...options.env, ...(database ? { DATABASE_URL: database.url } : {}) })
  const running = await startRoles(config, options.roles ?? ['api', 'ingest'], { clock: options.clock })
  const baseUrl = `http://127.0.0.1:${running.port}`
  const tenant = await createTenant(running.deps, `test-${process.pid}-${Date.now()}`)

  const http: Harness['http'] = async (method, path, opts = {}) => {
    const key = opts.key === undefined ? tenant.apiKey : opts.key
    const headers: Record<string, string> = { ...opts.headers }
    if (key !== null) headers['x-api-key'] = key
    let payload: string | undefined = opts.raw
    if (opts.body !== undefined) {
      payload = JSON.stringify(opts.body)
      headers['content-type'] ??= 'application/json'
    }
    const res = await fetch(baseUrl + path, { method, headers, body: payload })
    const text = await res.text()
    let body: unknown = text
    if ((res.headers.get('content-type') ?? '').includes('json') && text) body = JSON.parse(text)
    return { status: res.status, body: body as any, headers: res.headers }
  }

  return {
    running,
    config,
    baseUrl,
    tenant,
    key: tenant.apiKey,
    http,
    newTenant: (name = `other-${Date.now()}`) => createTenant(running.deps, name),
    stop: async () => {
      await running.stop()
      await database?.drop()
      rmSync(config.dataDir, { recursive: true, force: true })
    },
  }
}
