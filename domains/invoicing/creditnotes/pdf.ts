// The credit note as a PDF to send with its email: number, date, the invoice it credits, why, each line credited and
// the total, printed with the currency's minor digits exactly as stored.
import { formatMoney, type Decimal } from '../../../core/money.ts'
import type { Actor } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import { day, LEFT, pdfDocument, writeHead } from '../pdf-layout.ts'
import { getCreditNote, type CreditNoteView } from './service.ts'

export async function creditNotePdf(deps: Deps, actor: Actor, id: string): Promise<{ note: CreditNoteView; pdf: Buffer }> {
  const note = await getCreditNote(deps, actor, id)
  return { note, pdf: await renderPdf(note) }
}

function renderPdf(note: CreditNoteView): Promise<Buffer> {
  const { doc, done } = pdfDocument(`Credit note ${note.credit_note_number ?? note.id}`)
  const money = (d: Decimal) => `${formatMoney(d, note.currency)} ${note.currency}`
  const width = doc.page.width - 100
  let y = writeHead(doc, note.credit_note_status === 'DRAFT' ? 'DRAFT CREDIT NOTE' : 'CREDIT NOTE', [
    ['Credit note', note.credit_note_number ?? '(assigned at finalization)'],
    ['Status', note.credit_note_status],
    ['Date', day(note.finalized_at ?? note.created_at)],
    ['Invoice', note.invoice?.invoice_number ?? note.invoice_id],
    ['Reason', `${note.reason} (${note.credit_note_type})`],
  ], note.customer)
  doc.font('Helvetica-Bold').text('Credited', LEFT, y).text('Amount', LEFT + 370, y, { width: width - 370, align: 'right' })
  y += 15
  doc.moveTo(LEFT, y).lineTo(LEFT + width, y).stroke()
  y += 6
  doc.font('Helvetica')
  for (const l of note.line_items) {
    if (y > doc.page.height - 120) {
      doc.addPage()
      y = 50
    }
    doc.text(l.display_name ?? l.invoice_line_item_id, LEFT, y, { width: 300 }).text(money(l.amount), LEFT + 370, y, { width: width - 370, align: 'right' })
    y += 18
  }
  doc.moveTo(LEFT, y).lineTo(LEFT + width, y).stroke()
  doc.font('Helvetica-Bold').text('Total credited', LEFT + 180, y + 10, { width: 220, align: 'right' }).text(money(note.total_amount), LEFT + 370, y + 10, { width: width - 370, align: 'right' })
  if (note.memo) doc.font('Helvetica').text(note.memo, LEFT, y + 40, { width })
  doc.end()
  return done
}
