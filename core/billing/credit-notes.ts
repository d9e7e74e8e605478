// Credit notes: how much of each invoice line can still be credited, whether a requested note fits,
// and what a finalized note does to the invoice.
//
// A line's creditable amount is what the line charges: its amount − its discounts + its share of the
// taxes (credited in proportion, so crediting every line in full gives back the invoice total), minus
// what earlier notes already credit on it. Earlier notes count unless VOIDED: a DRAFT reserves its
// amounts, so two drafts cannot credit the same money twice.
import { AppError, invalidOperation, validationError } from '../errors.ts'
import { D, formatMoney, roundMoney, sumMoney, type Decimal } from '../money.ts'
import { moneyAmount } from './amounts.ts'
import { applyRefund, assertTransition, type PaymentState, type PaymentStatus } from './payments.ts'

export type CreditNoteType = 'ADJUSTMENT' | 'REFUND'
export type CreditNoteStatus = 'DRAFT' | 'FINALIZED' | 'VOIDED'

/** The invoice line fields that decide what can be credited (as computeInvoice gives them). */
type CreditableLine = { id: string; amount: Decimal; line_item_discount: Decimal; invoice_level_discount: Decimal; tax_amount: Decimal }
export type CreditableInvoice = PaymentState & { line_items: CreditableLine[] }

export type NoteLine = { invoice_line_item_id: string; amount: Decimal }
export type EarlierNote = { credit_note_type: CreditNoteType; credit_note_status: CreditNoteStatus; line_items: NoteLine[] }
export type CreditNoteRequest = { line_items: { invoice_line_item_id: string; amount: string }[] }
export type CreditNote = { credit_note_type: CreditNoteType; currency: string; total_amount: Decimal; line_items: NoteLine[] }

const PAID: PaymentStatus[] = ['SUCCEEDED', 'OVERPAID', 'PARTIALLY_REFUNDED']

/** REFUND when the invoice was paid (money goes back), ADJUSTMENT otherwise (less is owed). */
export function creditNoteType(status: PaymentStatus): CreditNoteType {
  return PAID.includes(status) ? 'REFUND' : 'ADJUSTMENT'
}

/**
 * Per line what can still be credited, and in total: the sum of the lines; for an ADJUSTMENT also no
 * more than is still owed (amount_remaining, less draft adjustments not yet applied), since an
 * adjustment cannot give back money that was paid.
 */
export function creditableAmounts(invoice: CreditableInvoice, earlier: EarlierNote[]): { lines: NoteLine[]; total: Decimal } {
  const live = earlier.filter((n) => n.credit_note_status !== 'VOIDED')
  const credited = (id: string) => sumMoney(live.flatMap((n) => n.line_items.filter((l) => l.invoice_line_item_id === id).map((l) => l.amount)))
  const lines = invoice.line_items.map((l) => ({
    invoice_line_item_id: l.id,
    amount: D.max(0, l.amount.minus(l.line_item_discount).minus(l.invoice_level_discount).plus(l.tax_amount).minus(credited(l.id))),
  }))
  const total = sumMoney(lines.map((l) => l.amount))
  if (creditNoteType(invoice.payment_status) === 'REFUND') return { lines, total }
  const drafts = live.filter((n) => n.credit_note_status === 'DRAFT' && n.credit_note_type === 'ADJUSTMENT').flatMap((n) => n.line_items.map((l) => l.amount))
  return { lines, total: D.max(0, D.min(total, invoice.amount_remaining.minus(sumMoney(drafts)))) }
}

/** Checks a requested note against the creditable amounts; an error names the offending line. */
export function buildCreditNote(invoice: CreditableInvoice, earlier: EarlierNote[], request: CreditNoteRequest): CreditNote {
  if (invoice.invoice_status !== 'FINALIZED') throw invalidOperation(`credit notes need a finalized invoice, this one is ${invoice.invoice_status}`)
  if (request.line_items.length === 0) throw validationError('line_items', 'at least one line is required')
  const creditable = creditableAmounts(invoice, earlier)
  const money = (d: Decimal) => formatMoney(d, invoice.currency)
  const seen = new Set<string>()
  const lines = request.line_items.map((l, i): NoteLine => {
    const field = `line_items[${i}]`
    const available = creditable.lines.find((c) => c.invoice_line_item_id === l.invoice_line_item_id)
    // Not among this invoice's lines: whether it is another invoice's or another tenant's, it is not found here.
    if (!available) throw new AppError('not_found', `${field}.invoice_line_item_id: ${l.invoice_line_item_id} is not a line of this invoice`, { id: l.invoice_line_item_id, [`${field}.invoice_line_item_id`]: l.invoice_line_item_id })
    if (seen.has(l.invoice_line_item_id)) throw validationError(`${field}.invoice_line_item_id`, `${l.invoice_line_item_id} appears twice`)
    seen.add(l.invoice_line_item_id)
    const amount = moneyAmount(l.amount, invoice.currency, `${field}.amount`)
    if (amount.isZero()) throw validationError(`${field}.amount`, 'must be greater than 0')
    if (amount.gt(available.amount)) throw validationError(`${field}.amount`, `${money(amount)} exceeds the ${money(available.amount)} still creditable on line ${l.invoice_line_item_id}`)
    return { invoice_line_item_id: l.invoice_line_item_id, amount }
  })
  const total = sumMoney(lines.map((l) => l.amount))
  if (total.gt(creditable.total)) throw validationError('line_items', `the total ${money(total)} exceeds the ${money(creditable.total)} still creditable on this invoice`)
  return { credit_note_type: creditNoteType(invoice.payment_status), currency: invoice.currency, total_amount: total, line_items: lines }
}

