// The dedup filter on real chDB: a partition's filter is built from event_ids with ClickHouse's hash and finds ids
// stored before it existed (the upgrade path) but not their twins in another environment; it holds only the ids of
// its partition's customers; a restart loads its snapshot and adds what was stored since (by any process); a revoked
// partition is written to its snapshot and let go; its misses are trusted, its hits looked up exactly.
import { randomUUID } from 'node:crypto'
import { existsSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ID_HASH_SQL, idHashes } from '../core/dedup-hash.ts'
import { eventKey, keyPartition } from '../core/partition.ts'
import { startRoles, type Running } from '../roles.ts'
import { testConfig } from '../test/harness.ts'
import { dedupFilter, type DedupFilter, type FilterSource } from './dedup-filter.ts'
import { batchLine, expiresText, insertBatch, lookupOf } from './store.ts'

const config = testConfig({ KAFKA_BROKERS: '' })
let running: Running
// Only the API: no inserter of the program's own runs a filter beside the test's.
beforeAll(async () => {
  running = await startRoles(config, ['api'])
})
afterAll(async () => {
  await running?.stop()
  rmSync(config.dataDir, { recursive: true, force: true })
})

const scope = { tenantId: 'ten_filter', environmentId: 'env_filter' }
const other = { ...scope, environmentId: 'env_filter_other' }
const uuids = (n: number) => Array.from({ length: n }, () => randomUUID())
const PARTITIONS = 3
/** A customer whose key the topic of PARTITIONS partitions gives to partition p. */
const customerOf = (p: number): string => {
  for (let i = 0; ; i++) if (keyPartition(eventKey({ ...scope, externalCustomerId: `cust-${i}` }), PARTITIONS) === p) return `cust-${i}`
}

function store(ids: string[], s = scope, customer = customerOf(0)): Promise<void> {
  const now = new Date()
  const expires = expiresText(new Date(now.getTime() + 35 * 86_400_000))
  const lines = ids.map((id) => batchLine({ kind: 'stored', event: { id, ...s, eventName: 'call', externalCustomerId: customer, customerId: '', source: '', timestamp: now, receivedAt: now, properties: {} }, rows: [] }, expires))
  return insertBatch(running.deps.ch, lines.join('\n'), `filter-${randomUUID()}`)
}

/** The stored ids among `ids` looked up in partition p (a chunk-sized lookup past 1,000 ids, listed below). */
async function found(filter: DedupFilter, p: number, ids: string[], s = scope): Promise<string[]> {
  return (await filter.of(p).stored(lookupOf(ids.map((id) => ({ ...s, id }))))).map(([, , id]) => id).sort()
}

const source = (name: string): FilterSource => ({ name, partitions: async () => PARTITIONS })

describe('the dedup hash', () => {
  it("is ClickHouse's ID_HASH_SQL over event_ids' columns, for any id", async () => {
    const keys = ['plain', 'ü-é 😀', 'tab\there', 'line\nbreak', 'back\\slash', '', 'x'.repeat(319)].map((id) => ({ tenantId: 'tén', environmentId: 'env\u0001', id }))
    const rs = await running.deps.ch.client.query({
      query: `SELECT toString(bitShiftRight(h, 32)) AS hi, toString(bitAnd(h, 4294967295)) AS lo
        FROM (SELECT ${ID_HASH_SQL} AS h, n FROM (SELECT arrayJoin(arrayEnumerate({ids:Array(String)})) AS n, {tenant:String} AS tenant_id, {env:String} AS environment_id, {ids:Array(String)}[n] AS event_id)) ORDER BY n`,
      query_params: { ids: keys.map((k) => k.id), tenant: 'tén', env: 'env\u0001' },
      format: 'JSONEachRow',
    })
    const expected = (await rs.json<{ hi: string; lo: string }>()).flatMap((r) => [Number(r.hi), Number(r.lo)])
    expect(Array.from(idHashes(keys))).toEqual(expected)
  })
})

