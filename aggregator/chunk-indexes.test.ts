// A prepared chunk keeps which of its events each row is, by index, and finds them again from its records
// decoded anew (to split around a refused row): the duplicates can come in two runs (repeats within the
// chunk, then ids the lookup found stored), out of the chunk's order. Pure: the lookup's answer is given.
import { describe, expect, it } from 'vitest'
import { encodeEvent, type UsageEvent } from '../core/events.ts'
import { ChunkStore, packRecords } from './chunks.ts'
import { expiresText } from './store.ts'

const scope = { tenantId: 't1', environmentId: 'e1' }
const at = new Date('2024-07-01T10:00:00.000Z')
const event = (id: string, externalCustomerId: string): UsageEvent => ({ ...scope, id, eventName: 'job', externalCustomerId, customerId: '', source: '', timestamp: at, receivedAt: at, properties: { n: 1 } })
const expires = expiresText(new Date('2024-08-01T00:00:00.000Z'))

function prepared(events: UsageEvent[], stored: string[]) {
  const store = new ChunkStore()
  const fetch = store.fetch(...packRecords(events.map((e) => Buffer.from(encodeEvent(e)))), 1000)
  const chunk = store.next(fetch)!
  store.candidates(chunk.id)
  const rows = store.prepare(chunk.id, stored.map((id) => [scope.tenantId, scope.environmentId, id, '0', '0']), new Map(), expires)
  const lines = Buffer.from(rows.rows).toString('utf8').split('\n').map((l) => JSON.parse(l) as string[])
  return { store, id: chunk.id, lines }
}

describe('a prepared chunk', () => {
  it('finds each row again when the duplicates are out of the chunk order', () => {
    const [a, b, again, c] = [event('a', 'c1'), event('b', 'c2'), event('a', 'c3'), event('c', 'c4')]
    const { store, id, lines } = prepared([a, b, again, c], ['b'])
    // Rows: the fresh ones, the repeat within the chunk, then the one stored before.
    expect(lines.map((l) => [l[0], l[3], l[4]])).toEqual([
      ['stored', 'a', 'c1'],
      ['stored', 'c', 'c4'],
      ['duplicate', 'a', 'c3'],
      ['duplicate', 'b', 'c2'],
    ])
    expect([0, 1, 2, 3].map((i) => store.refused(id, i, 'refused'))).toEqual([
      { kind: 'stored', id: 'a', stored: { event: a, drops: [expect.stringContaining('"c1","","job"'), expect.stringContaining('"refused"')] } },
      { kind: 'stored', id: 'c', stored: { event: c, drops: [expect.stringContaining('"c4","","job"'), expect.stringContaining('"refused"')] } },
      { kind: 'duplicate', id: 'a' },
      { kind: 'duplicate', id: 'b' },
    ])
  })

  it('finds each row again when the chunk holds its duplicates in order', () => {
    const [a, again, b] = [event('a', 'c1'), event('a', 'c2'), event('b', 'c3')]
    const { store, id, lines } = prepared([a, again, b], [])
    expect(lines.map((l) => [l[0], l[3], l[4]])).toEqual([
      ['stored', 'a', 'c1'],
      ['stored', 'b', 'c3'],
      ['duplicate', 'a', 'c2'],
    ])
    expect(store.refused(id, 1, 'refused').stored?.event).toEqual(b)
    expect(store.refused(id, 2, 'refused')).toEqual({ kind: 'duplicate', id: 'a' })
  })
})

describe('packRecords', () => {
  const records = (bytes: Uint8Array, starts: Uint32Array, ends: Uint32Array) => Array.from(starts, (s, i) => Buffer.from(bytes.subarray(s, ends[i])).toString())

  it('copies views of one buffer in one piece, gaps included, and reads each record back', () => {
    const response = Buffer.from('..key1{"a":1}..key2{"b":22}..')
    const values = [response.subarray(6, 13), null, response.subarray(19, 27)]
    const [bytes, starts, ends] = packRecords(values)
    expect(records(bytes, starts, ends)).toEqual(['{"a":1}', '', '{"b":22}'])
    // From the first value's start to the last one's end, in a buffer of its own (it moves to the decode thread).
    expect(bytes.byteLength).toBe(21)
    expect(bytes.buffer).not.toBe(response.buffer)
  })

  it('copies values of different buffers one by one', () => {
    const own = (text: string) => Buffer.from(new TextEncoder().encode(text).buffer)
    const values = [own('{"a":1}'), undefined, own('{"é":"ü"}')]
    expect(values[0]!.buffer).not.toBe(values[2]!.buffer)
    const [bytes, starts, ends] = packRecords(values)
    expect(records(bytes, starts, ends)).toEqual(['{"a":1}', '', '{"é":"ü"}'])
    expect(bytes.byteLength).toBe(7 + Buffer.byteLength('{"é":"ü"}'))
  })
})
