// Usage corrections (docs/usage.md, "Corrections"): what one cancel or amend item does to the chain of corrections an
// event already has, and the digest that makes a resent item change nothing. Pure: the stores read and write the rows.
import { createHash } from 'node:crypto'
import type { AggregationType } from './meters.ts'

export type CorrectionAction = 'cancel' | 'amend'

/** One item of POST /v1/events/corrections, as validated by the route. */
export interface CorrectionItem {
  event_id: string
  action: CorrectionAction
  reason?: string
  /** amend: the full corrected event. */
  event?: Record<string, unknown>
}

/** What the chain needs of a recorded correction. */
export interface ChainLink {
  id: string
  sequence: number
  correction_key: string
  action: CorrectionAction
  cancelled_id: string
  replacement_id: string | null
}

/** JSON with object keys sorted, so two spellings of one item give one digest. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`
  if (v !== null && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonical(x)}`).join(',')}}`
  }
  return JSON.stringify(v)
}

/** The digest of an item: the same item sent again is recognised as the correction already made. */
export const correctionKey = (item: CorrectionItem): string =>
  createHash('sha256').update(canonical({ action: item.action, reason: item.reason ?? '', event: item.event ?? null })).digest('hex')

/**
 * Aggregations whose rollup states a cancel row cannot take back (a minimum, a maximum, a set of unique values, the
 * latest value): their events are refused corrections rather than corrected inexactly.
 */
const NOT_CORRECTABLE: ReadonlySet<AggregationType> = new Set(['MIN', 'MAX', 'COUNT_UNIQUE', 'LATEST'])
export const correctable = (type: AggregationType): boolean => !NOT_CORRECTABLE.has(type)

export type ChainStep =
  | { kind: 'replay'; link: ChainLink }
  | { kind: 'refused'; status: 409; message: string }
  | { kind: 'apply'; sequence: number; cancelledId: string }

/**
 * What an item does given the event's recorded corrections (`chain`, any order): the same item again replays its
 * correction; anything after a cancel is refused; otherwise the next correction cancels the event's current stored
 * copy — the original, or the replacement the last amend stored.
 */
export function nextStep(eventId: string, chain: readonly ChainLink[], key: string): ChainStep {
  const same = chain.find((l) => l.correction_key === key)
  if (same) return { kind: 'replay', link: same }
  const last = chain.reduce<ChainLink | undefined>((a, l) => (a === undefined || l.sequence > a.sequence ? l : a), undefined)
  if (last?.action === 'cancel') return { kind: 'refused', status: 409, message: `event ${eventId} is already cancelled (correction ${last.id})` }
  return { kind: 'apply', sequence: (last?.sequence ?? 0) + 1, cancelledId: last?.replacement_id ?? eventId }
}
