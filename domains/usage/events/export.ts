// The raw-events export: every stored event of a range, for audits, as CSV rows streamed from ClickHouse
// (analytics store streamEvents: the table's order, no sort, constant memory).
import { validationError } from '../../../core/errors.ts'
import type { CsvColumn, CsvValue } from '../../../core/csv.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import { streamEvents } from '../analytics/store.ts'

export interface EventExportRequest {
  start_time: string
  end_time: string
  external_customer_id?: string
  external_customer_ids?: string[]
  event_names?: string[]
  sources?: string[]
}

export const EVENT_EXPORT_COLUMNS: readonly CsvColumn[] = [
  { name: 'event_id' },
  { name: 'timestamp' },
  { name: 'received_at' },
  { name: 'external_customer_id' },
  { name: 'customer_id' },
  { name: 'event_name' },
  { name: 'source' },
  { name: 'properties' },
]

/** Checks the request now (a bad one is refused before any byte is sent) and returns the rows to stream. */
export function exportEvents(deps: Pick<Deps, 'ch'>, scope: Scope, q: EventExportRequest): { filename: string; rows(signal: AbortSignal): AsyncIterable<CsvValue[]> } {
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
    async *rows(signal) {
      for await (const e of streamEvents(deps.ch, query, { signal })) {
        yield [e.id, e.timestamp.toISOString(), e.received_at.toISOString(), e.external_customer_id, e.customer_id, e.event_name, e.source, e.properties]
      }
    },
  }
}
