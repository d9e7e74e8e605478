// The batch writer, shared by direct mode and the Kafka consumer: drop repeats of an id within the
// batch, look up which ids are already stored (one query), resolve the new events against the meters,
// and store everything with one insert. Flush order and what a failure at each step means:
//   1. lookup   fails → nothing written; the batch is retried whole.
//   2. insert   fails → maybe written; the retry carries the same token, so ClickHouse drops what landed.
//      ClickHouse refuses the rows (a data error, raised while it reads them, before any table is
//      written) → the batch is split in halves until the refused events are alone; those are
//      recorded as rejected, the rest stored. A part's token is derived from its events, so a split
//      redone after a crash drops the parts that landed and stores the others.
//   3. (Kafka) commit fails → the batch is read again; step 1 now finds its ids and stores nothing twice.
import { createHash } from 'node:crypto'
import { ClickHouseError } from '@clickhouse/client'
import type { UsageEvent } from '../core/events.ts'
import { resolveEvent, type MeterRules } from '../core/meters.ts'
import type { Deps } from '../infra/deps.ts'
import { resolutionRules, scopeKey } from '../api/meters/service.ts'
import { retry, type RetryPolicy } from './retry.ts'
import { EventIds, insertBatch, keyOf, storedKeys, type Outcome } from './store.ts'

export interface Rejected {
  event: Pick<UsageEvent, 'id' | 'tenantId' | 'environmentId'> & Partial<UsageEvent>
  reason: string
}

/** An event ClickHouse refused to store, with the reason. */
export interface Refused {
  event: UsageEvent
  reason: string
}

export interface BatchResult {
  stored: number
  duplicates: number
  rejected: number
  /** Meter rows not written because the event lacked a usable value: (meter, reason) counts. */
  skippedValues: number
  /** Events ClickHouse refused to store (counted in `rejected`): for the dead-letter topic. */
  refused: Refused[]
}

/** A batch classified and resolved, ready to insert. */
export interface PreparedBatch {
  outcomes: Outcome[]
  /** Keys of the events it stores: a batch prepared while this one is in flight treats them as stored. */
  keys: EventIds
  result: Omit<BatchResult, 'refused'>
}

// A chunk's events mostly share their scope: its key is built when the scope changes, not for each event.
const sameScope = (a: UsageEvent | undefined, b: UsageEvent): boolean => a?.tenantId === b.tenantId && a.environmentId === b.environmentId

async function rulesFor(deps: Deps, events: UsageEvent[]): Promise<Map<string, MeterRules[]>> {
  const scopes = new Map<string, { tenantId: string; environmentId: string }>()
  let last: UsageEvent | undefined
  for (const e of events) {
    if (sameScope(last, e)) continue
    last = e
    scopes.set(scopeKey(e.tenantId, e.environmentId), { tenantId: e.tenantId, environmentId: e.environmentId })
  }
  return resolutionRules(deps, [...scopes.values()])
}

/**
 * Splits a batch into what to store (with the events' keys) and what repeats an id stored before, earlier
 * in the batch, or in `pending` (a batch whose insert is still in flight).
 */
async function classify(deps: Deps, events: UsageEvent[], pending: EventIds): Promise<{ fresh: UsageEvent[]; keys: EventIds; duplicates: UsageEvent[] }> {
  const keys = new EventIds()
  const candidates: UsageEvent[] = []
  const duplicates: UsageEvent[] = []
  for (const e of events) {
    if (keys.has(e) || pending.has(e)) duplicates.push(e)
    else {
      keys.add(e)
      candidates.push(e)
    }
  }
  const stored = await storedKeys(deps.ch, candidates)
  if (stored.size === 0) return { fresh: candidates, keys, duplicates }
  const fresh: UsageEvent[] = []
  for (const e of candidates) {
    if (!stored.has(e)) fresh.push(e)
    else {
      keys.delete(e)
      duplicates.push(e)
    }
  }
  return { fresh, keys, duplicates }
}

