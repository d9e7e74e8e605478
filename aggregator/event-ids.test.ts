// The dedup sets kept at hand by scope (EventIds) must answer exactly as one set of joined keys would, however
// scopes interleave, including a scope asked about before it has any id; and candidatesOf, built on them,
// keeps the first of each id not pending. Pure: no database.
import { describe, expect, it } from 'vitest'
import type { UsageEvent } from '../core/events.ts'
import { candidatesOf } from './outcomes.ts'
import { EventIds, idsOf, keyOf, lookupOf, type EventKey } from './store.ts'
import { idHashes } from '../core/dedup-hash.ts'

// A fixed-seed generator: the same cases on every run.
let seed = 7
const random = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32)
const pick = <T>(xs: T[]): T => xs[Math.floor(random() * xs.length)]
// Scopes whose joined keys could collide if the set were keyed carelessly, and runs of one scope.
const SCOPES = [
  ['t1', 'e1'],
  ['t1', 'e2'],
  ['t2', 'e1'],
  ['t1e', '1'],
]
const key = (): EventKey => {
  const [tenantId, environmentId] = pick(SCOPES)
  return { tenantId, environmentId, id: pick(['a', 'b', 'c', 'd', '']) }
}

describe('EventIds', () => {
  it('answers as a set of joined keys, whatever the order of scopes and operations', () => {
    for (let run = 0; run < 200; run++) {
      const ids = new EventIds()
      const reference = new Set<string>()
      // Sticky scopes half the time, as a chunk's events mostly share one.
      let k = key()
      for (let step = 0; step < 60; step++) {
        k = random() < 0.5 ? { ...k, id: key().id } : key()
        const op = pick(['has', 'add', 'add', 'delete'] as const)
        if (op === 'has') expect(ids.has(k)).toBe(reference.has(keyOf(k)))
        else if (op === 'add') {
          expect(ids.add(k)).toBe(!reference.has(keyOf(k)))
          reference.add(keyOf(k))
        } else {
          ids.delete(k)
          reference.delete(keyOf(k))
        }
        expect(ids.size).toBe(reference.size)
      }
      for (const [tenantId, environmentId] of SCOPES) for (const id of ['a', 'b', 'c', 'd', '']) expect(ids.has({ tenantId, environmentId, id })).toBe(reference.has(keyOf({ tenantId, environmentId, id })))
    }
  })

  it('finds an id added to a scope it was asked about while that scope had none', () => {
    const ids = new EventIds()
    const k = { tenantId: 't', environmentId: 'e', id: 'x' }
    expect(ids.has(k)).toBe(false)
    expect(ids.add(k)).toBe(true)
    expect(ids.has(k)).toBe(true)
    expect(ids.has({ ...k, environmentId: 'f' })).toBe(false)
    expect(ids.has(k)).toBe(true)
    expect(ids.add(k)).toBe(false)
    expect(ids.size).toBe(1)
  })
})

describe('candidatesOf', () => {
  it('takes the first of each id not pending in any chunk in flight, in order, the others as duplicates', () => {
    for (let run = 0; run < 100; run++) {
      const events = Array.from({ length: 30 }, () => key() as UsageEvent)
      // Two chunks in flight, their ids in two sets.
      const pending = [new EventIds(), new EventIds()]
      const pendingKeys = new Set<string>()
      for (let i = 0; i < 6; i++) {
        const k = key()
        pending[i % 2].add(k)
        pendingKeys.add(keyOf(k))
      }
      const seen = new Set<string>()
      const expected = events.filter((e) => !pendingKeys.has(keyOf(e)) && !seen.has(keyOf(e)) && seen.add(keyOf(e)))
      const { candidates, keys, duplicates } = candidatesOf(events, pending)
      expect(candidates).toEqual(expected)
      expect(duplicates).toEqual(events.filter((e) => !expected.includes(e)))
      expect(keys.size).toBe(expected.length)
      for (const e of events) expect(keys.has(e)).toBe(seen.has(keyOf(e)))
    }
  })
})

describe('lookupOf', () => {
  it('asks for each key, with the tenants and environments they come from and the dedup hash of each in its scope', () => {
    const keys = [{ tenantId: 't', environmentId: 'e', id: 'b' }, { tenantId: 't', environmentId: 'e', id: 'a' }]
    expect(lookupOf(keys)).toEqual({ tenants: ['t'], envs: ['e'], ids: ['b', 'a'], hashes: idHashes(keys) })
    // One id in two scopes: asked twice (the lookup's IN ignores it), each with its scope's hash.
    const twice = lookupOf([{ tenantId: 't', environmentId: 'e', id: 'a' }, { tenantId: 't', environmentId: 'f', id: 'a' }, { tenantId: 'u', environmentId: 'e', id: 'b' }])
    expect(twice).toMatchObject({ tenants: ['t', 'u'], envs: ['e', 'f'], ids: ['a', 'a', 'b'] })
    expect(twice.hashes!.slice(0, 2)).not.toEqual(twice.hashes!.slice(2, 4))
  })

  it('gives more than 1,000 ids as TabSeparated lines, odd ones escaped', () => {
    const plain = Array.from({ length: 1_001 }, (_, i) => `id-${i}`)
    const of = (ids: string[]) => lookupOf(ids.map((id) => ({ tenantId: 't', environmentId: 'e', id })))
    expect(of(plain).ids).toBeUndefined()
    expect(of(plain).text).toBe(plain.join('\n'))
    const odd = plain.map((id, i) => (i === 7 ? 'q"\\\n😀\tx\r' : id))
    expect(of(odd).text!.split('\n')[7]).toBe('q"\\\\\\n😀\\tx\\r')
    expect(of(odd).text!.split('\n')).toHaveLength(1_001)
    // Read back as they were given, for the exact lookup of the filter's hits.
    expect(idsOf(of(odd))).toEqual(odd)
  })
})
