// GET /v1/accounting/journal: the double-entry journal of a time range, for ledgers this service has no
// connection to. Each entry comes from one record of the domains below (core/accounting/journal.ts maps
// it) and balances to zero; entries are ordered by date, then id.
import { creditNoteEntry, creditNoteVoidEntry, invoiceEntry, paymentEntry, voidEntry, walletEntry, type JournalEntry } from '../../core/accounting/journal.ts'
import { validationError } from '../../core/errors.ts'
import type { Actor } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import { journalCreditNotes } from '../invoicing/creditnotes/service.ts'
import { journalInvoices } from '../invoicing/invoices/read.ts'
import { succeededPayments } from '../invoicing/payments/service.ts'
import { journalTransactions } from '../credits/wallets/service.ts'

const MAX_RANGE_MS = 366 * 86_400_000
const within = (t: Date | null, start: Date, end: Date): t is Date => t !== null && t >= start && t < end

export async function journal(deps: Deps, actor: Actor, query: { start_time: string; end_time: string }) {
  const start = new Date(query.start_time)
  const end = new Date(query.end_time)
  if (end <= start) throw validationError('end_time', 'must be after start_time')
  if (end.getTime() - start.getTime() > MAX_RANGE_MS) throw validationError('end_time', 'must be at most 366 days after start_time')
  const [invoices, payments, notes, transactions] = [
    await journalInvoices(deps.sql, actor, start, end),
    await succeededPayments(deps.sql, actor, start, end),
    await journalCreditNotes(deps.sql, actor, start, end),
    await journalTransactions(deps.sql, actor, start, end),
  ]
  const entries: JournalEntry[] = [
    ...invoices.flatMap((i) => [
      ...(within(i.finalized_at, start, end) ? [invoiceEntry({ ...i, finalized_at: i.finalized_at })] : []),
      ...(within(i.voided_at, start, end) ? [voidEntry({ ...i, finalized_at: i.finalized_at!, voided_at: i.voided_at })] : []),
    ]),
    // A wallet's payment is its INVOICE_PAYMENT debit's entry.
    ...payments.filter((p) => p.payment_method_type !== 'CREDITS').map((p) => paymentEntry({ ...p, succeeded_at: p.succeeded_at! })),
    ...notes.flatMap((n) => [
      ...(within(n.finalized_at, start, end) ? [creditNoteEntry({ ...n, finalized_at: n.finalized_at })] : []),
      ...(n.credit_note_type === 'ADJUSTMENT' && within(n.voided_at, start, end) ? [creditNoteVoidEntry({ ...n, finalized_at: n.finalized_at!, voided_at: n.voided_at })] : []),
    ]),
    ...transactions.flatMap((t) => walletEntry(t) ?? []),
  ]
  // A zero invoice (a trial's) moves nothing: no entry.
  const moving = entries.filter((e) => e.lines.length > 0)
  moving.sort((a, b) => a.date.getTime() - b.date.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  return { start_time: start, end_time: end, entries: moving }
}
