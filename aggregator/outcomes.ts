// The pure steps of the batch writer, run where the events are (the writer's thread in direct mode, the
// consumer's decode thread in Kafka mode): which events are candidates (the first of their id in the batch,
// none in flight), which of them are fresh once the lookup said which are stored, their meter rows, and
// the batch as insert text that a refused row splits.
import { createHash } from 'node:crypto'
import type { UsageEvent } from '../core/events.ts'
import { resolveEvent, type MeterRules } from '../core/meters.ts'
import type { Scope } from '../core/scope.ts'
import { scopeKey } from '../domains/catalog/meters/service.ts'
import { batchLine, EventIds, keyOf, sameCopy, type DropRow, type EventKey, type Outcome, type StoredKeys } from './store.ts'

export interface Rejected {
  event: Pick<UsageEvent, 'id' | 'tenantId' | 'environmentId'> & Partial<UsageEvent>
  reason: string
}

/** A batch's events before the lookup: the first of each id not in `pending` (with their keys), and the repeats. */
export interface Candidates {
  candidates: UsageEvent[]
  keys: EventIds
  duplicates: UsageEvent[]
}

export interface BatchCounts {
  stored: number
  duplicates: number
  rejected: number
  /** Meter rows not written because the event lacked a usable value: (meter, reason) counts. */
  skippedValues: number
  /** Copies read again of records already stored or recorded (after a crash or a rebalance): not a client's resends. */
  replayed?: number
}

/** A batch classified and resolved, ready to insert. */
export interface PreparedBatch {
  outcomes: Outcome[]
  /** Keys of the events it stores: a batch prepared while this one is in flight treats them as stored. */
  keys: EventIds
  result: BatchCounts
}

// A chunk's events mostly share their scope: its key is built when the scope changes, not for each event.
const sameScope = (a: UsageEvent | undefined, b: UsageEvent): boolean => a?.tenantId === b.tenantId && a.environmentId === b.environmentId

/** The scopes of events, each once: the meters to resolve them against are read by scope. */
export function scopesOf(events: UsageEvent[]): Scope[] {
  const scopes = new Map<string, Scope>()
  let last: UsageEvent | undefined
  for (const e of events) {
    if (sameScope(last, e)) continue
    last = e
    scopes.set(scopeKey(e.tenantId, e.environmentId), { tenantId: e.tenantId, environmentId: e.environmentId })
  }
  return [...scopes.values()]
}

/** Repeats of an id earlier in the batch or in `pending` (batches whose inserts are in flight) are duplicates. */
export function candidatesOf(events: UsageEvent[], pending: readonly EventIds[] = []): Candidates {
  const keys = new EventIds()
  const candidates: UsageEvent[] = []
  const duplicates: UsageEvent[] = []
  for (const e of events) {
    if (!inAny(pending, e) && keys.add(e)) candidates.push(e)
    else duplicates.push(e)
  }
  return { candidates, keys, duplicates }
}

/** Whether any of the sets holds the key (a loop, not a closure per event). */
function inAny(sets: readonly EventIds[], k: UsageEvent): boolean {
  for (const ids of sets) if (ids.has(k)) return true
  return false
}

/**
 * The candidates the lookup did not find stored; the others join the duplicates, but for copies read again (their
 * stored copy is the same copy, sameCopy: read again after a crash or a rebalance, or written twice by a producer's retry), which are
 * dropped without a trace: the client sent them once. Duplicates already recorded by an earlier read of the same
 * records (`recorded`, by key, duplicate and receipt instant) are dropped too, so the report counts what clients sent.
 */
export function freshOf({ candidates, keys, duplicates }: Candidates, { keys: stored, copies }: StoredKeys, recorded?: RecordedDrops): Classified {
  if (stored.size === 0) return { fresh: candidates, keys, duplicates, replayed: 0 }
  const fresh: UsageEvent[] = []
  let replayed = 0
  for (const e of candidates) {
    if (!stored.has(e)) fresh.push(e)
    else {
      keys.delete(e)
      const copy = copies.get(keyOf(e))
      if (copy && sameCopy(copy, e)) replayed++
      else duplicates.push(e)
    }
  }
  if (recorded === undefined || recorded.size === 0) return { fresh, keys, duplicates, replayed }
  const unrecorded = duplicates.filter((e) => !recorded.has(e, 'duplicate'))
  return { fresh, keys, duplicates: unrecorded, replayed: replayed + duplicates.length - unrecorded.length }
}

