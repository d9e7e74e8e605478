// The double-entry journal (GET /v1/accounting/journal): one entry per finalized invoice (and one more
// reversing it when voided), payment, credit note and wallet transaction, each naming its record and
// summing to zero (debits = credits). Pure: the records come in, the entries go out.
//
// Accounts:
//   accounts_receivable            what customers owe on finalized invoices
//   revenue:fixed, revenue:usage   earned charges by price type (revenue:other for one-off lines without one)
//   deferred_revenue               fixed charges billed in advance for a period not yet served
//   tax_payable                    taxes collected for the authorities
//   customer_credit_liability      prepaid credits held for customers (wallets), at money value
//   cash                           money received or paid out
//   sales_returns                  credit notes less their tax (contra revenue)
//   promotional_credits            free credits given (an expense)
//   credit_breakage                credits that expired unused (income)
//   credit_adjustments             credits removed by hand or when a wallet closed
import { D, roundMoney, type Decimal } from '../money.ts'

interface JournalLine {
  account: string
  debit: Decimal
  credit: Decimal
}

export interface JournalEntry {
  /** Stable: the record's id, with the kind of event (a voided invoice has two entries). */
  id: string
  date: Date
  source_type: 'invoice' | 'invoice_void' | 'payment' | 'credit_note' | 'credit_note_void' | 'wallet_transaction'
  source_id: string
  customer_id: string
  currency: string
  description: string
  lines: JournalLine[]
}

export interface InvoiceSource {
  id: string
  invoice_number: string | null
  invoice_type: string
  customer_id: string
  currency: string
  total_tax: Decimal
  finalized_at: Date
  voided_at: Date | null
  lines: { price_type: string | null; amount: Decimal; line_item_discount: Decimal; invoice_level_discount: Decimal; calculation: Record<string, unknown> | null }[]
}

export interface PaymentSource {
  id: string
  destination_id: string
  customer_id: string
  currency: string
  amount: Decimal
  payment_method_type: string
  succeeded_at: Date
}

export interface CreditNoteSource {
  id: string
  credit_note_number: string | null
  invoice_id: string
  customer_id: string
  currency: string
  credit_note_type: 'ADJUSTMENT' | 'REFUND'
  total_amount: Decimal
  /** The part of total_amount that was tax (core/billing/credit-notes.ts creditNoteTax). */
  total_tax: Decimal
  finalized_at: Date
  voided_at: Date | null
}

export interface WalletTransactionSource {
  id: string
  wallet_id: string
  customer_id: string
  currency: string
  type: 'credit' | 'debit'
  transaction_reason: string
  /** Its money value (credits × the wallet's rate). */
  amount: Decimal
  reference_type: string | null
  reference_id: string | null
  parent_transaction_id: string | null
  created_at: Date
}

/** Signed amounts (debit +, credit −) by account as lines, accounts in first-seen order, zero lines left out. */
function linesOf(amounts: [string, Decimal][]): JournalLine[] {
  const byAccount = new Map<string, Decimal>()
  for (const [account, amount] of amounts) byAccount.set(account, (byAccount.get(account) ?? new D(0)).plus(amount))
  return [...byAccount]
    .filter(([, a]) => !a.isZero())
    .map(([account, a]) => ({ account, debit: a.isPos() ? a : new D(0), credit: a.isNeg() ? a.neg() : new D(0) }))
}

/** An entry of one record: `amounts` signed (debit +, credit −), summing to zero. */
function entryOf(
  source_type: JournalEntry['source_type'],
  record: { id: string; customer_id: string; currency: string },
  date: Date,
  description: string,
  amounts: [string, Decimal][],
): JournalEntry {
  return { id: `${source_type}:${record.id}`, date, source_type, source_id: record.id, customer_id: record.customer_id, currency: record.currency, description, lines: linesOf(amounts) }
}

/** Where an invoice line's charge is credited: advance fixed charges are deferred, the rest is revenue by price type. */
function revenueAccount(line: InvoiceSource['lines'][number]): string {
  if (line.calculation?.kind === 'advance') return 'deferred_revenue'
  return line.price_type === 'FIXED' ? 'revenue:fixed' : line.price_type === 'USAGE' ? 'revenue:usage' : 'revenue:other'
}

/**
 * A finalized invoice: its total is owed (accounts receivable); each line's net charge is revenue (deferred
 * when billed in advance), the tax is payable. A credit purchase's charge is the credits' liability, not
 * revenue. Prepaid credits applied to it are their wallet debit's entry.
 */
