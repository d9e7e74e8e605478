// The batch writer: drop repeats of an id within the batch, look up which ids are already stored (one
// query), resolve the new events against the meters, and store everything with one insert. The Kafka
// consumer and direct mode's log inserter do the first steps on the decode thread (chunks.ts) and insert
// with storeRows; writeBatch does them all on the calling thread (the reference chunks.test.ts checks
// the decode thread's rows against). Flush order and what a failure at each step means:
//   1. lookup   fails → nothing written; the batch is retried whole.
//   2. insert   fails → maybe written; the retry carries the same token, so ClickHouse drops what landed.
//      ClickHouse refuses the rows (a data error, raised while it reads them, before any table is
//      written) → the batch is split in halves until the refused events are alone; those are
//      recorded as rejected, the rest stored. A part's token is derived from its events, so a split
//      redone after a crash drops the parts that landed and stores the others.
//   3. (Kafka) commit fails → the batch is read again; step 1 now finds its ids and stores nothing twice.
import { ClickHouseError } from '@clickhouse/client'
import type { UsageEvent } from '../core/events.ts'
import type { MeterRules } from '../core/meters.ts'
import type { Scope } from '../core/scope.ts'
import type { Deps } from '../infra/deps.ts'
import { resolutionRules } from '../domains/catalog/meters/service.ts'
import { candidatesOf, freshOf, outcomeRows, outcomesOf, scopesOf, type BatchCounts, type BatchRows, type PreparedBatch, type Rejected } from './outcomes.ts'
import { retry, type RetryPolicy } from './retry.ts'
import { writeCommitted } from '../infra/read-cache.ts'
import { expiresText, insertBatch, keysOf, lookupOf, storedRows } from './store.ts'

/** An event ClickHouse refused to store, with the reason. */
export interface Refused {
  event: UsageEvent
  reason: string
}

export interface BatchResult extends BatchCounts {
  /** Events ClickHouse refused to store (counted in `rejected`): for the dead-letter topic. */
  refused: Refused[]
}

/** The meters of the scopes, by scopeKey; retried like the lookup. */
export const rulesFor = (deps: Deps, scopes: Scope[], policy: RetryPolicy): Promise<Map<string, MeterRules[]>> => retry(() => resolutionRules(deps, scopes), policy)

async function prepareBatch(deps: Deps, events: UsageEvent[], rejected: Rejected[], policy: RetryPolicy): Promise<PreparedBatch> {
  const { fresh, keys, duplicates } = await retry(async () => {
    const c = candidatesOf(events)
    return freshOf(c, keysOf(await storedRows(deps.ch, lookupOf(c.candidates))))
  }, policy)
  return outcomesOf(fresh, keys, duplicates, rejected, await rulesFor(deps, scopesOf(fresh), policy))
}

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
export async function storeRows(deps: Deps, rows: BatchRows, token: string, policy: RetryPolicy): Promise<Refused[]> {
  const refused = await insertOrSplit(deps, rows, 0, rows.size, token, policy)
  // Usage moved: real-time balances cached in this process are read again (infra/read-cache.ts).
  writeCommitted()
  return refused
}

/** The end of the dedup window of rows inserted now, as event_batches.expires_at. */
export const expiresNow = (deps: Deps): string => expiresText(new Date(deps.clock.now().getTime() + deps.config.dedupWindowDays * 86_400_000))

/** A refused event counts as rejected, not as stored. */
const refusedCounted = (result: PreparedBatch['result'], refused: Refused[]): BatchResult => ({
  ...result,
  stored: result.stored - refused.length,
  rejected: result.rejected + refused.length,
  refused,
})

/**
 * Writes one batch. The insert is retried with the very rows of the first attempt: reclassifying after a
 * partial landing would call its own events duplicates and lose their meter rows.
 */
export async function writeBatch(deps: Deps, events: UsageEvent[], rejected: Rejected[], token: string, policy: RetryPolicy): Promise<BatchResult> {
  const batch = await prepareBatch(deps, events, rejected, policy)
  const rows = outcomeRows(batch.outcomes, expiresNow(deps))
  const timer = deps.metrics.insertSeconds.startTimer({ path: 'direct' })
  const refused = await storeRows(deps, rows, token, policy)
  timer()
  const result = refusedCounted(batch.result, refused)
  observeBatch(deps, 'direct', rows.size, result)
  return result
}

/** A stored batch in the metrics: its rows, and what became of its events. */
export function observeBatch(deps: Deps, path: 'direct' | 'kafka', rows: number, result: Pick<BatchCounts, 'stored' | 'duplicates' | 'rejected'>): void {
  deps.metrics.batchRows.observe({ path }, rows)
  for (const outcome of ['stored', 'duplicates', 'rejected'] as const) if (result[outcome] > 0) deps.metrics.batchEvents.inc({ path, outcome }, result[outcome])
}
