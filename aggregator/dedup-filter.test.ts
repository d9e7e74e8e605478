// The dedup filter on real chDB: its first check may only ever say "not stored" for an id event_ids does not hold in
// the window — ids stored before any generation (an upgrade), while a generation is made and filled, before a restart
// (the Set's file) or by an insert whose Set write a crash lost; the same id in another environment is not stored; and
// without a usable generation the lookup is the full one.
import { randomUUID } from 'node:crypto'
import { rmSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../core/clock.ts'
import { startRoles, type Running } from '../roles.ts'
import { testConfig } from '../test/harness.ts'
import { dedupFilter, type DedupFilter } from './dedup-filter.ts'
import { batchLine, expiresText, insertBatch, lookupOf, storedRows } from './store.ts'

// Now: event_ids drops rows whose expires_at has passed (its TTL), and the test moves the clock on by a day.
const clock = fixedClock(new Date())
const config = testConfig({ KAFKA_BROKERS: '' })
let running: Running
// Only the API: no inserter of the program's own runs a filter beside the test's.
beforeAll(async () => {
  running = await startRoles(config, ['api'], { clock })
})
afterAll(async () => {
  await running?.stop()
  rmSync(config.dataDir, { recursive: true, force: true })
})

const scope = { tenantId: 'ten_filter', environmentId: 'env_filter' }
const other = { ...scope, environmentId: 'env_filter_other' }
const uuids = (n: number) => Array.from({ length: n }, () => randomUUID())
const none = () => Promise.resolve()

function store(ids: string[], s = scope): Promise<void> {
  const expires = expiresText(new Date(clock.now().getTime() + 35 * 86_400_000))
  const lines = ids.map((id) => batchLine({ kind: 'stored', event: { id, ...s, eventName: 'call', externalCustomerId: 'c', customerId: '', source: '', timestamp: clock.now(), receivedAt: clock.now(), properties: {} }, rows: [] }, expires))
  return insertBatch(running.deps.ch, lines.join('\n'), `filter-${randomUUID()}`)
}

/** The stored ids among `ids` (a chunk-sized lookup past 1,000 ids, listed below), through `filter`. */
async function found(filter: DedupFilter, ids: string[], s = scope): Promise<string[]> {
  return (await filter.stored(lookupOf(ids.map((id) => ({ ...s, id }))), [s])).map(([, , id]) => id).sort()
}

async function one<T>(query: string): Promise<T[]> {
  return (await running.deps.ch.client.query({ query, format: 'JSONEachRow' })).json<T>()
}
const generations = async () => (await one<{ generation: number }>('SELECT DISTINCT generation FROM event_id_seen_generations ORDER BY generation')).map((r) => r.generation)
const seenTables = async () => (await one<{ name: string }>("SELECT name FROM system.tables WHERE database = currentDatabase() AND match(name, '^event_id_seen_[0-9]') ORDER BY name")).map((r) => r.name)
/** Whether the Set of generation g holds the id's hash in the scope: the filter itself, not the lookup after it. */
const inSet = async (g: number, id: string, s = scope) =>
  Number((await one<{ hit: number }>(`SELECT sipHash64('${s.tenantId}', '${s.environmentId}', '${id}') IN event_id_seen_${g} AS hit`))[0].hit) === 1

describe('dedup filter', () => {
  let filter: DedupFilter
  const before = uuids(3)
  const elsewhere = uuids(2)

  it('finds ids stored before its first generation existed (the upgrade path), and not their twins in another environment', async () => {
    await store(before)
    await store(elsewhere, other)
    filter = dedupFilter(running.deps)
    await filter.maintain(none)
    expect(await generations()).toEqual([1])
    expect(await inSet(1, before[0])).toBe(true)
    expect(await found(filter, [...before, ...elsewhere, ...uuids(2_000)])).toEqual([...before].sort())
    expect(await found(filter, [...before, ...uuids(5)])).toEqual([...before].sort())
    expect(await inSet(1, elsewhere[0])).toBe(false)
    expect(await found(filter, [...before, ...elsewhere], other)).toEqual([...elsewhere].sort())
    // Stored after the fill: in the Set through its view only.
    const later = uuids(2)
    await store(later)
    expect(await inSet(1, later[0])).toBe(true)
    expect(await found(filter, [...later, ...uuids(1_500)])).toEqual([...later].sort())
  })

  const during: string[] = []
  it('finds ids inserted while a new generation is made and filled, then drops the old one', async () => {
    clock.advance(86_400_000)
    const inserts: Promise<void>[] = []
    const batches = Array.from({ length: 4 }, () => uuids(3_000))
    during.push(...batches.flat())
    // One insert begun before the rotation, the others while it runs: the fill waits for those in flight when its view exists.
    inserts.push(store(batches[0]))
    const rotation = filter.maintain(() => Promise.all(inserts))
    for (const batch of batches.slice(1)) inserts.push(store(batch))
    await rotation
    await Promise.all(inserts)
    expect(await generations()).toEqual([1, 2])
    for (const id of [during[0], during[3_000], during.at(-1)!, before[0]]) expect(await inSet(2, id)).toBe(true)
    expect(await found(filter, [...during, ...uuids(1_000)])).toEqual([...during].sort())

    clock.advance(10 * 60_000)
    await filter.maintain(none)
    expect(await seenTables()).toEqual(['event_id_seen_2', 'event_id_seen_2_from_batches'])
    expect(await found(filter, [...before, ...uuids(10)])).toEqual([...before].sort())
  })

  it('looks ids up in event_ids when its generation is gone, then fills a new one', async () => {
    await running.deps.ch.client.command({ query: 'DROP VIEW event_id_seen_2_from_batches' })
    await running.deps.ch.client.command({ query: 'DROP TABLE event_id_seen_2' })
    const after = uuids(2)
    await store(after)
    expect(await found(filter, [...before, ...after, ...uuids(1_500)])).toEqual([...before, ...after].sort())
    await filter.maintain(none)
    expect(await seenTables()).toEqual(['event_id_seen_3', 'event_id_seen_3_from_batches'])
    expect(await inSet(3, after[0])).toBe(true)
    expect(await found(filter, [...after, ...uuids(10)])).toEqual([...after].sort())
  })

  it('keeps its Set across a restart, and a restarted process adds back what a crash kept from it', async () => {
    await filter.stop()
    const kept = uuids(2)
    await store(kept)
    // An id in event_ids whose Set write was lost (a crash between the insert's event_ids part and its Set file).
    const lost = randomUUID()
    await running.deps.ch.client.command({
      query: `INSERT INTO event_ids (tenant_id, environment_id, event_id, expires_at) VALUES ('${scope.tenantId}', '${scope.environmentId}', '${lost}', ${expiresText(new Date(clock.now().getTime() + 35 * 86_400_000)).replaceAll('"', "'")})`,
    })
    await running.stop()
    running = await startRoles(config, ['api'], { clock })
    expect(await inSet(3, kept[0])).toBe(true)
    expect(await inSet(3, lost)).toBe(false)
    const restarted = dedupFilter(running.deps)
    await restarted.maintain(none)
    expect(await inSet(3, lost)).toBe(true)
    expect(await found(restarted, [...kept, lost, ...before, ...uuids(1_500)])).toEqual([...kept, lost, ...before].sort())
    // The full lookup agrees.
    const full = await storedRows(running.deps.ch, lookupOf([...kept, lost, ...before].map((id) => ({ ...scope, id }))))
    expect(full.map(([, , id]) => id).sort()).toEqual([...kept, lost, ...before].sort())
    await restarted.stop()
  })
})
