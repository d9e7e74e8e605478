import { defineRoute, type Route } from '../route.ts'
import { dateTime } from '../record-schema.ts'
import { toWire } from '../../domains/records/wire.ts'
import { journal } from '../../domains/accounting/journal.ts'
import { exportJournal, JOURNAL_EXPORT_COLUMNS } from '../../domains/accounting/export.ts'
import { csvPieces } from '../../core/csv.ts'
import { sendCsv } from '../csv-stream.ts'

const range = { type: 'object', required: ['start_time', 'end_time'], additionalProperties: false, properties: { start_time: dateTime, end_time: dateTime } } as const

export const accountingRoutes: Route[] = [
  defineRoute<Record<string, never>, { start_time: string; end_time: string }>({
    method: 'GET',
    path: '/v1/accounting/journal',
    tag: 'Accounting',
    summary: 'The double-entry journal of [start_time, end_time): one balanced entry per finalized or voided invoice, payment, credit note and wallet transaction',
    permission: 'read',
    query: range,
    handler: async ({ deps, actor, query }) => toWire(await journal(deps, actor, query)),
  }),
  defineRoute<Record<string, never>, { start_time: string; end_time: string }>({
    method: 'GET',
    path: '/v1/accounting/journal/export',
    tag: 'Accounting',
    summary: 'The journal of [start_time, end_time) as CSV: one row per line (entry_id, date, source, customer, currency, description, account, debit, credit)',
    permission: 'read',
    query: range,
    handler: async ({ deps, actor, query, ctx }) => {
      const { filename, rows } = await exportJournal(deps, actor, query)
      await sendCsv(ctx, deps, { filename, columns: JOURNAL_EXPORT_COLUMNS, pieces: (signal) => csvPieces(JOURNAL_EXPORT_COLUMNS, rows(signal)) })
      return undefined
    },
  }),
]
