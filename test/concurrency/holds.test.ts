// Never overdrawn: 1,000 holds of 1 credit sent at once at a wallet of 100 credits → exactly 100 are made,
// the other 900 refused with the error body, in each engine mode: embedded PGlite (one connection), a
// Postgres server (parallel transactions racing for the wallet's row lock), and two API processes (this
// one and a child `cli.ts api`) against that one Postgres.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { customer } from '../catalog.ts'
import { startHarness, type Harness } from '../harness.ts'
import { freePort } from '../kafka.ts'
import { call, newWallet, topUp } from '../wallets.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const POSTGRES = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const harnesses: Harness[] = []
let child: ChildProcess | undefined
const dirs: string[] = []

afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill('SIGTERM')
    await new Promise((r) => child!.once('exit', r))
  }
  await Promise.all(harnesses.map((h) => h.stop()))
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

async function harness(env: Record<string, string> = {}): Promise<Harness> {
  const h = await startHarness({ env: { RATE_LIMIT_PER_SECOND: '1000000', KAFKA_BROKERS: '', ...env } })
  harnesses.push(h)
  return h
}

/** A wallet of 100 credits, then 1,000 holds of 1 credit at once spread over `bases` (API servers); the counts by status. */
async function race(h: Harness, bases: string[]): Promise<{ made: number; refused: number; wallet: any }> {
  const wallet = await newWallet(h, (await customer(h)).id)
  await topUp(h, wallet.id, { credits_to_add: '100' })
  const send = async (i: number): Promise<number> => {
    const res = await fetch(`${bases[i % bases.length]}/v1/wallets/${wallet.id}/holds`, {
      method: 'POST',
      headers: { 'x-api-key': h.key, 'content-type': 'application/json' },
      body: JSON.stringify({ amount: '1' }),
    })
    const body = (await res.json()) as any
    if (res.status !== 201) expect(body).toMatchObject({ code: 'invalid_operation', http_status_code: 400, details: { requested: '1' } })
    return res.status
  }
  // Each send settles to a status (failures included), so no rejection waits unobserved.
  const started = performance.now()
  const statuses = await Promise.all(Array.from({ length: 1000 }, (_, i) => send(i)))
  console.log(`1,000 holds over ${bases.length} process(es): ${Math.round(performance.now() - started)} ms`)
  const after = await call(h, 'GET', `/v1/wallets/${wallet.id}`)
  return { made: statuses.filter((s) => s === 201).length, refused: statuses.filter((s) => s === 400).length, wallet: after }
}

describe('1,000 concurrent holds of 1 credit on a wallet of 100', () => {
  it('embedded PGlite: exactly 100 made', { timeout: 120_000 }, async () => {
    const h = await harness({ DATABASE_URL: '' })
    const r = await race(h, [h.baseUrl])
    expect([r.made, r.refused]).toEqual([100, 900])
    expect(r.wallet).toMatchObject({ credit_balance: '100', held_balance: '100', available_balance: '0' })
    // chDB opens one data directory per process: the next harness needs this one closed.
    await h.stop()
    harnesses.splice(harnesses.indexOf(h), 1)
  })

  it('Postgres, two API processes: exactly 100 made', { timeout: 180_000 }, async () => {
    const h = await harness({ DATABASE_URL: POSTGRES })
    const one = await race(h, [h.baseUrl])
    expect([one.made, one.refused]).toEqual([100, 900])
    expect(one.wallet).toMatchObject({ held_balance: '100', available_balance: '0' })

    const port = await freePort()
    const dataDir = mkdtempSync(join(tmpdir(), 'meterbill-holds-'))
    dirs.push(dataDir)
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, HOST: '127.0.0.1', PORT: String(port), METRICS_PORT: '0', DATA_DIR: dataDir, DATABASE_URL: h.config.databaseUrl!, KAFKA_BROKERS: '', LOG_LEVEL: 'warn', RATE_LIMIT_PER_SECOND: '1000000' }
    child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'cli.ts'), 'api'], { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'inherit'] })
    const second = `http://127.0.0.1:${port}`
    for (const deadline = Date.now() + 90_000; ; ) {
      const up = await fetch(`${second}/v1/health`).then((r) => r.ok, () => false)
      if (up) break
      if (Date.now() > deadline || child.exitCode !== null) throw new Error('the second API process did not start')
      await new Promise((r) => setTimeout(r, 250))
    }
    const two = await race(h, [h.baseUrl, second])
    expect([two.made, two.refused]).toEqual([100, 900])
    expect(two.wallet).toMatchObject({ held_balance: '100', available_balance: '0' })
  })
})
