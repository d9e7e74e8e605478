// The raw-events export: every stored event of a range, for audits, as CSV streamed from ClickHouse (analytics store
// eventsCsv: the table's order, no sort, constant memory; ClickHouse writes the rows, they pass through as bytes).
import { validationError } from '../../../core/errors.ts'
import type { CsvColumn, CsvPiece } from '../../../core/csv.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import { EVENT_CSV_COLUMNS, eventsCsv } from '../analytics/store.ts'

export interface EventExportRequest {
  start_time: string
  end_time: string
  external_customer_id?: string
  external_customer_ids?: string[]
  event_names?: string[]
  sources?: string[]
}

export const EVENT_EXPORT_COLUMNS: readonly CsvColumn[] = EVENT_CSV_COLUMNS.map((name) => ({ name }))

/** Checks the request now (a bad one is refused before any byte is sent) and returns the rows to stream. */
export function exportEvents(deps: Pick<Deps, 'ch'>, scope: Scope, q: EventExportRequest): { filename: string; pieces(signal: AbortSignal): AsyncIterable<CsvPiece> } {
  const start = new Date(q.start_time)
  const end = new Date(q.end_time)
  if (end <= start) throw validationError('end_time', 'must be after start_time')
  const customers = [...(q.external_customer_id !== undefined ? [q.external_customer_id] : []), ...(q.external_customer_ids ?? [])].map((c) => c.trim())
  const query = {
    scope,
    start,
    end,
    externalCustomerIds: customers.length > 0 ? customers : undefined,
    eventNames: q.event_names?.map((n) => n.trim()),
    sources: q.sources,
  }
  return {
    filename: `events-${start.toISOString()}-${end.toISOString()}.csv`.replace(/:/g, ''),
    pieces: (signal) => eventsCsv(deps.ch, query, { signal }),
  }
}
