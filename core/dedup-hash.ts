// The dedup filter's hash of an event id in its scope: xxHash64 of `tenant \0 environment \0 id`, which ClickHouse
// computes the same (ID_HASH_SQL), so a filter is built from event_ids by ClickHouse and probed here with the same bits.
import xxhash from 'xxhash-wasm'
import type { Scope } from './scope.ts'

const { h64 } = await xxhash()

/** ClickHouse's expression of the same hash over event_ids' columns (aggregator/dedup-filter.ts builds filters with it). */
export const ID_HASH_SQL = "xxHash64(concat(tenant_id, '\\0', environment_id, '\\0', event_id))"

const LOW = 0xffffffffn

/** The hashes of keys in order, as pairs (high 32 bits, low 32 bits): a chunk's keys mostly share one scope, whose prefix is built once. */
export function idHashes(keys: readonly (Scope & { id: string })[]): Uint32Array {
  const out = new Uint32Array(keys.length * 2)
  let tenant: string | undefined
  let environment: string | undefined
  let prefix = ''
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]
    if (k.tenantId !== tenant || k.environmentId !== environment) {
      tenant = k.tenantId
      environment = k.environmentId
      prefix = `${tenant}\u0000${environment}\u0000`
    }
    const h = h64(prefix + k.id)
    out[i * 2] = Number(h >> 32n)
    out[i * 2 + 1] = Number(h & LOW)
  }
  return out
}