export function invoiceEntry(i: InvoiceSource): JournalEntry {
  const credit = i.invoice_type === 'CREDIT'
  const charges = i.lines.map((l): [string, Decimal] => [credit ? 'customer_credit_liability' : revenueAccount(l), l.amount.minus(l.line_item_discount).minus(l.invoice_level_discount).neg()])
  const owed = charges.reduce((acc, [, a]) => acc.minus(a), new D(0)).plus(i.total_tax)
  return entryOf('invoice', i, i.finalized_at, `invoice ${i.invoice_number ?? i.id} finalized`, [['accounts_receivable', owed], ...charges, ['tax_payable', i.total_tax.neg()]])
}

/** An entry turned around: what undoes it. */
const reversed = (e: JournalEntry, source_type: JournalEntry['source_type'], date: Date, description: string): JournalEntry => ({
  ...e,
  id: `${source_type}:${e.source_id}`,
  date,
  source_type,
  description,
  lines: e.lines.map((l) => ({ account: l.account, debit: l.credit, credit: l.debit })),
})

/** A voided invoice: its finalization entry turned around, on the day it was voided. */
export const voidEntry = (i: InvoiceSource & { voided_at: Date }): JournalEntry => reversed(invoiceEntry(i), 'invoice_void', i.voided_at, `invoice ${i.invoice_number ?? i.id} voided`)

/** Money received for an invoice. A payment from a wallet is its wallet debit's entry, not this. */
export const paymentEntry = (p: PaymentSource): JournalEntry =>
  entryOf('payment', p, p.succeeded_at, `${p.payment_method_type} payment of invoice ${p.destination_id}`, [
    ['cash', p.amount],
    ['accounts_receivable', p.amount.neg()],
  ])

/**
 * A finalized credit note: an adjustment lowers what is owed, a refund pays money back. Its tax part is no
 * longer payable (the invoice's tax_payable is reversed by it), the rest is a sales return.
 */
export const creditNoteEntry = (n: CreditNoteSource): JournalEntry =>
  entryOf('credit_note', n, n.finalized_at, `credit note ${n.credit_note_number ?? n.id} (${n.credit_note_type.toLowerCase()}) on invoice ${n.invoice_id}`, [
    ['sales_returns', n.total_amount.minus(n.total_tax)],
    ['tax_payable', n.total_tax],
    [n.credit_note_type === 'REFUND' ? 'cash' : 'accounts_receivable', n.total_amount.neg()],
  ])

/** A finalized adjustment voided: what it took off is owed again. (A refund's money has left: it is never voided.) */
export const creditNoteVoidEntry = (n: CreditNoteSource & { voided_at: Date }): JournalEntry =>
  reversed(creditNoteEntry(n), 'credit_note_void', n.voided_at, `credit note ${n.credit_note_number ?? n.id} voided`)

/** What the other side of a wallet transaction is: the liability moves against it. */
function counterAccount(t: WalletTransactionSource): string | null {
  if (t.type === 'credit') {
    // Credits returned by a voided invoice undo their application: the customer owes that part again.
    if (t.parent_transaction_id && t.reference_type === 'INVOICE') return 'accounts_receivable'
    if (t.transaction_reason === 'PURCHASED_CREDIT_DIRECT') return 'cash'
    // Bought by invoice: the credit invoice already booked the liability against what is owed.
    if (t.transaction_reason === 'PURCHASED_CREDIT_INVOICED') return null
    return 'promotional_credits'
  }
  if (t.transaction_reason === 'INVOICE_PAYMENT') return 'accounts_receivable'
  if (t.transaction_reason === 'CREDIT_EXPIRED') return 'credit_breakage'
  return 'credit_adjustments'
}

/** A wallet credit (top-up, grant, return) or debit (credits applied to an invoice, expired, removed); none for a purchase by invoice. */
export function walletEntry(t: WalletTransactionSource): JournalEntry | null {
  const counter = counterAccount(t)
  if (!counter) return null
  // Credits are counted to 12 places; the ledger moves money, to the currency's minor unit (10/3 credits at 3.00 are 10.00).
  const money = roundMoney(t.amount, t.currency)
  const liability = t.type === 'credit' ? money.neg() : money
  const description = `wallet ${t.wallet_id}: ${t.type} ${t.transaction_reason}${t.reference_id ? ` (${t.reference_type} ${t.reference_id})` : ''}`
  return entryOf('wallet_transaction', t, t.created_at, description, [
    [counter, liability.neg()],
    ['customer_credit_liability', liability],
  ])
}

/** Debits less credits: zero for a balanced entry. */
export const imbalance = (e: Pick<JournalEntry, 'lines'>): Decimal => e.lines.reduce((acc, l) => acc.plus(l.debit).minus(l.credit), new D(0))
