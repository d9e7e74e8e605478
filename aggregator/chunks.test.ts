// The decode thread (ChunkStore) of the Kafka consumer and the event log's inserter: records decoded there and
// written as insert text must store exactly the rows that the same events, given as objects and classified and
// written here (inThread), store, odd ones included;
// what is not an event comes back dead; a refused row splits the chunk's bytes as it split the text.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { encodeEvent, type UsageEvent } from '../core/events.ts'
import { startHarness, type Harness } from '../test/harness.ts'
import { readyMeter } from '../test/usage-helpers.ts'
import { resolutionRules } from '../domains/catalog/meters/service.ts'
import { ChunkStore, packRecords, startChunkThread, type ChunkCalls } from './chunks.ts'
import { candidatesOf, freshOf, outcomesOf, scopesOf, type Rejected } from './outcomes.ts'
import { batchLine, expiresText, insertBatch, keysOf, lookupOf, storedRows } from './store.ts'
import { prepareChunk, storeChunk } from './writer.ts'

const policy = { attempts: 1, baseMs: 0, maxMs: 0 }
let h: Harness
let scope: { tenantId: string; environmentId: string }

beforeAll(async () => {
  h = await startHarness({ env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0' } })
  scope = { tenantId: h.tenant.tenantId, environmentId: h.tenant.environments.production }
  await readyMeter(h, { name: 'count', event_name: 'job', aggregation: { type: 'COUNT' } })
  await readyMeter(h, { name: 'sum', event_name: 'job', aggregation: { type: 'SUM', field: 'n', group_by: 'g' } })
  await readyMeter(h, { name: 'uniques', event_name: 'job', aggregation: { type: 'COUNT_UNIQUE', field: 'u' } })
})
afterAll(() => h?.stop())

const at = (iso: string) => new Date(iso)
const expires = expiresText(new Date(Date.now() + 35 * 86_400_000))

/** Odd events: unicode everywhere, a numeric string longer than a double holds, nested and empty properties, a repeated id. */
function events(prefix: string, received = '2024-07-01T10:00:01.000Z', receipt?: number): UsageEvent[] {
  const base = { ...scope, eventName: 'job', customerId: '', source: '', timestamp: at('2024-07-01T10:00:00.123Z'), receivedAt: at(received), receipt }
  return [
    {
      ...base,
      id: `${prefix}-1`,
      externalCustomerId: 'cüst-😀 "q"',
      source: 'sdk \\ \t tab',
      customerId: 'ç',
      properties: { n: '12345678901234.123456789012', u: 'é', g: 'a\nb', weird: { '}': '{', list: [1, -2.5, null, true, { deep: [] }] }, '\u2028': '\u0000', empty: {} },
    },
    { ...base, id: `${prefix}-2`, externalCustomerId: 'c2', properties: { n: 3, u: 3, g: '' } },
    // Not a number: counted, no SUM row.
    { ...base, id: `${prefix}-3`, externalCustomerId: 'c2', timestamp: at('1970-01-01T00:00:00.000Z'), properties: { n: 'abc' } },
    { ...base, id: `${prefix}-1`, externalCustomerId: 'again', properties: {} },
    { ...base, id: `${prefix}-4`, externalCustomerId: 'c3', properties: { n: 1e-7, u: true } },
  ]
}

/** Records as the intake writes them (one or an array), and three that are not events. */
function records(prefix: string, received?: string, receipt?: number): string[] {
  const [e1, e2, e3, e4, e5] = events(prefix, received, receipt).map(encodeEvent)
  return [e1, `[${e2},${e3}]`, e4, e5, 'not json', JSON.stringify({ id: `${prefix}-bad`, tenant_id: scope.tenantId, environment_id: scope.environmentId }), '']
}

const pack = (texts: string[]) => packRecords(texts.map((t) => Buffer.from(t)))

/** A ChunkStore's methods answering asynchronously, as over a thread. */
const asCalls = (store: ChunkStore): ChunkCalls =>
  new Proxy({} as ChunkCalls, { get: (_, method: keyof ChunkStore) => async (...args: unknown[]) => (store[method] as (...a: unknown[]) => unknown).apply(store, args) })

/** A fetch through the consumer's steps: chunks, lookup, meters, insert text, insert (split when refused). */
async function throughChunks(calls: ChunkCalls, texts: string[], token: string, maxRows = 1000) {
  const fetch = await calls.fetch(...pack(texts), maxRows)
  const chunks = []
  let pending: number[] = []
  for (let c = await calls.next(fetch); c; c = await calls.next(fetch)) {
    const prepared = await prepareChunk(h.running.deps, calls, c, policy, { pending })
    const { refused } = await storeChunk(h.running.deps, calls, c.id, prepared, `${token}:${c.id}`, 'direct', policy)
    chunks.push({ ...c, result: prepared.result, refused })
    pending = [c.id]
  }
  return chunks
}

/** The reference: the same events given as objects, classified and written as lines on this thread, one insert. */
async function inThread(list: UsageEvent[], rejected: Rejected[], token: string) {
  const c = candidatesOf(list)
  const { fresh, keys, duplicates } = freshOf(c, keysOf(await storedRows(h.running.deps.ch, lookupOf(c.candidates))))
  const batch = outcomesOf(fresh, keys, duplicates, rejected, await resolutionRules(h.running.deps, scopesOf(fresh)))
  await insertBatch(h.running.deps.ch, batch.outcomes.map((o) => batchLine(o, expires)).join('\n'), token)
  return batch.result
}

async function rows(table: string, columns: string, prefix: string): Promise<unknown[]> {
  const id = table === 'events' ? 'id' : 'event_id'
  const rs = await h.running.deps.ch.client.query({
    query: `SELECT ${columns} FROM ${table} WHERE startsWith(${id}, {p:String}) ORDER BY ${columns}`,
    query_params: { p: `${prefix}-` },
    format: 'JSONEachRow',
  })
  // The ids differ by their prefix only.
  return JSON.parse(JSON.stringify(await rs.json()).replaceAll(`${prefix}-`, 'X-'))
}

const TABLES = {
  events: 'tenant_id, environment_id, external_customer_id, event_name, timestamp, id, customer_id, source, properties, received_at',
  meter_usage: 'tenant_id, environment_id, meter_id, revision, external_customer_id, timestamp, event_id, value, group_value, unique_value',
  event_ids: 'tenant_id, environment_id, event_id, external_customer_id, event_name, timestamp, received_at',
  event_drops: 'tenant_id, environment_id, event_id, kind, reason, timestamp, received_at',
}

describe('the decode thread', () => {
  it('stores exactly the rows the same events classified on this thread store, and says which records are not events', async () => {
    const old = await inThread(events('old9'), [{ event: { id: 'old9-bad', ...scope }, reason: 'event_name is missing' }], 'old')
    expect(old).toEqual({ stored: 4, duplicates: 1, rejected: 1, skippedValues: 2 })

    const store = new ChunkStore()
    const [chunk] = await throughChunks(asCalls(store), records('new9'), 'new')
    expect(chunk.result).toEqual({ stored: 4, duplicates: 1, rejected: 1, skippedValues: 2, replayed: 0 })
    expect(chunk.dead).toEqual([
      { record: 4, value: 'not json', reason: 'not JSON' },
      { record: 5, value: JSON.stringify({ id: 'new9-bad', tenant_id: scope.tenantId, environment_id: scope.environmentId }), reason: 'event_name is missing' },
      { record: 6, value: '', reason: 'empty record' },
    ])
    expect(chunk.scopes).toEqual([scope])
    for (const [table, columns] of Object.entries(TABLES)) {
      const stored = await rows(table, columns, 'new9')
      expect(stored.length, table).toBeGreaterThan(0)
      expect(stored, table).toEqual(await rows(table, columns, 'old9'))
    }
    // The numeric string longer than a double holds, exact.
    const rs = await h.running.deps.ch.client.query({ query: "SELECT toString(value) AS v FROM meter_usage WHERE event_id = 'new9-1' AND value > 1", format: 'JSONEachRow' })
    expect(await rs.json()).toEqual([{ v: '12345678901234.123456789012' }])
    store.release(chunk.id)
    expect(store.held()).toBe(0)
  })

  it('takes ids stored before as duplicates, and does not look up ids of the chunk in flight', async () => {
    const store = new ChunkStore()
    const calls = asCalls(store)
    const fresh = events('p9')
    // Resent by the client (received again later). Up to three events a chunk: [1, 2+3 (one record)], [1 again, 4, a
    // new one], [the new one again].
    const texts = [...records('new9', '2024-07-01T11:00:00.000Z').slice(0, 4), encodeEvent(fresh[1]), encodeEvent({ ...fresh[1], externalCustomerId: 'c9' })]
    const chunks = await throughChunks(calls, texts, 'again', 3)
    expect(chunks.map((c) => [c.from, c.to, c.result])).toEqual([
      [0, 2, { stored: 0, duplicates: 3, rejected: 0, skippedValues: 0, replayed: 0 }],
      // The repeat of new9-1 has the id and receipt instant of the copy the first chunk recorded: that drop, not another.
      [2, 5, { stored: 1, duplicates: 1, rejected: 0, skippedValues: 0, replayed: 1 }],
      [5, 6, { stored: 0, duplicates: 1, rejected: 0, skippedValues: 0, replayed: 0 }],
    ])
    // The new id is not looked up while the chunk holding it is in flight, and is looked up after.
    const fetch = store.fetch(...pack(texts.slice(4)), 1)
    const [first, second] = [store.next(fetch)!, store.next(fetch)!]
    expect(store.candidates(first.id).ids).toEqual(['p9-2'])
    store.prepare(first.id, [], new Map(), expires)
    expect(store.candidates(second.id, [first.id]).ids).toEqual([])
    expect(store.candidates(second.id).ids).toEqual(['p9-2'])
  })

  it('drops the records read again (a crash before the commit) without a trace: no duplicate the client did not send', async () => {
    const drops = async () => (await rows('event_drops', TABLES.event_drops, 'rep9')).length
    const [first] = await throughChunks(asCalls(new ChunkStore()), records('rep9'), 'first')
    expect(first.result).toMatchObject({ stored: 4, duplicates: 1, replayed: 0 })
    const recorded = await drops()
    // The same records again, under another token (read in other bounds): the four stored are the same copies, the
    // repeat's and the rejected record's drops are recorded already.
    const [again] = await throughChunks(asCalls(new ChunkStore()), records('rep9'), 'again')
    expect(again.result).toMatchObject({ stored: 0, duplicates: 0, rejected: 0, replayed: 6 })
    expect(await drops()).toBe(recorded)
    expect(await rows('events', TABLES.events, 'rep9')).toHaveLength(4)
  })

  it('records the drops of a chunk read again only once, also when none of its events is a stored copy', async () => {
    const drops = async () => (await rows('event_drops', TABLES.event_drops, 'res9')).length
    await throughChunks(asCalls(new ChunkStore()), records('res9'), 'original')
    // Resent by a client an hour later: every event a duplicate (no stored copy of these records).
    const resent = records('res9', '2024-07-01T11:00:00.000Z')
    const [first] = await throughChunks(asCalls(new ChunkStore()), resent, 'resent')
    // The record that is not an event has no receipt instant: its rejection is the one the original read recorded.
    expect(first.result).toMatchObject({ stored: 0, duplicates: 5, rejected: 0, replayed: 1 })
    const recorded = await drops()
    // Read again after a crash: its duplicates are recorded already.
    const [again] = await throughChunks(asCalls(new ChunkStore()), resent, 'again')
    expect(again.result).toMatchObject({ stored: 0, duplicates: 0, rejected: 0, replayed: 6 })
    expect(await drops()).toBe(recorded)
  })

  it("tells a client's copies received in the same millisecond by another ingest from the same copies read again", async () => {
    const drops = async () => (await rows('event_drops', TABLES.event_drops, 'ms9')).length
    // The same events at the same instant: as one ingest received them (receipt 1), and the copies another ingest
    // received in the same millisecond (receipt 2).
    const [first] = await throughChunks(asCalls(new ChunkStore()), records('ms9', undefined, 1), 'ms-first')
    expect(first.result).toMatchObject({ stored: 4, duplicates: 1, rejected: 1, replayed: 0 })
    const copies = records('ms9', undefined, 2)
    const [copied] = await throughChunks(asCalls(new ChunkStore()), copies, 'ms-copies')
    // The record that is not an event has no receipt nor instant: its rejection is the one recorded first.
    expect(copied.result).toMatchObject({ stored: 0, duplicates: 5, rejected: 0, replayed: 1 })
    const recorded = await drops()
    expect(recorded).toBe(7)
    // The copies read again (a crash before their commit, or a producer's retry writing them twice): recorded already.
    const [again] = await throughChunks(asCalls(new ChunkStore()), copies, 'ms-again')
    expect(again.result).toMatchObject({ stored: 0, duplicates: 0, rejected: 0, replayed: 6 })
    expect(await drops()).toBe(recorded)
  })

  it('splits a chunk around the row ClickHouse refuses, by the bytes of its text', async () => {
    const store = new ChunkStore()
    const list = events('ref9').filter((e, i) => i !== 3)
    list[2] = { ...list[2], source: 'sdk-\ud800' }
    const [chunk] = await throughChunks(asCalls(store), list.map(encodeEvent), 'refused')
    expect(chunk.refused.map((r) => [r.event.id, r.reason])).toEqual([['ref9-3', expect.stringMatching(/^ClickHouse refused the event: Cannot parse escape sequence/)]])
    expect(chunk.refused[0].event).toEqual(list[2])
    expect(((await rows('event_ids', 'event_id', 'ref9')) as { event_id: string }[]).map((r) => r.event_id)).toEqual(['X-1', 'X-2', 'X-4'])
    expect(await rows('event_drops', 'event_id, kind', 'ref9')).toEqual([{ event_id: 'X-3', kind: 'rejected' }])
  })

  it('runs on a thread of its own, the insert text crossing as bytes', async () => {
    const thread = startChunkThread()
    try {
      const fetch = await thread.calls.fetch(...pack(records('thr9')), 1000)
      const c = (await thread.calls.next(fetch))!
      expect(c.dead.map((d) => d.reason)).toEqual(['not JSON', 'event_name is missing', 'empty record'])
      const prepared = await prepareChunk(h.running.deps, thread.calls, c, policy)
      expect(prepared.rows).toBeInstanceOf(Uint8Array)
      expect(prepared.size).toBe(6)
      await insertBatch(h.running.deps.ch, prepared.rows, 'thread')
      expect(await rows('events', TABLES.events, 'thr9')).toEqual(await rows('events', TABLES.events, 'old9'))
      expect(await thread.calls.next(fetch)).toBeUndefined()
      await thread.calls.release(c.id)
      expect(await thread.calls.held()).toBe(0)
      await expect(thread.calls.candidates(c.id)).rejects.toThrow(`chunk ${c.id} is not held`)
    } finally {
      await thread.close()
    }
  })
})
