// The dedup lookup with event ids as SDKs send them (UUIDs), in chunk-sized lists: it must find exactly the
// stored ids of the asked scope, also when two lookups run at once. (As one Array(String) parameter, a list
// of 30,000 UUIDs made ClickHouse compare every row with every id.) Odd ids (quotes, backslashes, tabs, line
// breaks, unicode) must come through the TabSeparated text of the list as they are.
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../test/harness.ts'
import { batchLine, expiresText, insertBatch, lookupOf, storedRows } from './store.ts'

let h: Harness
beforeAll(async () => {
  h = await startHarness({ env: { KAFKA_BROKERS: '' } })
})
afterAll(() => h?.stop())

const now = new Date()
const scope = { tenantId: 'ten_lookup', environmentId: 'env_lookup' }
const other = { tenantId: 'ten_lookup', environmentId: 'env_other' }

async function store(s: typeof scope, ids: string[], token: string): Promise<void> {
  const lines = ids.map((id) => batchLine({ kind: 'stored', event: { id, ...s, eventName: 'call', externalCustomerId: 'c', customerId: '', source: '', timestamp: now, receivedAt: now, properties: {} }, rows: [] }, expiresText(new Date(now.getTime() + 86_400_000))))
  await insertBatch(h.running.deps.ch, Buffer.from(lines.join('\n')), token)
}

describe('storedRows', () => {
  it('finds exactly the stored ids of a 40,000-UUID lookup and of a three-id one, at once', async () => {
    const odd = ['a"b', "it's", 'back\\slash', 'tab\there', 'line\nbreak', 'é😀']
    const stored = [...odd, ...Array.from({ length: 19_994 }, () => randomUUID())]
    const elsewhere = Array.from({ length: 5_000 }, () => randomUUID())
    await store(scope, stored, 'lookup-stored')
    // Stored in another environment of the tenant: not a duplicate here.
    await store(other, elsewhere, 'lookup-elsewhere')

    const asked = [...stored.filter((_, i) => i % 2 === 0), ...elsewhere, ...Array.from({ length: 25_000 }, () => randomUUID())]
    const keys = (ids: string[]) => lookupOf(ids.map((id) => ({ ...scope, id })))
    const [found, again] = await Promise.all([storedRows(h.running.deps.ch, keys(asked)), storedRows(h.running.deps.ch, keys(stored.slice(0, 3)))])

    expect(asked.length).toBe(40_000)
    expect(found.map(([, , id]) => id).sort()).toEqual(stored.filter((_, i) => i % 2 === 0).sort())
    expect(found.every(([t, e]) => t === scope.tenantId && e === scope.environmentId)).toBe(true)
    expect(again.map(([, , id]) => id).sort()).toEqual(stored.slice(0, 3).sort())
  })
  it('finds ids stored before event_ids had its hash column (computed when read)', async () => {
    const { ch } = h.running.deps
    await ch.client.command({ query: 'ALTER TABLE event_ids DROP COLUMN id_hash' })
    const before = [randomUUID(), randomUUID()]
    await store(scope, before, 'lookup-before-hash')
    await ch.client.command({ query: readFileSync(new URL('../sql/clickhouse/0004_event_ids_hash.sql', import.meta.url), 'utf8') })
    // Past the ids a lookup lists in its statement: read by their hashes.
    const found = await storedRows(ch, lookupOf([...before, ...Array.from({ length: 1_500 }, () => randomUUID())].map((id) => ({ ...scope, id }))))
    expect(found.map(([, , id]) => id).sort()).toEqual([...before].sort())
  })
})
