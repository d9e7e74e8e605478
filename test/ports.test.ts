// A port another process holds: the start stops with a message naming the variable to change (PORT or METRICS_PORT),
// and the CLI prints that line alone, exit code 1, no stack trace.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ListenError, startRoles } from '../roles.ts'
import { seedEmbeddedPostgres } from './global-setup.ts'
import { testConfig } from './harness.ts'

const root = join(import.meta.dirname, '..')
let taken: Server
let port = 0
const dirs: string[] = []

beforeAll(async () => {
  taken = createServer()
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', () => resolve()))
  port = (taken.address() as { port: number }).port
})
afterAll(async () => {
  await new Promise((resolve) => taken.close(resolve))
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

async function startError(env: Record<string, string>): Promise<unknown> {
  // Embedded engines whatever CI passes through: this start never gets as far as using them.
  const config = testConfig({ DATABASE_URL: '', CLICKHOUSE_URL: '', KAFKA_BROKERS: '', ...env })
  dirs.push(config.dataDir)
  return startRoles(config, ['api']).then(
    async (running) => {
      await running.stop()
      return undefined
    },
    (err: unknown) => err,
  )
}

describe('a port already in use', () => {
  it('names PORT', { timeout: 60_000 }, async () => {
    const err = await startError({ PORT: String(port) })
    expect(err).toBeInstanceOf(ListenError)
    expect((err as Error).message).toBe(`PORT ${port} on 127.0.0.1: address in use (set PORT to another port)`)
  })

  it('names METRICS_PORT', { timeout: 60_000 }, async () => {
    const err = await startError({ METRICS_HOST: '127.0.0.1', METRICS_PORT: String(port) })
    expect((err as Error).message).toBe(`METRICS_PORT ${port} on 127.0.0.1: address in use (set METRICS_PORT to another port, or off)`)
  })

  it('is one line of the CLI, without a stack trace', { timeout: 90_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'meterbill-ports-'))
    dirs.push(dataDir)
    seedEmbeddedPostgres(dataDir) // an initialized PGlite, as the harness starts from: the CLI gets to its listen sooner
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: String(port), METRICS_PORT: '0', LOG_LEVEL: 'warn' }
    const child = spawn(process.execPath, [join(root, 'bin/meterbill.js'), 'api'], { cwd: root, env })
    let stderr = ''
    child.stderr.on('data', (d) => (stderr += d))
    const code = await new Promise((resolve) => child.on('exit', resolve))
    expect(code).toBe(1)
    expect(stderr).toContain(`PORT ${port} on 127.0.0.1: address in use (set PORT to another port)`)
    expect(stderr).not.toMatch(/^\s+at /m)
  })
})
