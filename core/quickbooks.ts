// QuickBooks Online v3 JSON for our invoices, payments and credit notes: pure mapping, no I/O. Amounts
// are Decimals rounded once to the currency's minor unit and written as JSON number literals from their
// decimal text (never through a JS float); names are cleaned to what QuickBooks accepts.
import { D, roundMoney, sumMoney, type Decimal } from './money.ts'

/** A line of our invoice as the accounting push reads it. */
export interface ChargedLine {
  display_name: string | null
  amount: Decimal
  line_item_discount: Decimal
  invoice_level_discount: Decimal
  tax_amount: Decimal
}

export interface Charge {
  name: string
  amount: Decimal
}

/** What a QuickBooks invoice lists for ours: its lines' charges and the amount taken off them. */
export interface InvoiceCharges {
  lines: Charge[]
  /** Prepaid credits and adjustments that lower what the invoice asks (a discount line); never negative. */
  discount: Decimal
}

/** Item and customer names: no colon (QuickBooks' sub-item separator), one line, at most `max` characters. */
export function qboName(name: string | null | undefined, max: number, fallback: string): string {
  const cleaned = (name ?? '').replace(/:/g, '-').replace(/\s+/g, ' ').trim().slice(0, max).trim()
  return cleaned || fallback
}

export const ITEM_NAME_MAX = 100
export const DISPLAY_NAME_MAX = 500
/** QuickBooks' DocNumber and PaymentRefNum hold 21 characters; longer numbers go in PrivateNote only. */
const DOC_NUMBER_MAX = 21

/**
 * Each line as it charges (amount − discounts + its tax share, so the QuickBooks total is ours without
 * its tax setup), grouped under an item named after the line; what is left between those charges and
 * what the invoice asks (prepaid credits applied at finalization, rounding) is a discount when it lowers
 * it and an "Adjustments" line when it raises it. The QuickBooks balance is then what the invoice asked at
 * finalization: amount_due before adjustment credit notes, which go as Credit Memos of their own.
 */
export function invoiceCharges(invoice: { currency: string; amount_due: Decimal; adjustment_amount: Decimal; line_items: ChargedLine[] }): InvoiceCharges {
  const lines = invoice.line_items
    .map((l) => ({
      name: qboName(l.display_name, ITEM_NAME_MAX, 'Charge'),
      amount: roundMoney(l.amount.minus(l.line_item_discount).minus(l.invoice_level_discount).plus(l.tax_amount), invoice.currency),
    }))
    .filter((l) => !l.amount.isZero())
  const rest = invoice.amount_due.plus(invoice.adjustment_amount).minus(sumMoney(lines.map((l) => l.amount)))
  if (rest.gt(0)) return { lines: [...lines, { name: 'Adjustments', amount: rest }], discount: new D(0) }
  return { lines, discount: rest.negated() }
}

/** A query's string literal: QuickBooks escapes a quote with a backslash. */
export function qboQuery(entity: string, field: string, value: string): string {
  return `select * from ${entity} where ${field} = '${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`
}

/** A request body: like JSON.stringify, but a Decimal is written as the number literal of its exact text. */
export function qboJson(value: unknown): string {
  if (D.isDecimal(value)) return (value as Decimal).toFixed()
  if (Array.isArray(value)) return `[${value.map(qboJson).join(',')}]`
  if (value && typeof value === 'object') {
    const fields = Object.entries(value).filter(([, v]) => v !== undefined)
    return `{${fields.map(([k, v]) => `${JSON.stringify(k)}:${qboJson(v)}`).join(',')}}`
  }
  return JSON.stringify(value)
}

const money = roundMoney
const day = (at: Date): string => at.toISOString().slice(0, 10)
const docNumber = (n: string | null): string | undefined => (n && n.length <= DOC_NUMBER_MAX ? n : undefined)

function salesLine(charge: Charge, itemId: string, currency: string) {
  const amount = money(charge.amount, currency)
  return { DetailType: 'SalesItemLineDetail', Amount: amount, Description: charge.name, SalesItemLineDetail: { ItemRef: { value: itemId }, Qty: new D(1), UnitPrice: amount } }
}

interface Header {
  id: string
  number: string | null
  currency: string
  customer_ref: string
  date: Date
}

const header = ({ id, number, currency, customer_ref, date }: Header) => ({
  CustomerRef: { value: customer_ref },
  CurrencyRef: { value: currency },
  TxnDate: day(date),
  DocNumber: docNumber(number),
  PrivateNote: `meterbill ${id}${number ? ` ${number}` : ''}`,
})

/** A QuickBooks Invoice; `items` maps each charge's name to its QuickBooks item id. */
export function invoiceBody(h: Header & { due_date: Date | null }, charges: InvoiceCharges, items: Map<string, string>): string {
  const Line: unknown[] = charges.lines.map((c) => salesLine(c, items.get(c.name)!, h.currency))
  if (!charges.discount.isZero()) {
    Line.push({ DetailType: 'DiscountLineDetail', Amount: money(charges.discount, h.currency), Description: 'Prepaid credits and adjustments', DiscountLineDetail: { PercentBased: false } })
  }
  return qboJson({ ...header(h), DueDate: h.due_date ? day(h.due_date) : undefined, Line })
}

/** A QuickBooks CreditMemo: one line per credited line, under the same items as the invoice's. */
export function creditMemoBody(h: Header, lines: Charge[], items: Map<string, string>): string {
  return qboJson({ ...header(h), Line: lines.map((c) => salesLine(c, items.get(c.name)!, h.currency)) })
}

/** A QuickBooks Payment applied to the pushed invoice. */
export function paymentBody(h: Header & { reference: string | null }, amount: Decimal, invoiceRef: string): string {
  const total = money(amount, h.currency)
  const { DocNumber: _none, ...rest } = header(h)
  return qboJson({ ...rest, PaymentRefNum: docNumber(h.reference ?? h.number), TotalAmt: total, Line: [{ Amount: total, LinkedTxn: [{ TxnId: invoiceRef, TxnType: 'Invoice' }] }] })
}