/**
 * The tax part of a note (the journal's tax_payable reversal): each note line carries its invoice line's
 * tax in the proportion it credits of what the line charged with tax (amount × tax ÷ (net + tax)), rounded
 * to the minor unit per line, so a line credited whole gives back exactly its tax. Notes crediting a line
 * in several parts may each round it by a minor unit.
 */
export function creditNoteTax(note: NoteLine[], invoiceLines: CreditableLine[], currency: string): Decimal {
  return sumMoney(
    note.map((n) => {
      const l = invoiceLines.find((i) => i.id === n.invoice_line_item_id)
      if (!l) return new D(0)
      const charged = l.amount.minus(l.line_item_discount).minus(l.invoice_level_discount).plus(l.tax_amount)
      return charged.gt(0) ? roundMoney(n.amount.times(l.tax_amount).div(charged), currency) : new D(0)
    }),
  )
}

/**
 * What a finalized note does to the invoice. REFUND: refunded_amount and the refund status (applyRefund).
 * ADJUSTMENT: adjustment_amount grows and amount_due shrinks by the note, so amount_remaining = due −
 * paid still holds; an invoice left owing nothing is settled (SUCCEEDED).
 */
export function applyCreditNote(invoice: PaymentState, note: Pick<CreditNote, 'credit_note_type' | 'total_amount'>): PaymentState {
  if (note.credit_note_type === 'REFUND') return applyRefund(invoice, note.total_amount)
  const due = invoice.amount_due.minus(note.total_amount)
  const remaining = due.minus(invoice.amount_paid)
  if (remaining.isNeg()) throw invalidOperation(`an adjustment of ${formatMoney(note.total_amount, invoice.currency)} exceeds the ${formatMoney(invoice.amount_remaining, invoice.currency)} still owed`)
  const settled = remaining.isZero()
  if (settled) assertTransition(invoice.payment_status, 'SUCCEEDED')
  return {
    ...invoice,
    adjustment_amount: invoice.adjustment_amount.plus(note.total_amount),
    amount_due: due,
    amount_remaining: remaining,
    payment_status: settled ? 'SUCCEEDED' : invoice.payment_status,
  }
}

/**
 * What voiding a finalized note does to the invoice: the ADJUSTMENT is taken back (adjustment_amount
 * down, amount_due up by the note), so the amount becomes owed and creditable again. An invoice the
 * note had settled owes again: PENDING, paid_at cleared (an overpayment stays OVERPAID). A REFUND
 * is not reversed: its money has left (Stripe refuses to void a note whose refund succeeded). Nor is
 * an adjustment under later refunds, which were measured against what the adjustment left.
 */
export function reverseCreditNote(invoice: PaymentState, note: Pick<CreditNote, 'credit_note_type' | 'total_amount'>): PaymentState {
  if (note.credit_note_type === 'REFUND') throw invalidOperation('a finalized REFUND note cannot be voided: its refund succeeded and the money has left', { credit_note_type: 'REFUND' })
  if (invoice.invoice_status !== 'FINALIZED') throw invalidOperation(`the invoice is ${invoice.invoice_status}: its credit notes stay as they are`, { invoice_status: invoice.invoice_status })
  if (invoice.refunded_amount.gt(0)) throw invalidOperation(`the invoice has ${formatMoney(invoice.refunded_amount, invoice.currency)} refunded since: the refunds were measured against what this adjustment left, so it stays`, { refunded_amount: formatMoney(invoice.refunded_amount, invoice.currency) })
  const due = invoice.amount_due.plus(note.total_amount)
  const remaining = D.max(0, due.minus(invoice.amount_paid))
  const overpaid = D.max(0, invoice.amount_paid.minus(due))
  const settled = invoice.payment_status === 'SUCCEEDED' || invoice.payment_status === 'OVERPAID'
  const status: PaymentStatus = !settled ? invoice.payment_status : overpaid.gt(0) ? 'OVERPAID' : remaining.isZero() ? 'SUCCEEDED' : 'PENDING'
  return {
    ...invoice,
    adjustment_amount: invoice.adjustment_amount.minus(note.total_amount),
    amount_due: due,
    amount_remaining: remaining,
    overpaid_amount: overpaid,
    payment_status: status,
    paid_at: status === 'PENDING' ? null : invoice.paid_at,
  }
}
