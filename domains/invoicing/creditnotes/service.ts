// Credit notes on finalized invoices (core/billing/credit-notes.ts decides every amount): REFUND when
// the invoice was paid, ADJUSTMENT otherwise; what a line can still take is net of earlier notes (drafts
// reserve theirs). Creating and finalizing take the invoice's row lock first, so two notes at once
// cannot credit the same money twice. Finalizing numbers the note (CN-…, gap-free) and moves the
// invoice's adjustment_amount or refunded_amount and payment status; voiding a finalized adjustment
// moves them back.
import { applyCreditNote, buildCreditNote, creditableAmounts, creditNoteTax, reverseCreditNote, type CreditableInvoice } from '../../../core/billing/credit-notes.ts'
import { invalidOperation, notFound } from '../../../core/errors.ts'
import type { Decimal } from '../../../core/money.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Db, Tx } from '../../../infra/postgres.ts'
import { filterConditions, finalizedOrVoidedBetween, insertRecord, insertRecords, listRecords, requireRecord, updateRecord } from '../../../infra/records.ts'
import { customerViews, type CustomerView } from '../../customers/service.ts'
import { type ListRequest, type Page, page } from '../../../core/list.ts'
import { invoiceLines, paymentState, setPaymentState } from '../invoices/payments.ts'
import { nextDocumentNumber } from '../invoices/finalize.ts'
import { lockInvoice, requireInvoice, type InvoiceRow } from '../invoices/read.ts'
import { announce, auditOf, referenced, transaction } from '../../records/service.ts'
import { requireSubscription, type SubscriptionRow } from '../../subscriptions/read.ts'
import * as store from './store.ts'

export const FILTERS = store.FILTERS

type Reason = 'DUPLICATE' | 'FRAUDULENT' | 'ORDER_CHANGE' | 'UNSATISFACTORY' | 'SERVICE_ISSUE' | 'BILLING_ERROR' | 'SUBSCRIPTION_CANCELLATION'

export interface CreateCreditNoteInput {
  invoice_id: string
  reason: Reason
  line_items: { invoice_line_item_id: string; amount: string }[]
  memo?: string
  idempotency_key?: string
  metadata?: Record<string, string>
  /** Finalize it in the same transaction (Flexprice's process_credit_note; its SDK sends true by default). */
  process_credit_note?: boolean
}

export interface CreditNoteView extends store.NoteRow {
  line_items: store.LineRow[]
  customer: CustomerView | null
  invoice: InvoiceRow | null
  subscription: SubscriptionRow | null
}

async function views(db: Db, scope: Scope, rows: store.NoteRow[]): Promise<CreditNoteView[]> {
  const [lines, customers, invoices, subs] = await Promise.all([
    store.linesOf(db, scope, rows.map((r) => r.id)),
    customerViews(db, scope, rows.map((r) => r.customer_id)),
    Promise.all([...new Set(rows.map((r) => r.invoice_id))].map((id) => requireInvoice(db, scope, id))),
    Promise.all([...new Set(rows.flatMap((r) => (r.subscription_id ? [r.subscription_id] : [])))].map((id) => requireSubscription(db, scope, id))),
  ])
  return rows.map((row) => ({
    ...row,
    line_items: lines.filter((l) => l.credit_note_id === row.id),
    customer: customers.find((c) => c.id === row.customer_id) ?? null,
    invoice: invoices.find((i) => i.id === row.invoice_id) ?? null,
    subscription: subs.find((s) => s.id === row.subscription_id) ?? null,
  }))
}

const viewOf = async (db: Db, scope: Scope, row: store.NoteRow): Promise<CreditNoteView> => (await views(db, scope, [row]))[0]

/** The invoice as the credit-note rules read it: its payment state and its lines' charges. */
async function creditable(tx: Tx, scope: Scope, invoice: InvoiceRow): Promise<CreditableInvoice> {
  return { ...paymentState(invoice), line_items: await invoiceLines(tx, scope, [invoice.id]) }
}

