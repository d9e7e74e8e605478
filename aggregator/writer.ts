// The batch writer: a chunk's ids looked up (which are already stored: one query), its events resolved against
// the meters, and everything stored with one insert. The events stay on the decode thread (chunks.ts), which
// classifies them and writes the insert text; the Kafka consumer and direct mode's log inserter both store a chunk
// through prepareChunk and storeChunk. Flush order and what a failure at each step means:
//   1. lookup   fails → nothing written; the chunk is retried whole.
//   2. insert   fails → maybe written; the retry carries the same token, so ClickHouse drops what landed.
//      ClickHouse refuses the rows (a data error, raised while it reads them, before any table is
//      written) → the chunk is split in halves until the refused events are alone; those are
//      recorded as rejected, the rest stored. A part's token is derived from its events, so a split
//      redone after a crash drops the parts that landed and stores the others.
//   3. commit (Kafka offsets, the event log's checkpoint) fails → the chunk is read again; step 1 now finds its ids
//      and stores nothing twice.
import { ClickHouseError } from '@clickhouse/client'
import type { UsageEvent } from '../core/events.ts'
import type { Scope } from '../core/scope.ts'
import type { Deps } from '../infra/deps.ts'
import { resolutionRules } from '../domains/catalog/meters/service.ts'
import { chunkRows, type ChunkCalls, type ChunkRows } from './chunks.ts'
import type { PartitionLookup } from './dedup-filter.ts'
import type { BatchCounts, BatchRows } from './outcomes.ts'
import { retry, type RetryPolicy } from './retry.ts'
import { writeCommitted } from '../infra/read-cache.ts'
import { expiresText, insertBatch, recordedDrops, storedRows } from './store.ts'

/** An event ClickHouse refused to store, with the reason. */
export interface Refused {
  event: UsageEvent
  reason: string
}

/** What became of a chunk's events, a refused one counted as rejected; and the refused events, for the dead-letter topic. */
export interface BatchResult extends BatchCounts {
  refused: Refused[]
}

/** The meters of the scopes, by scopeKey; retried like the lookup. */
const rulesFor = (deps: Deps, scopes: Scope[], policy: RetryPolicy) => retry(() => resolutionRules(deps, scopes), policy)

/**
 * ClickHouse error codes for rows it cannot read (CANNOT_PARSE_TEXT, _ESCAPE_SEQUENCE, _QUOTED_STRING,
 * _INPUT_ASSERTION_FAILED, _DATE, _DATETIME, TYPE_MISMATCH, ARGUMENT_OUT_OF_BOUND, CANNOT_CONVERT_TYPE,
 * CANNOT_PARSE_NUMBER, INCORRECT_DATA, CANNOT_READ_ARRAY_FROM_TEXT, TOO_LARGE_STRING_SIZE,
 * SIZES_OF_ARRAYS_DONT_MATCH, VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE): raised while parsing the insert, so
 * nothing of it was written, and the same rows fail every time. Anything else (connection, timeout,
 * memory, a table missing) may pass on a retry.
 */
const DATA_ERRORS = new Set(['6', '25', '26', '27', '38', '41', '53', '69', '70', '72', '117', '130', '131', '190', '321'])

const isDataError = (err: unknown): err is ClickHouseError => err instanceof ClickHouseError && DATA_ERRORS.has(String(err.code))

/** The first sentence of ClickHouse's message (the rest repeats the row), with its error name. */
const refusal = (err: ClickHouseError): string => `ClickHouse refused the event: ${err.message.split(/[:\n]/)[0].trim()} (${err.type ?? `code ${err.code}`})`.slice(0, 500)

