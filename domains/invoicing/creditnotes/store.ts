// Credit notes and their lines.
import type { CreditNoteStatus, CreditNoteType } from '../../../core/billing/credit-notes.ts'
import type { PaymentStatus } from '../../../core/billing/payments.ts'
import type { Decimal } from '../../../core/money.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Db } from '../../../infra/postgres.ts'
import { decodeRow, filterSpec, type FilterSpec, type RecordRow, type RecordTable } from '../../../infra/records.ts'

export const NOTES: RecordTable = { name: 'credit_notes', noun: 'credit_note', prefix: 'cn', decimals: ['total_amount'] }
export const LINES: RecordTable = { name: 'credit_note_line_items', noun: 'credit_note_line_item', prefix: 'cnli', decimals: ['amount'] }
export const IDEMPOTENCY_INDEX = 'credit_notes_idempotency_key'

export const FILTERS: FilterSpec = filterSpec({
  eq: { invoice_id: 'invoice_id', customer_id: 'customer_id', subscription_id: 'subscription_id', credit_note_type: 'credit_note_type' },
  in: { credit_note_ids: 'id', credit_note_status: 'credit_note_status' },
})

export interface NoteRow extends RecordRow {
  invoice_id: string
  customer_id: string
  subscription_id: string | null
  credit_note_number: string | null
  credit_note_status: CreditNoteStatus
  credit_note_type: CreditNoteType
  reason: string
  refund_status: PaymentStatus | null
  currency: string
  memo: string | null
  total_amount: Decimal
  idempotency_key: string | null
  finalized_at: Date | null
  voided_at: Date | null
}

export interface LineRow extends RecordRow {
  credit_note_id: string
  invoice_line_item_id: string
  amount: Decimal
  currency: string
  display_name: string | null
}

export async function findByIdempotencyKey(db: Db, scope: Scope, key: string): Promise<NoteRow | undefined> {
  const [row] = await db`SELECT * FROM credit_notes WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}
    AND idempotency_key = ${key} AND status <> 'deleted'`
  return row ? decodeRow<NoteRow>(NOTES, row) : undefined
}

/** The notes of an invoice, with their lines (the amounts already credited or reserved). */
export async function notesOf(db: Db, scope: Scope, invoiceId: string): Promise<(NoteRow & { line_items: LineRow[] })[]> {
  const notes = (await db`SELECT * FROM credit_notes WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}
    AND invoice_id = ${invoiceId} AND status <> 'deleted' ORDER BY created_at, id`).map((r) => decodeRow<NoteRow>(NOTES, r))
  const lines = await linesOf(db, scope, notes.map((n) => n.id))
  return notes.map((n) => ({ ...n, line_items: lines.filter((l) => l.credit_note_id === n.id) }))
}

export async function linesOf(db: Db, scope: Scope, noteIds: string[]): Promise<LineRow[]> {
  if (noteIds.length === 0) return []
  const rows = await db`SELECT * FROM credit_note_line_items WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}
    AND credit_note_id = ANY(${noteIds}::text[]) ORDER BY created_at, id`
  return rows.map((r) => decodeRow<LineRow>(LINES, r))
}
