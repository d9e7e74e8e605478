// Which generation of the dedup filter lookups use, and when to fill a new one or drop old ones (aggregator/dedup-filter.ts
// does it). Pure: the generations ClickHouse holds and the time are passed in.
import { MIN_DEDUP_WINDOW_DAYS } from './config.ts'
import { DAY_MS } from './periods.ts'

/**
 * How often a generation is replaced. A Set never shrinks while event_ids expires ids by TTL, so a generation holds
 * the window's ids plus those of up to one period: a day is ~3% more memory on a 35-day window, and its fill (a
 * read of event_ids) costs a few seconds of CPU a day per 10M ids.
 */
const ROTATION_PERIOD_MS = DAY_MS
/** A replaced generation is dropped this long after its successor was marked: longer than any process caches which one is in use. */
const DROP_AFTER_MS = 10 * 60_000

export interface Generations {
  /** When each generation was marked filled (the first mark when several processes filled it). */
  marked: Map<number, Date>
  /** Generations whose Set table exists, and those whose view exists. */
  sets: number[]
  views: number[]
}

export interface GenerationPlan {
  /** The generation lookups may use: the newest marked one with its table and view. */
  use?: number
  /** A generation to create (or finish) and fill: none is usable, or the one in use is a period old. */
  fill?: number
  /** Generations to drop, view first: those older than the one in use, once it has been marked DROP_AFTER_MS. */
  drop: number[]
}

export function planGenerations({ marked, sets, views }: Generations, now: Date, periodMs = ROTATION_PERIOD_MS, dropAfterMs = DROP_AFTER_MS): GenerationPlan {
  const usable = [...marked.keys()].filter((g) => sets.includes(g) && views.includes(g))
  const use = usable.length === 0 ? undefined : Math.max(...usable)
  const age = use === undefined ? Number.POSITIVE_INFINITY : now.getTime() - marked.get(use)!.getTime()
  const known = [...marked.keys(), ...sets, ...views]
  const newest = known.length === 0 ? 0 : Math.max(...known)
  // An unmarked newest generation is a fill that did not finish (or runs in another process): filled again, not skipped.
  const unfinished = newest > (use ?? 0) && !marked.has(newest)
  const fill = age >= periodMs ? (unfinished ? newest : newest + 1) : undefined
  const drop = use !== undefined && age >= dropAfterMs ? [...new Set([...sets, ...views])].filter((g) => g < use).sort((a, b) => a - b) : []
  return { use, fill, drop }
}

/**
 * Where a process's top-up of a generation filled before it started begins, in event_ids.expires_at: rows written
 * since the fill expire at least the minimum window after it (a day earlier for clocks and inserts prepared before
 * it). Their hashes went through the view, but an insert cut off by a crash may have stored its event_ids part and
 * not its Set file.
 */
export const topUpFrom = (filledAt: Date): Date => new Date(filledAt.getTime() + (MIN_DEDUP_WINDOW_DAYS - 1) * DAY_MS)