export async function prepareBatch(deps: Deps, events: UsageEvent[], rejected: Rejected[], policy: RetryPolicy, pending: EventIds = new EventIds()): Promise<PreparedBatch> {
  const { fresh, keys, duplicates } = await retry(() => classify(deps, events, pending), policy)
  const rules = await retry(() => rulesFor(deps, fresh), policy)
  let skippedValues = 0
  let scope: UsageEvent | undefined
  let meters: MeterRules[] = []
  const outcomes: Outcome[] = fresh.map((event) => {
    if (!sameScope(scope, event)) {
      scope = event
      meters = rules.get(scopeKey(event.tenantId, event.environmentId)) ?? []
    }
    const { rows, skipped } = resolveEvent(meters, event)
    skippedValues += skipped.length
    return { kind: 'stored', event, rows }
  })
  for (const event of duplicates) outcomes.push({ kind: 'duplicate', event, reason: 'an event with this id is already stored' })
  for (const r of rejected) outcomes.push({ kind: 'rejected', event: r.event, reason: r.reason })
  return { outcomes, keys, result: { stored: fresh.length, duplicates: duplicates.length, rejected: rejected.length, skippedValues } }
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

export const isDataError = (err: unknown): err is ClickHouseError => err instanceof ClickHouseError && DATA_ERRORS.has(String(err.code))

/** The first sentence of ClickHouse's message (the rest repeats the row), with its error name. */
const refusal = (err: ClickHouseError): string => `ClickHouse refused the event: ${err.message.split(/[:\n]/)[0].trim()} (${err.type ?? `code ${err.code}`})`.slice(0, 500)

const partToken = (token: string, outcomes: Outcome[]): string => {
  const h = createHash('sha256')
  for (const o of outcomes) h.update(`${o.kind}\u0000${keyOf(o.event)}\u0001`)
  return `${token}/${h.digest('hex').slice(0, 32)}`
}

async function insertOrSplit(deps: Deps, outcomes: Outcome[], token: string, dedupUntil: Date, policy: RetryPolicy): Promise<Refused[]> {
  try {
    await retry(() => insertBatch(deps.ch, outcomes, token, dedupUntil), policy, isDataError)
    return []
  } catch (err) {
    if (!isDataError(err)) throw err
    if (outcomes.length > 1) {
      const half = outcomes.length >> 1
      const refused: Refused[] = []
      for (const part of [outcomes.slice(0, half), outcomes.slice(half)]) refused.push(...(await insertOrSplit(deps, part, partToken(token, part), dedupUntil, policy)))
      return refused
    }
    const [o] = outcomes
    const reason = refusal(err)
    deps.logger.warn({ event_id: o.event.id, kind: o.kind, reason }, 'ClickHouse refused an event')
    // Only an event meant to be stored is lost here: a refused duplicate's original is stored, and a
    // refused rejection is already on the dead-letter topic.
    if (o.kind !== 'stored') return []
    // The lookup learns why from a row of the id and instants alone; if ClickHouse refuses even that (the
    // id itself is unreadable), the dead-letter topic is the only record.
    const { id, tenantId, environmentId, timestamp, receivedAt } = o.event
    const drop: Outcome = { kind: 'rejected', event: { id, tenantId, environmentId, timestamp, receivedAt }, reason }
    await retry(() => insertBatch(deps.ch, [drop], `${token}/rejected`, dedupUntil), policy, isDataError).catch((e: unknown) => {
      if (!isDataError(e)) throw e
    })
    return [{ event: o.event, reason }]
  }
}

/** Inserts a prepared batch; `token` names it so that a retry of it is deduplicated by ClickHouse. Returns what ClickHouse refused. */
export async function storeBatch(deps: Deps, batch: PreparedBatch, token: string, policy: RetryPolicy): Promise<Refused[]> {
  const dedupUntil = new Date(deps.clock.now().getTime() + deps.config.dedupWindowDays * 86_400_000)
  return insertOrSplit(deps, batch.outcomes, token, dedupUntil, policy)
}

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
  const refused = await storeBatch(deps, batch, token, policy)
  return refusedCounted(batch.result, refused)
}
