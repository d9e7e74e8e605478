// Starts the CLI as a user would, with no engine variables set (embedded PGlite and chDB, direct
// mode), drives it over HTTP, stops it, and starts it again on the same data directory.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'

const root = join(import.meta.dirname, '..')
const dataDir = mkdtempSync(join(tmpdir(), 'meterbill-smoke-'))
const children: ChildProcess[] = []

afterAll(() => {
  for (const c of children) c.kill('SIGKILL')
  rmSync(dataDir, { recursive: true, force: true })
})

function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: dataDir, PORT: '0', METRICS_PORT: '0', LOG_LEVEL: 'warn', ...extra }
  return env
}

interface Started {
  child: ChildProcess
  baseUrl: string
  stdout: () => string
  stderr: () => string
}

function startCli(env: NodeJS.ProcessEnv): Promise<Started> {
  const child = spawn(process.execPath, [join(root, 'bin/meterbill.js'), 'start'], { cwd: root, env })
  children.push(child)
  let out = ''
  let err = ''
  child.stdout!.on('data', (d) => (out += d))
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`CLI did not start in time:\n${err}`)), 90_000)
    child.stderr!.on('data', (d) => {
      err += d
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(err)
      if (m) {
        clearTimeout(timer)
        resolve({ child, baseUrl: m[1], stdout: () => out, stderr: () => err })
      }
    })
    child.on('exit', (code) => reject(new Error(`CLI exited with ${code}:\n${err}`)))
  })
}

function stop(s: Started): Promise<number | null> {
  return new Promise((resolve) => {
    s.child.on('exit', (code) => resolve(code))
    s.child.kill('SIGTERM')
  })
}

describe('the CLI on embedded defaults', () => {
  let key = ''

  it('starts, serves health, and prints an admin key that lists environments', async () => {
    const s = await startCli(userEnv())
    const health = await fetch(`${s.baseUrl}/v1/health`)
    expect(health.status).toBe(200)
    expect(await health.json()).toMatchObject({ engines: { postgres: { kind: 'pglite', status: 'ok' }, clickhouse: { kind: 'chdb', status: 'ok' } } })

    key = s.stdout().trim()
    expect(key).toMatch(/^mb_[A-Za-z0-9_-]{43}$/)
    const envs = await fetch(`${s.baseUrl}/v1/environments`, { headers: { 'x-api-key': key } })
    expect(envs.status).toBe(200)
    const body = (await envs.json()) as { items: { type: string }[] }
    expect(body.items.map((e) => e.type).sort()).toEqual(['production', 'sandbox'])
    expect(s.stderr()).toContain('direct mode')
    expect(await stop(s)).toBe(0)
  })

  it('keeps its data across a restart and does not bootstrap twice', async () => {
    const s = await startCli(userEnv())
    expect(s.stdout()).toBe('')
    const envs = await fetch(`${s.baseUrl}/v1/environments`, { headers: { 'x-api-key': key } })
    expect(envs.status).toBe(200)
    expect(await stop(s)).toBe(0)
  })

  it('stops with a message naming a bad setting', async () => {
    const child = spawn(process.execPath, [join(root, 'bin/meterbill.js'), 'start'], { cwd: root, env: userEnv({ PORT: 'eighty' }) })
    let err = ''
    child.stderr.on('data', (d) => (err += d))
    const code = await new Promise((resolve) => child.on('exit', resolve))
    expect(code).toBe(2)
    expect(err).toContain('PORT must be a whole number')
  })
})