describe('dedup filter', () => {
  const before = uuids(3)
  const elsewhere = uuids(2)

  it('is built from event_ids: finds ids stored before it existed, not their twins in another environment, nor new ids', async () => {
    await store(before)
    await store(elsewhere, other)
    const filter = dedupFilter(running.deps, source('built'))
    await filter.assign([0])
    const fresh = uuids(1500)
    expect(await found(filter, 0, [...before, ...fresh])).toEqual([...before].sort())
    expect(await found(filter, 0, elsewhere)).toEqual([])
    expect(await found(filter, 0, elsewhere, other)).toEqual([...elsewhere].sort())
    expect(filter.held()).toEqual([expect.objectContaining({ partition: 0, state: 'ready' })])
    await filter.stop()
  })

  it('holds the ids of its partition only, and a lookup adds its ids before their insert (a retried chunk finds them as hits)', async () => {
    const mine = uuids(50)
    const theirs = uuids(5000)
    await store(mine, scope, customerOf(1))
    await store(theirs, scope, customerOf(2))
    const filter = dedupFilter(running.deps, source('sharded'))
    await filter.assign([1])
    // Partition 1's filter was built from its customers' ids: those of partition 2 are nearly all misses.
    const held = filter.held()[0]
    expect(held.ids).toBeLessThan(1000)
    expect(await found(filter, 1, mine)).toEqual([...mine].sort())
    const chunk = uuids(2000)
    expect(await found(filter, 1, chunk)).toEqual([])
    // Not inserted: looked up again, the hits are checked exactly and none is stored.
    expect(await found(filter, 1, chunk)).toEqual([])
    expect(filter.held()[0].ids).toBeGreaterThanOrEqual(held.ids + 2 * chunk.length)
    await filter.stop()
  })

  it('writes its snapshot when a partition is revoked; a restart loads it and adds the ids stored since by anyone', async () => {
    const filter = dedupFilter(running.deps, source('restart'))
    await filter.assign([0])
    const first = uuids(20)
    expect(await found(filter, 0, first)).toEqual([])
    await store(first)
    await filter.assign([])
    const snapshot = join(config.dataDir, 'dedup-filter', 'restart', '0.bloom')
    expect(existsSync(snapshot)).toBe(true)
    expect(filter.held()).toEqual([])
    // Another process stores ids of partition 0 while this one does not hold it.
    const meanwhile = uuids(30)
    await store(meanwhile)
    const restarted = dedupFilter(running.deps, source('restart'))
    await restarted.assign([0])
    expect(await found(restarted, 0, [...first, ...meanwhile, ...uuids(10)])).toEqual([...first, ...meanwhile].sort())
    await restarted.stop()
  })

  it('adds the ids stored since a member last knew itself in the group when it joins again with a new member id', async () => {
    const [rejoined, unaware] = [dedupFilter(running.deps, source('rejoined')), dedupFilter(running.deps, source('unaware'))]
    for (const filter of [rejoined, unaware]) {
      await filter.assign([0, 1])
      await found(filter, 0, uuids(1))
      await found(filter, 1, uuids(1))
    }
    const lastCommit = Date.now()
    // Removed from the group (its session timed out), the member's partitions went to another for a generation, which
    // stored these; its filters never saw them, and a miss is trusted.
    const byAnother = uuids(12)
    await store(byAnother)
    // It joins again holding partition 0 only: that filter catches up; partition 1's is let go without a snapshot.
    await rejoined.assign([0], { missedSince: lastCommit })
    await unaware.assign([0])
    expect(await found(rejoined, 0, [...byAnother, ...uuids(3)])).toEqual([...byAnother].sort())
    expect(await found(unaware, 0, byAnother)).toEqual([])
    expect(rejoined.held().map((h) => h.partition)).toEqual([0])
    expect(existsSync(join(config.dataDir, 'dedup-filter', 'rejoined', '1.bloom'))).toBe(false)
    expect(existsSync(join(config.dataDir, 'dedup-filter', 'unaware', '1.bloom'))).toBe(true)
    await Promise.all([rejoined.stop(), unaware.stop()])
  })

  it('rebuilds from event_ids when its snapshot was made for another partition count', async () => {
    const ids = uuids(10)
    await store(ids, scope, customerOf(0))
    const three = dedupFilter(running.deps, source('recount'))
    await three.assign([0])
    await found(three, 0, uuids(1))
    await three.stop()
    // The same snapshot directory, the topic now with one partition: every customer is partition 0's, also those the
    // snapshot's filter (partition 0 of 3) did not hold.
    const theirs = uuids(5)
    await store(theirs, scope, customerOf(2))
    const one = dedupFilter(running.deps, { name: 'recount', partitions: async () => 1 })
    await one.assign([0])
    expect(await found(one, 0, [...ids, ...theirs, ...uuids(3)])).toEqual([...ids, ...theirs].sort())
    await one.stop()
  })

  it('is built again at a rebalance after partitions were added: its customers are not the same', async () => {
    let count = PARTITIONS
    const filter = dedupFilter(running.deps, { name: 'added', partitions: async () => count })
    await filter.assign([0])
    await found(filter, 0, uuids(1))
    // Stored under 3 partitions for partition 2's customer, which the topic of one partition gives to partition 0.
    const moved = uuids(4)
    await store(moved, scope, customerOf(2))
    count = 1
    await filter.assign([0])
    expect(await found(filter, 0, [...moved, ...uuids(2)])).toEqual([...moved].sort())
    await filter.stop()
  })

  it('builds the filters of one assignment in one read of event_ids, each holding its own customers', async () => {
    const ids = [0, 1, 2].map(() => uuids(7))
    for (const p of [0, 1, 2]) await store(ids[p], scope, customerOf(p))
    const lines: string[] = []
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) })
    const filter = dedupFilter({ ...running.deps, logger }, source('together'))
    await filter.assign([0, 1, 2])
    for (const p of [0, 1, 2]) expect(await found(filter, p, [...ids[p], ...uuids(2)])).toEqual([...ids[p]].sort())
    const builds = lines.map((l) => JSON.parse(l) as { msg: string; partitions?: number[] }).filter((l) => l.msg === 'dedup filter: filters built from event_ids')
    // On a server each load first waits for the inserts running there (other test files' too, on the shared endpoint),
    // and the loads may reach their builds apart; in process they meet in one.
    if (running.deps.ch.kind === 'chdb') expect(builds.map((b) => b.partitions?.sort())).toEqual([[0, 1, 2]])
    else expect(builds.flatMap((b) => b.partitions ?? []).sort()).toEqual([0, 1, 2])
    // Each filter was sized for its partition's ids only: partition 1's holds none of partition 2's stored ids.
    expect(filter.held().find((h) => h.partition === 1)!.ids).toBeLessThan(filter.held().find((h) => h.partition === 0)!.ids + 1000)
    await filter.stop()
  })

  it('is rebuilt when full, once: the hashes it adds again after the read do not count as new ids', async () => {
    const lines: string[] = []
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) })
    const filter = dedupFilter({ ...running.deps, logger }, { name: 'full', partitions: async () => 1 })
    await filter.assign([0])
    const rebuilt = () => lines.filter((l) => l.includes('dedup filter: rebuilt')).length
    // Chunks of 50,000 new ids, each stored after its lookup, past the smallest filter's 262,144 ids.
    for (let i = 0; i < 6; i++) {
      const chunk = uuids(50_000)
      expect(await found(filter, 0, chunk)).toEqual([])
      await store(chunk)
    }
    for (let waited = 0; rebuilt() === 0 && waited < 20_000; waited += 100) await new Promise((r) => setTimeout(r, 100))
    expect(rebuilt()).toBe(1)
    // The rebuilt filter has room: the next lookups start no other rebuild.
    for (let i = 0; i < 3; i++) await found(filter, 0, uuids(100))
    await new Promise((r) => setTimeout(r, 2000))
    expect(rebuilt()).toBe(1)
    await filter.stop()
  }, 120_000)
})