/** A chunk's events classified: fresh ones to store, duplicates to record, and how many were copies read again. */
export interface Classified {
  fresh: UsageEvent[]
  keys: EventIds
  duplicates: UsageEvent[]
  replayed: number
}

/**
 * The drops an earlier read recorded, by key, kind and copy: by receipt where the row has one, else by receipt instant
 * (rows from before receipts), so that a copy sent again in the same millisecond is not taken for one recorded.
 */
export class RecordedDrops {
  private readonly known = new Set<string>()

  constructor(rows: DropRow[]) {
    for (const [tenantId, environmentId, id, kind, received, receipt] of rows) {
      const k = `${keyOf({ tenantId, environmentId, id })}\u0000${kind}`
      this.known.add(receipt === '0' ? `${k}\u0000t${received}` : `${k}\u0000r${receipt}`)
    }
  }

  get size(): number {
    return this.known.size
  }

  /** Whether this copy of the event was recorded as a drop of this kind. */
  has(e: EventKey & Partial<Pick<UsageEvent, 'receivedAt' | 'receipt'>>, kind: string): boolean {
    const k = `${keyOf(e)}\u0000${kind}`
    return (e.receipt !== undefined && this.known.has(`${k}\u0000r${e.receipt}`)) || this.known.has(`${k}\u0000t${e.receivedAt?.getTime() ?? 0}`)
  }
}

/** Fresh events with their meter rows (rules by scopeKey), then the duplicates and the rejected, as outcomes. */
export function outcomesOf(fresh: UsageEvent[], keys: EventIds, duplicates: UsageEvent[], rejected: Rejected[], rules: Map<string, MeterRules[]>): PreparedBatch {
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

/** A row ClickHouse refused, alone: its kind and id, and for an event meant to be stored, the event and the row recording why. */
export interface RefusedRow {
  kind: Outcome['kind']
  id: string
  /** `drops`: rows recording why, tried in order: with the customer and event name (the reconciliation counts by them), then the id and instants alone. */
  stored?: { event: UsageEvent; drops: [string, string] }
}

/** A batch's rows as insert text, and what splitting them around a refused row needs. */
export interface BatchRows {
  size: number
  /** Rows [from, to) as insert text. */
  text(from: number, to: number): string | Uint8Array
  /** The token of rows [from, to) of a batch whose token is `token`: derived from their events, so a split redone after a crash finds it again. */
  partToken(token: string, from: number, to: number): string | Promise<string>
  refused(i: number, reason: string): RefusedRow | Promise<RefusedRow>
}

export function partToken(token: string, outcomes: Outcome[]): string {
  const h = createHash('sha256')
  for (const o of outcomes) h.update(`${o.kind}\u0000${keyOf(o.event)}\u0001`)
  return `${token}/${h.digest('hex').slice(0, 32)}`
}

export function refusedRow(o: Outcome, reason: string, expiresAt: string): RefusedRow {
  // Only an event meant to be stored is lost: a refused duplicate's original is stored, and a refused
  // rejection is already on the dead-letter topic.
  if (o.kind !== 'stored') return { kind: o.kind, id: o.event.id }
  // The lookup learns why from a row of the id and instants alone; the reconciliation needs the customer and name too,
  // which may be what ClickHouse refused.
  const { id, tenantId, environmentId, timestamp, receivedAt, externalCustomerId, eventName } = o.event
  const drop = (event: Rejected['event']) => batchLine({ kind: 'rejected', event, reason }, expiresAt)
  return { kind: o.kind, id, stored: { event: o.event, drops: [drop({ id, tenantId, environmentId, timestamp, receivedAt, externalCustomerId, eventName }), drop({ id, tenantId, environmentId, timestamp, receivedAt })] } }
}
