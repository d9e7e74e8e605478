// The dedup filter: a first check of a chunk's ids against a Set of the hashes of every stored id of the dedup window,
// so the exact lookup in event_ids reads only the ids found there (duplicates, and now and then a collision) instead
// of scanning the window's ids for every chunk (docs/usage.md, "What a lookup costs"). ClickHouse stays the source of
// truth: a generation is a Set table event_id_seen_<g> fed by a view on event_batches (the insert that writes
// event_ids) and filled from event_ids; its row in event_id_seen_generations (sql/clickhouse/0007_event_id_seen.sql)
// marks it filled. A Set never shrinks, so a new generation replaces it every period (core/dedup-generations.ts).
// A miss must mean "not stored": every id of event_ids must reach the Set through the fill or through the view. An
// insert that began before the view existed may not go through it, so the fill starts only after every such insert
// has ended: on chDB (one process holds the data) the inserts this process had started; on a server, where other
// processes insert too, every insert into event_batches the server lists as begun before the view (system.processes).
// Without a generation this process may trust (none filled, one not yet topped up, its table gone), lookups are the
// full lookup of event_ids, so correctness never depends on the filter.
import { setTimeout as sleep } from 'node:timers/promises'
import { planGenerations, topUpFrom, type GenerationPlan } from '../core/dedup-generations.ts'
import type { ClickHouse } from '../infra/clickhouse.ts'
import { chDateTime, fromChDateTime } from '../infra/ch-literals.ts'
import type { Scope } from '../core/scope.ts'
import type { Deps } from '../infra/deps.ts'
import { storedRows, type KeyLookup } from './store.ts'

/** How long a process keeps the generations it read before reading them again. */
const CACHE_MS = 10_000
/** How often a fill on a server asks whether the inserts begun before its view have ended. */
const INSERTS_POLL_MS = 500
/** Ids a fill statement hashes at most (about): a long fill logs its progress, and a server statement stays within its timeout. */
const FILL_SLICE_IDS = 20_000_000

const setTable = (g: number): string => `event_id_seen_${g}`
const viewOf = (g: number): string => `event_id_seen_${g}_from_batches`

export interface DedupFilter {
  /** The stored keys of a lookup of a batch of `scopes`: the filter first when a trusted generation is filled, else the full lookup. */
  stored(lookup: KeyLookup, scopes: Scope[]): Promise<[string, string, string][]>
  /**
   * Between batches: starts what the generations need (a top-up, a fill, drops) in the background, once at a time.
   * `inFlight` resolves when the inserts this process has started by then have ended. Resolves when that work ends.
   */
  maintain(inFlight: () => Promise<unknown>): Promise<void>
  /** Ends the background work: a fill stops between its statements (the next start finishes it). */
  stop(): Promise<void>
}

interface State {
  at: number
  plan: GenerationPlan
  filledAt?: Date
}

async function readGenerations(ch: ClickHouse, now: Date): Promise<State> {
  const [marks, tables] = await Promise.all([
    ch.reader.query({ query: 'SELECT generation, min(filled_at) AS filled_at FROM event_id_seen_generations GROUP BY generation', format: 'JSONEachRow' }).then((rs) => rs.json<{ generation: number; filled_at: string }>()),
    ch.reader
      .query({ query: "SELECT name FROM system.tables WHERE database = currentDatabase() AND match(name, '^event_id_seen_[0-9]+(_from_batches)?$')", format: 'JSONEachRow' })
      .then((rs) => rs.json<{ name: string }>()),
  ])
  const marked = new Map(marks.map((m) => [Number(m.generation), fromChDateTime(m.filled_at)]))
  const numbers = (views: boolean) => tables.filter(({ name }) => name.endsWith('_from_batches') === views).map(({ name }) => Number(/\d+/.exec(name)![0]))
  const plan = planGenerations({ marked, sets: numbers(false), views: numbers(true) }, now)
  return { at: now.getTime(), plan, filledAt: plan.use === undefined ? undefined : marked.get(plan.use) }
}