async function insertOrSplit(deps: Deps, rows: BatchRows, from: number, to: number, token: string, policy: RetryPolicy): Promise<Refused[]> {
  try {
    await retry(() => insertBatch(deps.ch, rows.text(from, to), token), policy, isDataError)
    return []
  } catch (err) {
    if (!isDataError(err)) throw err
    if (to - from > 1) {
      const half = from + ((to - from) >> 1)
      const refused: Refused[] = []
      for (const [a, b] of [[from, half], [half, to]]) refused.push(...(await insertOrSplit(deps, rows, a, b, await rows.partToken(token, a, b), policy)))
      return refused
    }
    const reason = refusal(err)
    const row = await rows.refused(from, reason)
    deps.logger.warn({ event_id: row.id, kind: row.kind, reason }, 'ClickHouse refused an event')
    if (!row.stored) return []
    // The fuller row first, then the row of the id and instants; if ClickHouse refuses even that (the id itself is
    // unreadable), the dead-letter topic is the only record.
    for (const drop of row.stored.drops) {
      const stored = await retry(() => insertBatch(deps.ch, drop, `${token}/rejected`), policy, isDataError).then(
        () => true,
        (e: unknown) => {
          if (!isDataError(e)) throw e
          return false
        },
      )
      if (stored) break
    }
    return [{ event: row.stored.event, reason }]
  }
}

/** Inserts a batch's rows; `token` names it so that a retry of it is deduplicated by ClickHouse. Returns what ClickHouse refused. */
async function storeRows(deps: Deps, rows: BatchRows, token: string, policy: RetryPolicy): Promise<Refused[]> {
  const refused = await insertOrSplit(deps, rows, 0, rows.size, token, policy)
  // Usage moved: real-time balances cached in this process are read again (infra/read-cache.ts).
  writeCommitted()
  return refused
}

/** The end of the dedup window of rows inserted now, as event_batches.expires_at. */
const expiresNow = (deps: Deps): string => expiresText(new Date(deps.clock.now().getTime() + deps.config.dedupWindowDays * 86_400_000))

/**
 * A chunk's ids looked up (those of the `pending` chunks, in flight, count as stored) and its events resolved, on the
 * decode thread; the lookup and the meters are read here, where chDB and Postgres are. The lookup goes through the
 * partition's dedup filter; without one it is the full lookup. A chunk with drops to record (duplicates, rejections)
 * first asks which of them an earlier read of the same records recorded, and is prepared without those: a chunk read
 * again after a crash or a rebalance may hold them without any stored copy of its own to show it (a client's resends
 * read by a member that died, or cut into other chunks), so every such chunk asks (by the primary key of event_drops).
 */
export interface PrepareOptions {
  /** Chunks in flight: their ids count as stored. */
  pending?: number[]
  /** The partition's dedup filter; without one the full lookup. */
  filter?: PartitionLookup
}

export async function prepareChunk(deps: Deps, calls: ChunkCalls, chunk: { id: number; scopes: Scope[] }, policy: RetryPolicy, { pending = [], filter }: PrepareOptions = {}): Promise<ChunkRows> {
  const lookup = await calls.candidates(chunk.id, pending)
  const stored = await retry(() => (filter ? filter.stored(lookup) : storedRows(deps.ch, lookup)), policy)
  const rules = await rulesFor(deps, chunk.scopes, policy)
  const expiresAt = expiresNow(deps)
  const drops = await calls.dropLookup(chunk.id, stored)
  const recorded = drops && (await retry(() => recordedDrops(deps.ch, drops), policy))
  return calls.prepare(chunk.id, stored, rules, expiresAt, recorded)
}

/**
 * Inserts a prepared chunk under `token` and counts it in the metrics, a refused event as rejected. The insert is
 * retried with the very rows of the first attempt: reclassifying after a partial landing would call its own events
 * duplicates and lose their meter rows.
 */
export async function storeChunk(deps: Deps, calls: ChunkCalls, id: number, ready: ChunkRows, token: string, path: 'direct' | 'kafka', policy: RetryPolicy): Promise<BatchResult> {
  const rows = chunkRows(calls, id, ready)
  const timer = deps.metrics.insertSeconds.startTimer({ path })
  const refused = await storeRows(deps, rows, token, policy)
  timer()
  const result = { ...ready.result, stored: ready.result.stored - refused.length, rejected: ready.result.rejected + refused.length, refused }
  deps.metrics.batchRows.observe({ path }, rows.size)
  for (const outcome of ['stored', 'duplicates', 'rejected', 'replayed'] as const) if ((result[outcome] ?? 0) > 0) deps.metrics.batchEvents.inc({ path, outcome }, result[outcome])
  return result
}