export async function createCreditNote(deps: Deps, actor: Actor, input: CreateCreditNoteInput): Promise<CreditNoteView> {
  const replay = input.idempotency_key ? await store.findByIdempotencyKey(deps.sql, actor, input.idempotency_key) : undefined
  if (replay) return viewOf(deps.sql, actor, replay)
  await referenced('invoice_id', requireInvoice(deps.sql, actor, input.invoice_id))
  const audit = auditOf(deps, actor)
  try {
    return await transaction(deps, async (tx) => {
      // The invoice's lock serializes notes on it: the second sees what the first reserved.
      const invoice = await lockInvoice(tx, actor, input.invoice_id)
      const target = await creditable(tx, actor, invoice)
      const note = buildCreditNote(target, await store.notesOf(tx, actor, invoice.id), input)
      const row = await insertRecord<store.NoteRow>(tx, store.NOTES, actor, audit, {
        invoice_id: invoice.id,
        customer_id: invoice.customer_id,
        subscription_id: invoice.subscription_id,
        credit_note_status: 'DRAFT',
        credit_note_type: note.credit_note_type,
        reason: input.reason,
        currency: invoice.currency,
        memo: input.memo ?? null,
        total_amount: note.total_amount,
        idempotency_key: input.idempotency_key ?? null,
        metadata: input.metadata ?? {},
      })
      const names = new Map(target.line_items.map((l) => [l.id, (l as { display_name?: string | null }).display_name ?? null]))
      await insertRecords(
        tx,
        store.LINES,
        actor,
        audit,
        note.line_items.map((l) => ({ credit_note_id: row.id, invoice_line_item_id: l.invoice_line_item_id, amount: l.amount, currency: invoice.currency, display_name: names.get(l.invoice_line_item_id), metadata: {} })),
      )
      const view = await viewOf(tx, actor, row)
      await announce(tx, actor, 'credit_note.created', store.NOTES, view)
      return input.process_credit_note ? finalizeIn(tx, deps, actor, row.id) : view
    })
  } catch (err) {
    const e = err as { code?: string; constraint_name?: string }
    if (e.code === '23505' && e.constraint_name === store.IDEMPOTENCY_INDEX) return viewOf(deps.sql, actor, (await store.findByIdempotencyKey(deps.sql, actor, input.idempotency_key!))!)
    throw err
  }
}

/** What each line of a finalized invoice can still be credited, and in total. */
export async function creditableOf(deps: Deps, actor: Actor, invoiceId: string) {
  return transaction(deps, async (tx) => {
    const invoice = await lockInvoice(tx, actor, invoiceId)
    const amounts = creditableAmounts(await creditable(tx, actor, invoice), await store.notesOf(tx, actor, invoiceId))
    return { invoice_id: invoiceId, currency: invoice.currency, ...amounts }
  })
}

async function lockNote(tx: Tx, scope: Scope, id: string): Promise<{ note: store.NoteRow; invoice: InvoiceRow }> {
  const found = await requireRecord<store.NoteRow>(tx, store.NOTES, scope, id)
  // Invoice first, then the note: every path takes the locks in this order.
  const invoice = await lockInvoice(tx, scope, found.invoice_id)
  const [row] = await tx`SELECT id FROM credit_notes WHERE id = ${id} FOR UPDATE`
  if (!row) throw notFound('credit note', id)
  return { note: await requireRecord<store.NoteRow>(tx, store.NOTES, scope, id), invoice }
}

export async function finalizeCreditNote(deps: Deps, actor: Actor, id: string): Promise<CreditNoteView> {
  return transaction(deps, (tx) => finalizeIn(tx, deps, actor, id))
}