export function dedupFilter(deps: Pick<Deps, 'ch' | 'logger' | 'clock'>): DedupFilter {
  const { ch, logger } = deps
  let state: State | undefined
  let reading: Promise<State> | undefined
  let task: Promise<void> | undefined
  /** Aborted by stop(): maintenance ends, the fill's wait for other processes' inserts (on a server) at once. */
  const stopped = new AbortController()
  /** After a failure, maintenance waits this long rather than trying again at every batch. */
  let retryAt = 0
  /** Generations this process filled or topped up itself: the only ones its lookups use. */
  const trusted = new Set<number>()

  const generations = async (): Promise<State> => {
    // Aged by the process's clock, as the plan is made by it.
    if (state && deps.clock.now().getTime() - state.at < CACHE_MS) return state
    reading ??= readGenerations(ch, deps.clock.now()).finally(() => (reading = undefined))
    state = await reading
    return state
  }

  /** Hashes of event_ids' ids into a generation, in slices of about FILL_SLICE_IDS ids, from rows expiring after `from`. */
  const fill = async (g: number, from: Date): Promise<void> => {
    const at = `toDateTime('${chDateTime(from).slice(0, 19)}', 'UTC')`
    const after = `expires_at > ${at}`
    // Slices of the rows to read, not of the table: each slice scans the table's expires_at, and a restart's top-up
    // reads only the last day's ids. Counted without a scan, from the parts' TTL ranges: the rows of every part that
    // may hold such an id (or has no range).
    const rs = await ch.reader.query({
      query: `SELECT toString(sum(rows)) AS n FROM system.parts WHERE database = currentDatabase() AND table = 'event_ids' AND active
        AND (delete_ttl_info_max > ${at} OR toUnixTimestamp(delete_ttl_info_max) = 0)`,
      format: 'JSONEachRow',
    })
    const slices = Math.max(1, Math.ceil(Number((await rs.json<{ n: string }>())[0].n) / FILL_SLICE_IDS))
    for (let slice = 0; slice < slices; slice++) {
      stopped.signal.throwIfAborted()
      await ch.commandApart(`INSERT INTO ${setTable(g)} SELECT sipHash64(tenant_id, environment_id, event_id) FROM event_ids
        WHERE ${after}${slices > 1 ? ` AND id_hash % ${slices} = ${slice}` : ''}`)
      if (slices > 1) logger.info({ generation: g, slice: slice + 1, of: slices }, 'dedup filter: filling a generation from event_ids')
    }
  }

  /**
   * On a server: resolves once no insert into event_batches that the server began before now is running. An insert's
   * views are fixed when it begins, so those begun after a view exists go through it; the server's own clock and
   * list decide, whatever the inserts' durations and whichever processes sent them.
   */
  const insertsBegunBefore = async (): Promise<void> => {
    const at = (await (await ch.reader.query({ query: 'SELECT toString(toUnixTimestamp64Micro(now64(6))) AS t', format: 'JSONEachRow' })).json<{ t: string }>())[0].t
    for (;;) {
      stopped.signal.throwIfAborted()
      const rs = await ch.reader.query({
        query: `SELECT count() AS n FROM system.processes
          WHERE query_kind = 'Insert' AND current_database = currentDatabase() AND positionCaseInsensitive(query, 'event_batches') > 0
            AND toUnixTimestamp64Micro(now64(6)) - toInt64(elapsed * 1000000) <= ${BigInt(at)}`,
        format: 'JSONEachRow',
      })
      if (Number((await rs.json<{ n: string }>())[0].n) === 0) return
      await sleep(INSERTS_POLL_MS, undefined, { signal: stopped.signal })
    }
  }

  const run = async (plan: GenerationPlan, filledAt: Date | undefined, inFlight: () => Promise<unknown>): Promise<void> => {
    if (plan.fill !== undefined) {
      const g = plan.fill
      logger.info({ generation: g }, 'dedup filter: a new generation')
      await ch.client.command({ query: `CREATE TABLE IF NOT EXISTS ${setTable(g)} (h UInt64) ENGINE = Set` })
      await ch.client.command({
        query: `CREATE MATERIALIZED VIEW IF NOT EXISTS ${viewOf(g)} TO ${setTable(g)} AS
          SELECT sipHash64(tenant_id, environment_id, id) AS h FROM event_batches WHERE kind = 'stored'`,
      })
      // Inserts begun before the view may not go through it: they end before the fill reads event_ids.
      await Promise.all([inFlight().catch(() => {}), ch.kind === 'server' ? insertsBegunBefore() : undefined])
      const at = deps.clock.now()
      await fill(g, at)
      await ch.client.insert({ table: 'event_id_seen_generations', values: [{ generation: g, filled_at: chDateTime(at) }], format: 'JSONEachRow' })
      trusted.add(g)
      logger.info({ generation: g }, 'dedup filter: generation filled')
    } else if (plan.use !== undefined && !trusted.has(plan.use) && filledAt) {
      // Filled before this process started (or by another one): what a crash may have kept from it is added again.
      await fill(plan.use, topUpFrom(filledAt))
      trusted.add(plan.use)
      logger.info({ generation: plan.use }, 'dedup filter: generation topped up')
    }
    for (const g of plan.drop) {
      // The view first: an insert into event_batches fails while a view's table is missing.
      await ch.client.command({ query: `DROP VIEW IF EXISTS ${viewOf(g)}` })
      await ch.client.command({ query: `DROP TABLE IF EXISTS ${setTable(g)}` })
      trusted.delete(g)
      logger.info({ generation: g }, 'dedup filter: old generation dropped')
    }
    state = undefined
  }

  return {
    async stored(lookup, scopes) {
      const use = await generations().then(
        ({ plan }) => (plan.use !== undefined && trusted.has(plan.use) ? plan.use : undefined),
        () => undefined,
      )
      if (use === undefined) return storedRows(ch, lookup)
      try {
        return await storedRows(ch, lookup, { table: setTable(use), scopes })
      } catch (err) {
        // Its table dropped meanwhile, or ClickHouse failing: read the generations again, and the full lookup now.
        logger.warn({ err, generation: use }, 'dedup filter not read; looking ids up in event_ids')
        state = undefined
        trusted.delete(use)
        return storedRows(ch, lookup)
      }
    },
    maintain(inFlight) {
      if (task || stopped.signal.aborted || Date.now() < retryAt) return task ?? Promise.resolve()
      task = generations()
        .then(({ plan, filledAt }) => {
          const due = plan.fill !== undefined || plan.drop.length > 0 || (plan.use !== undefined && !trusted.has(plan.use))
          return due ? run(plan, filledAt, inFlight) : undefined
        })
        .catch((err: unknown) => {
          state = undefined
          retryAt = Date.now() + CACHE_MS
          if (!stopped.signal.aborted) logger.warn({ err }, 'dedup filter maintenance failed; lookups read event_ids until it succeeds')
        })
        .finally(() => (task = undefined))
      return task
    },
    async stop() {
      stopped.abort()
      await task
    },
  }
}
