// The event log on a real file system: what is acknowledged is read back in order, after a reopen too, until a
// checkpoint says it is stored; concurrent appends share fsyncs; a full backlog refuses a request whole.
import { appendFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { decodeRecord, type UsageEvent } from '../core/events.ts'
import { EventLog, type LogBatch } from './event-log.ts'

const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})
const newDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'meterbill-event-log-'))
  dirs.push(d)
  return d
}

const at = new Date('2024-05-01T00:00:00.000Z')
const events = (prefix: string, n: number): UsageEvent[] =>
  Array.from({ length: n }, (_, i) => ({
    id: `${prefix}-${i}`,
    tenantId: 't',
    environmentId: 'env',
    eventName: 'api.call',
    externalCustomerId: 'c',
    customerId: '',
    source: '',
    timestamp: at,
    receivedAt: at,
    properties: { n: i },
  }))

/** A batch's events, decoded from its lines. */
const eventsOf = (b: LogBatch): UsageEvent[] =>
  Array.from(b.starts, (start, i) => decodeRecord(Buffer.from(b.bytes).toString('utf8', start, b.ends[i]))).flatMap((ds) => ds.flatMap((d) => (d.ok ? [d.event] : [])))

/** Everything readable now, checkpointing each batch when asked. */
async function readAll(log: EventLog, checkpoint: boolean): Promise<string[]> {
  const ids: string[] = []
  for (let b = await log.read(1000); b; b = await log.read(1000)) {
    ids.push(...eventsOf(b).map((e) => e.id))
    if (checkpoint) await log.checkpoint(b)
  }
  return ids
}

describe('the event log', () => {
  it('reads back what was appended, in order, with the range as the token, and empties the backlog on checkpoint', async () => {
    const log = await EventLog.open(newDir(), { maxBacklogBytes: 1 << 20 })
    await log.append(events('a', 3))
    await log.append(events('b', 2))
    expect(log.backlog().events).toBe(5)
    const batch = (await log.read(1000))!
    expect(eventsOf(batch).map((e) => e.id)).toEqual(['a-0', 'a-1', 'a-2', 'b-0', 'b-1'])
    expect(eventsOf(batch)[1]).toEqual(events('a', 3)[1])
    expect(batch.token).toBe(`log:${batch.segment}:0-${batch.to}`)
    expect(await log.read(1000)).toBeUndefined()
    await log.checkpoint(batch)
    expect(log.backlog()).toEqual({ events: 0, bytes: 0 })
    await log.close()
  })

  it('reads a line far longer than the mean one (the window grows), and a batch of small lines in a window sized to them', async () => {
    const log = await EventLog.open(newDir(), { maxBacklogBytes: 16 << 20 })
    const big = events('big', 1).map((e) => ({ ...e, properties: { blob: 'x'.repeat(300_000) } }))
    for (let i = 0; i < 20; i++) await log.append(events(`s${i}`, 1000))
    await log.append(big)
    // 20,001 events in ~5 MB: the mean line is ~260 bytes an event, the big one 300 kB. A batch of 2,000 reads a
    // window of about its own size (a fixed 2 KiB an event read 4 MB for 0.5).
    const small = (await log.read(2000))!
    expect([small.count, eventsOf(small).at(-1)?.id]).toEqual([2000, 's1-999'])
    expect(small.bytes.buffer.byteLength).toBeLessThan(2 * small.bytes.length)
    let batch = (await log.read(1))!
    while (batch.count === 1000) batch = (await log.read(1))!
    expect(eventsOf(batch)).toEqual(big)
  })

  it('writes requests that arrive during an fsync with one fsync (group commit)', async () => {
    const log = await EventLog.open(newDir(), { maxBacklogBytes: 1 << 24 })
    await Promise.all(Array.from({ length: 50 }, (_, i) => log.append(events(`g${i}`, 10))))
    // The first append's fsync runs alone; the 49 that came meanwhile share the next.
    expect(log.syncs).toBeLessThanOrEqual(2)
    expect((await readAll(log, false)).length).toBe(500)
    await log.close()
  })

  it('replays what was not checkpointed after a reopen, skips a torn last line, and appends to a new segment', async () => {
    const dir = newDir()
    const first = await EventLog.open(dir, { maxBacklogBytes: 1 << 20 })
    await first.append(events('x', 2))
    const stored = (await first.read(1000))!
    await first.checkpoint(stored)
    await first.append(events('y', 3))
    await first.close()
    // A crash mid-write: the unacknowledged line has no newline.
    const [segment] = readdirSync(dir).filter((f) => f.endsWith('.log'))
    appendFileSync(join(dir, segment), '1 [{"id":"torn"')

    const again = await EventLog.open(dir, { maxBacklogBytes: 1 << 20 })
    expect(again.backlog().events).toBe(3)
    await again.append(events('z', 1))
    expect(readdirSync(dir).filter((f) => f.endsWith('.log'))).toHaveLength(2)
    expect(await readAll(again, true)).toEqual(['y-0', 'y-1', 'y-2', 'z-0'])
    await again.close()
  })

  it('deletes segments once a checkpoint is past them', async () => {
    const dir = newDir()
    const log = await EventLog.open(dir, { maxBacklogBytes: 1 << 20, segmentBytes: 1000 })
    for (let i = 0; i < 4; i++) await log.append(events(`s${i}`, 5))
    expect(readdirSync(dir).filter((f) => f.endsWith('.log')).length).toBeGreaterThanOrEqual(4)
    expect((await readAll(log, true)).length).toBe(20)
    // Only the segment being appended to (and the last one read, until the next checkpoint) remain.
    expect(readdirSync(dir).filter((f) => f.endsWith('.log')).length).toBeLessThanOrEqual(2)
    await log.close()
    const reopened = await EventLog.open(dir, { maxBacklogBytes: 1 << 20 })
    expect(reopened.backlog().events).toBe(0)
    expect(await readAll(reopened, false)).toEqual([])
    await reopened.close()
  })

  it('refuses a request whole with 503 once the backlog is full, and takes it again after a checkpoint', async () => {
    const log = await EventLog.open(newDir(), { maxBacklogBytes: 4000 })
    await log.append(events('f', 5))
    const before = log.backlog()
    const refused = await log.append(events('full', 20)).catch((err: unknown) => err)
    expect(refused).toMatchObject({ code: 'service_unavailable', retryAfter: 1 })
    expect(log.backlog()).toEqual(before)
    expect(await readAll(log, true)).toEqual(events('f', 5).map((e) => e.id))
    await log.append(events('full', 20))
    expect((await readAll(log, false)).length).toBe(20)
    await log.close()
  })
})
