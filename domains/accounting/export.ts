// The journal as CSV (GET /v1/accounting/journal/export): one row per journal line, so a ledger's importer reads
// it as it reads a general-ledger file; the entry's fields repeat on each of its lines. The journal of a range is
// bounded (366 days) and computed in memory as the JSON read is; the rows are then streamed like the other exports.
import type { CsvColumn, CsvValue } from '../../core/csv.ts'
import type { JournalEntry } from '../../core/accounting/journal.ts'
import type { Actor } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import { journal } from './journal.ts'

export const JOURNAL_EXPORT_COLUMNS: readonly CsvColumn[] = [
  { name: 'entry_id' },
  { name: 'date' },
  { name: 'source_type' },
  { name: 'source_id' },
  { name: 'customer_id' },
  { name: 'currency' },
  { name: 'description' },
  { name: 'account' },
  { name: 'debit', kind: 'number' },
  { name: 'credit', kind: 'number' },
]

function* linesOf(entries: JournalEntry[]): Generator<CsvValue[]> {
  for (const e of entries) for (const l of e.lines) yield [e.id, e.date.toISOString(), e.source_type, e.source_id, e.customer_id, e.currency, e.description, l.account, l.debit, l.credit]
}

/** Computes the journal now (a bad range is refused before any byte is sent) and returns its rows. */
export async function exportJournal(deps: Deps, actor: Actor, query: { start_time: string; end_time: string }) {
  const { start_time, end_time, entries } = await journal(deps, actor, query)
  return {
    filename: `journal-${start_time.toISOString()}-${end_time.toISOString()}.csv`.replace(/:/g, ''),
    rows: async function* (signal: AbortSignal) {
      for (const row of linesOf(entries)) {
        if (signal.aborted) return
        yield row
      }
    },
  }
}
