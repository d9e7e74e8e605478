// Stored usage for the entitlement check, cached per customer and period and refreshed in bulk. Checking 200
// customers a second one usage query each cost ~12 ms of CPU per customer; here the reads of one meter are
// answered together: a miss waits for the meter's next read (coalesced with the other misses meanwhile), and a
// hit near the end of its life (0.8 s) starts a read that also takes every other entry of the meter older than
// 0.3 s, so a meter's warm customers come to be refreshed together, by one or two queries a second
// (meterUsageOverRanges: each over its own period, in one query). Nothing answered is older than READ_CACHE_MS,
// or from before an event the event log acknowledged since (the caller passes the log's count): the same bound
// as the other reads of the check.
import { notFound } from '../../../core/errors.ts'
import { GroupCommit, type Outcome } from '../../../core/group-commit.ts'
import type { Decimal } from '../../../core/money.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import { READ_CACHE_MS } from '../../../infra/read-cache.ts'
import { customerViews } from '../../customers/service.ts'
import { meterUsageOverRanges } from '../../usage/queries/service.ts'

/** A hit this old starts a refresh of the meter (as infra/read-cache.ts: no answer waits for one, none is older than READ_CACHE_MS)... */
const REFRESH_AT_MS = READ_CACHE_MS * 0.8
/** ...which takes every entry of the meter at least this old, so that a meter's entries come to be read together. */
const SWEEP_AT_MS = READ_CACHE_MS * 0.3
/** Entries not asked for this long are no longer refreshed, and dropped at the meter's next read. */
const IDLE_MS = READ_CACHE_MS * 10
/** Ranges one query reads at most (requests first, then the stalest entries). */
const MAX_RANGES = 1_000

/** A customer (by its id: the read resolves the external ids of the whole batch at once) over a period. */
export interface UsageRange {
  customerId: string
  start: Date
  end: Date
}

interface Entry {
  range: UsageRange
  /** When the read that gave `value` started, and the event log's count then. */
  at: number
  acknowledged: number
  value: Decimal
  used: number
}

interface Request {
  entry: string
  range: UsageRange
  acknowledged: number
}

interface MeterCache {
  entries: Map<string, Entry>
  reads: GroupCommit<Request, Decimal>
  /** A background refresh is queued or in flight: hits do not ask for another. */
  refreshing: boolean
}

const caches = new WeakMap<Deps, Map<string, MeterCache>>()

function meterCache(deps: Deps, scope: Scope, meterId: string): MeterCache {
  let all = caches.get(deps)
  if (!all) caches.set(deps, (all = new Map()))
  const key = `${scope.tenantId}\n${scope.environmentId}\n${meterId}`
  let mine = all.get(key)
  if (!mine) {
    const entries = new Map<string, Entry>()
    const reads = new GroupCommit<Request, Decimal>(async (_key, requests) => {
      const now = deps.clock.now().getTime()
      const batch = new Map(requests.map((r) => [r.entry, r.range]))
      for (const [id, e] of entries) {
        if (now - e.used > IDLE_MS) entries.delete(id)
        else if (batch.size < MAX_RANGES && !batch.has(id) && now - e.at >= SWEEP_AT_MS) batch.set(id, e.range)
      }
      const acknowledged = Math.max(...requests.map((r) => r.acknowledged))
      const customers = await customerViews(deps.sql, scope, [...new Set([...batch.values()].map((r) => r.customerId))])
      const external = new Map(customers.map((c) => [c.id, c.external_id]))
      // A customer deleted since: its entry goes, its request is a 404.
      for (const [id, r] of batch) if (!external.has(r.customerId)) batch.delete(id), entries.delete(id)
      const ids = [...batch.keys()]
      const ranges = [...batch.values()]
      const values = await meterUsageOverRanges(deps, scope, meterId, ranges.map((r) => ({ externalCustomerId: external.get(r.customerId)!, start: r.start, end: r.end })))
      ids.forEach((id, i) => {
        const e = entries.get(id)
        entries.set(id, { range: ranges[i], at: now, acknowledged, value: values[i], used: e?.used ?? now })
      })
      return requests.map((r): Outcome<Decimal> => {
        const i = ids.indexOf(r.entry)
        return i === -1 ? { ok: false, error: notFound('customer', r.range.customerId) } : { ok: true, value: values[i] }
      })
    })
    all.set(key, (mine = { entries, reads, refreshing: false }))
  }
  return mine
}

/**
 * The customer's stored usage of the meter over `range` (its subscription's current period), at most
 * READ_CACHE_MS old and read after the event log's `acknowledged`-th acknowledgement.
 */
export function storedUsageOf(deps: Deps, scope: Scope, meterId: string, range: UsageRange, acknowledged: number): Promise<Decimal> {
  const now = deps.clock.now().getTime()
  const cache = meterCache(deps, scope, meterId)
  const id = `${range.customerId}\n${range.start.getTime()}\n${range.end.getTime()}`
  const hit = cache.entries.get(id)
  const request: Request = { entry: id, range, acknowledged }
  // A clock set back (test clocks) reads again rather than trust an entry from its future.
  if (!hit || hit.acknowledged < acknowledged || now < hit.at || now - hit.at >= READ_CACHE_MS) return cache.reads.submit('', request)
  hit.used = now
  // Near the end of its life: the meter's older entries are read again in the background; this answer does not wait.
  if (now - hit.at >= REFRESH_AT_MS && !cache.refreshing) {
    cache.refreshing = true
    const done = () => void (cache.refreshing = false)
    cache.reads.submit('', request).then(done, done)
  }
  return Promise.resolve(hit.value)
}
