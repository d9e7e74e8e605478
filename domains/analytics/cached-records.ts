// The billing records an analytics request reads before any usage (its features, meters and customers, the
// subscriptions and billing contexts that price them), answered from memory for up to READ_CACHE_MS and never
// across a write of this process, as SDK entitlement reads are (infra/read-cache): a dashboard asks again and again
// for the same customers with other ranges, windows and groupings, and these reads were a third of its answer.
import type { Scope } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import { ReadCache } from '../../infra/read-cache.ts'

const caches = new WeakMap<Deps, ReadCache<unknown>>()

/** `load()`'s value for (scope, what, args), shared by the requests that ask within READ_CACHE_MS. Not to be mutated. */
export function cachedRecords<V>(deps: Deps, scope: Scope, what: string, args: unknown, load: () => Promise<V>): Promise<V> {
  let cache = caches.get(deps)
  if (!cache) caches.set(deps, (cache = new ReadCache()))
  return cache.read(JSON.stringify([scope.tenantId, scope.environmentId, what, args]), deps.clock.now(), load) as Promise<V>
}
