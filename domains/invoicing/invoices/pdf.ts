// The invoice as a PDF a finance team could send: number and dates, who is billed, every line with its
// period, quantity and amount, the discounts, each tax, the totals and what is still due. Amounts are
// printed with the currency's minor digits, exactly as stored (the PDF computes nothing); a usage line whose
// meter's feature has a reporting unit shows its quantity in that unit (core/reporting-unit.ts).
import { formatMoney, type Decimal } from '../../../core/money.ts'
import { inReportingUnit, type ReportingUnit } from '../../../core/reporting-unit.ts'
import type { Actor } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import { reportingUnitsOfMeters } from '../../catalog/features/service.ts'
import { getInvoice, type InvoiceView } from './read.ts'
import { day, LEFT, pdfDocument, writeHead } from '../pdf-layout.ts'

/** An invoice and its PDF, its usage lines' reporting units read from the catalog as it is now. */
export async function invoicePdf(deps: Deps, actor: Actor, id: string): Promise<{ invoice: InvoiceView; pdf: Buffer }> {
  const invoice = await getInvoice(deps, actor, id)
  const meterIds = invoice.line_items.flatMap((l) => (l.price_type === 'USAGE' && l.meter_id ? [l.meter_id] : []))
  return { invoice, pdf: await renderPdf(invoice, await reportingUnitsOfMeters(deps.sql, actor, meterIds)) }
}

function renderPdf(invoice: InvoiceView, units: Map<string, ReportingUnit>): Promise<Buffer> {
  const { doc, done } = pdfDocument(`Invoice ${invoice.invoice_number ?? invoice.id}`)
  const money = (d: Decimal) => `${formatMoney(d, invoice.currency)} ${invoice.currency}`
  const left = LEFT
  const width = doc.page.width - 100
  let y = writeHead(doc, invoice.invoice_status === 'DRAFT' ? 'DRAFT INVOICE' : 'INVOICE', [
    ['Invoice number', invoice.invoice_number ?? '(assigned at finalization)'],
    ['Status', `${invoice.invoice_status} / ${invoice.payment_status}`],
    ['Issue date', invoice.issue_date ?? day(invoice.finalized_at ?? invoice.created_at)],
    ['Due date', day(invoice.due_date)],
    ['Billing period', invoice.period_start ? `${day(invoice.period_start)} – ${day(invoice.period_end)}` : '—'],
  ], invoice.customer)

  // Lines: description (with period), quantity (in the reporting unit when there is one), amount.
  const cols = { desc: left, qty: left + 240, amount: left + 370 }
  doc.font('Helvetica-Bold')
  doc.text('Description', cols.desc, y).text('Quantity', cols.qty, y, { width: 120, align: 'right' }).text('Amount', cols.amount, y, { width: width - 370, align: 'right' })
  y += 15
  doc.moveTo(left, y).lineTo(left + width, y).stroke()
  y += 6
  doc.font('Helvetica')
  for (const l of invoice.line_items) {
    const period = l.period_start ? `${day(l.period_start)} – ${day(l.period_end)}` : ''
    const text = [l.display_name ?? l.price_id ?? 'Item', period].filter(Boolean).join('\n')
    const unit = l.price_type === 'USAGE' && l.meter_id ? units.get(l.meter_id) : undefined
    const quantity = unit ? inReportingUnit(l.quantity, unit) : l.quantity.toFixed()
    const h = Math.max(doc.heightOfString(text, { width: 230 }), doc.heightOfString(quantity, { width: 120 }))
    if (y + h > doc.page.height - 160) {
      doc.addPage()
      y = 50
    }
    doc.text(text, cols.desc, y, { width: 230 })
    doc.text(quantity, cols.qty, y, { width: 120, align: 'right' })
    doc.text(money(l.amount), cols.amount, y, { width: width - 370, align: 'right' })
    y += Math.max(h, 12) + 6
  }
  doc.moveTo(left, y).lineTo(left + width, y).stroke()
  y += 10

  const totals: [string, string, boolean?][] = [['Subtotal', money(invoice.subtotal)]]
  for (const a of invoice.coupon_applications) {
    const name = (a.coupon_snapshot.name as string | undefined) ?? a.coupon_id
    const pct = a.discount_percentage ? ` (${a.discount_percentage.toFixed()}%)` : ''
    totals.push([`Discount ${name}${pct}`, `-${money(a.discounted_amount)}`])
  }
  for (const t of invoice.taxes) {
    const rate = t.tax_rate as { name?: string; code?: string; percentage_value?: string; tax_rate_type?: string }
    const pct = rate.tax_rate_type === 'percentage' ? ` ${rate.percentage_value}%` : ''
    totals.push([`${rate.name ?? rate.code ?? 'Tax'}${pct} on ${money(t.taxable_amount)}`, money(t.tax_amount)])
  }
  totals.push(['Total', money(invoice.total), true])
  if (!invoice.total_prepaid_credits_applied.isZero()) totals.push(['Prepaid credits', `-${money(invoice.total_prepaid_credits_applied)}`])
  if (!invoice.adjustment_amount.isZero()) totals.push(['Credit notes (adjustments)', `-${money(invoice.adjustment_amount)}`])
  totals.push(['Amount paid', money(invoice.amount_paid)])
  totals.push(['Amount due', money(invoice.amount_remaining), true])
  for (const [label, value, bold] of totals) {
    doc.font(bold ? 'Helvetica-Bold' : 'Helvetica')
    doc.text(label, left + 180, y, { width: 220, align: 'right' }).text(value, cols.amount, y, { width: width - 370, align: 'right' })
    y += 15
  }
  if (invoice.description) doc.font('Helvetica').text(invoice.description, left, y + 15, { width })
  doc.end()
  return done
}
