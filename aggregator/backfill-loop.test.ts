// The backfill poll of a process while another process holds the meter-backfill lease: one info line for the wait,
// not a warning with a stack trace every second; once the lease is free the revision is filled.
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../test/harness.ts'
import { startBackfillLoop } from './backfill.ts'

let h: Harness
const lines: { level: number; msg: string }[] = []
let stopLoop: (() => Promise<void>) | undefined

const holdLease = () =>
  h.running.deps.sql`INSERT INTO job_leases (name, holder, expires_at) VALUES ('meter-backfill', 'another-process', now() + interval '1 hour')
    ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at`
const freeLease = () => h.running.deps.sql`UPDATE job_leases SET expires_at = now() WHERE name = 'meter-backfill' AND holder = 'another-process'`
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function newMeter(name: string): Promise<string> {
  const created = await h.http('POST', '/v1/meters', { body: { name, event_name: name, aggregation: { type: 'COUNT' } } })
  expect(created.status, JSON.stringify(created.body)).toBe(201)
  return created.body.id as string
}

async function ready(id: string): Promise<boolean> {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(100)) {
    const m = await h.http('GET', `/v1/meters/${id}`)
    if (m.body.ready_revision === m.body.revision) return true
  }
  return false
}

describe('the backfill poll while another process holds the lease', () => {
  beforeAll(async () => {
    h = await startHarness({ roles: ['api'], env: { METER_BACKFILL_SETTLE_SECONDS: '0' } })
    const logger = pino({ level: 'debug', base: undefined }, { write: (line: string) => void lines.push(JSON.parse(line)) })
    stopLoop = startBackfillLoop({ ...h.running.deps, logger })
  })
  afterAll(async () => {
    await stopLoop?.()
    await h?.stop()
  })

  it('says once that it waits, warns of nothing, and fills the revision once the lease is free', { timeout: 60_000 }, async () => {
    await holdLease()
    const first = await newMeter('lease.first')
    await sleep(3500) // three polls and more
    expect(lines.map((l) => [l.level, l.msg])).toEqual([[30, 'meter backfill runs in another process (it holds the lease); waiting for it']])

    await freeLease()
    expect(await ready(first)).toBe(true)
    await sleep(1500) // a poll that sees nothing pending ends the wait
    expect(lines).toHaveLength(1)

    // A later wait is said again, once.
    await holdLease()
    await newMeter('lease.second')
    await sleep(2500)
    expect(lines.map((l) => l.level)).toEqual([30, 30])
    await freeLease()
  })
})