/** Finalizes a draft note in the caller's transaction (its own request, or the create that asked to process it). */
async function finalizeIn(tx: Tx, deps: Deps, actor: Actor, id: string): Promise<CreditNoteView> {
  const audit = auditOf(deps, actor)
  const { note, invoice } = await lockNote(tx, actor, id)
  if (note.credit_note_status !== 'DRAFT') throw invalidOperation(`credit note ${id} is ${note.credit_note_status}, not a draft`, { credit_note_status: note.credit_note_status })
  const state = paymentState(invoice)
  const type = ['SUCCEEDED', 'OVERPAID', 'PARTIALLY_REFUNDED'].includes(state.payment_status) ? 'REFUND' : 'ADJUSTMENT'
  if (type !== note.credit_note_type) throw invalidOperation(`the invoice's payment changed since this ${note.credit_note_type} was drafted: void it and create a new note`, { credit_note_type: note.credit_note_type })
  await setPaymentState(tx, actor, audit, invoice.id, applyCreditNote(state, note))
  const number = await nextDocumentNumber(tx, actor, deps.config.invoicing.creditNoteNumberTemplate, audit.at)
  const row = await updateRecord<store.NoteRow>(
    tx,
    store.NOTES,
    actor,
    id,
    { credit_note_status: 'FINALIZED', credit_note_number: number, finalized_at: audit.at, refund_status: type === 'REFUND' ? 'SUCCEEDED' : null },
    { audit },
  )
  const view = await viewOf(tx, actor, row)
  await announce(tx, actor, 'credit_note.updated', store.NOTES, view)
  return view
}

/**
 * A draft is voided and frees what it reserved. A finalized ADJUSTMENT is voided and taken back from
 * the invoice (core reverseCreditNote: owed and creditable again); a finalized REFUND stays, its money
 * has left. A voided note is final.
 */
export async function voidCreditNote(deps: Deps, actor: Actor, id: string): Promise<CreditNoteView> {
  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    const { note, invoice } = await lockNote(tx, actor, id)
    if (note.credit_note_status === 'VOIDED') throw invalidOperation(`credit note ${id} is already VOIDED`, { credit_note_status: note.credit_note_status })
    if (note.credit_note_status === 'FINALIZED') await setPaymentState(tx, actor, audit, invoice.id, reverseCreditNote(paymentState(invoice), note))
    const row = await updateRecord<store.NoteRow>(tx, store.NOTES, actor, id, { credit_note_status: 'VOIDED', voided_at: audit.at }, { audit })
    const view = await viewOf(tx, actor, row)
    await announce(tx, actor, 'credit_note.updated', store.NOTES, view)
    return view
  })
}

export async function getCreditNote(deps: Deps, actor: Actor, id: string): Promise<CreditNoteView> {
  return viewOf(deps.sql, actor, await requireRecord<store.NoteRow>(deps.sql, store.NOTES, actor, id))
}

export async function listCreditNotes(deps: Deps, actor: Actor, { params, filters }: ListRequest): Promise<Page<CreditNoteView>> {
  const { rows, total } = await listRecords<store.NoteRow>(deps.sql, store.NOTES, actor, params, filterConditions(deps.sql, store.FILTERS, filters))
  return page(await views(deps.sql, actor, rows), total, params)
}

/** Notes finalized or voided in [start, end) (the accounting journal's credit notes). */
/** The notes finalized or voided in [start, end), each with the tax part of its total (creditNoteTax). */
export async function journalCreditNotes(db: Db, scope: Scope, start: Date, end: Date): Promise<(store.NoteRow & { total_tax: Decimal })[]> {
  const notes = await finalizedOrVoidedBetween<store.NoteRow>(db, store.NOTES, scope, start, end)
  const [lines, invoiceLineRows] = await Promise.all([store.linesOf(db, scope, notes.map((n) => n.id)), invoiceLines(db, scope, [...new Set(notes.map((n) => n.invoice_id))])])
  return notes.map((n) => ({ ...n, total_tax: creditNoteTax(lines.filter((l) => l.credit_note_id === n.id), invoiceLineRows, n.currency) }))
}
