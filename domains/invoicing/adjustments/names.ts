// How an adjustment names itself on its documents: the period it adjusts, and the corrections and late events it
// settles (ids, at most NAMED of each, and how many in all).
import type { AdjustmentRow } from './store.ts'

/** Ids of each kind recorded on an adjustment and its document, at most (the counts are whole). */
export const NAMED = 100

const day = (d: Date) => d.toISOString().slice(0, 10)
export const periodName = (start: Date, end: Date) => `${day(start)} – ${day(end)}`

/** Metadata of a document or line: ids comma-separated, and the counts. */
export function namesOf(a: Pick<AdjustmentRow, 'correction_ids' | 'corrections' | 'late_event_ids' | 'late_events'>): Record<string, string> {
  return {
    ...(a.corrections > 0 && { correction_ids: a.correction_ids.join(','), correction_count: String(a.corrections) }),
    ...(a.late_events > 0 && { late_event_ids: a.late_event_ids.join(','), late_event_count: String(a.late_events) }),
  }
}
