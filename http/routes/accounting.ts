import { defineRoute, type Route } from '../route.ts'
import { dateTime } from '../record-schema.ts'
import { toWire } from '../../domains/records/wire.ts'
import { journal } from '../../domains/accounting/journal.ts'

export const accountingRoutes: Route[] = [
  defineRoute<Record<string, never>, { start_time: string; end_time: string }>({
    method: 'GET',
    path: '/v1/accounting/journal',
    tag: 'Accounting',
    summary: 'The double-entry journal of [start_time, end_time): one balanced entry per finalized or voided invoice, payment, credit note and wallet transaction',
    permission: 'read',
    query: { type: 'object', required: ['start_time', 'end_time'], additionalProperties: false, properties: { start_time: dateTime, end_time: dateTime } },
    handler: async ({ deps, actor, query }) => toWire(await journal(deps, actor, query)),
  }),
]
