// What the invoice and credit note PDFs share: an A4 document collected into a Buffer, and its head — the heading,
// the document's facts on the left and who is billed on the right.
import PDFDocument from 'pdfkit'
import type { CustomerView } from '../customers/service.ts'

export const LEFT = 50

export const day = (d: Date | null | undefined): string => (d ? d.toISOString().slice(0, 10) : '—')

/** A new document and the Buffer it becomes once `doc.end()` is called. */
export function pdfDocument(title: string): { doc: PDFKit.PDFDocument; done: Promise<Buffer> } {
  const doc = new PDFDocument({ size: 'A4', margin: 50, info: { Title: title } })
  const chunks: Buffer[] = []
  doc.on('data', (c: Buffer) => chunks.push(c))
  const done = new Promise<Buffer>((resolve) => doc.on('end', () => resolve(Buffer.concat(chunks))))
  return { doc, done }
}

/** The heading, the facts (label, value) and the customer's address; where the body starts. */
export function writeHead(doc: PDFKit.PDFDocument, heading: string, facts: [string, string][], c: CustomerView | null): number {
  doc.font('Helvetica-Bold').fontSize(20).text(heading, LEFT, 50)
  doc.font('Helvetica').fontSize(10)
  let y = 85
  for (const [k, v] of facts) {
    doc.font('Helvetica-Bold').text(k, LEFT, y, { width: 110 }).font('Helvetica').text(v, LEFT + 115, y)
    y += 15
  }
  const address = [c?.name || c?.external_id, c?.email, c?.address_line1, c?.address_line2, [c?.address_postal_code, c?.address_city].filter(Boolean).join(' '), [c?.address_state, c?.address_country].filter(Boolean).join(', ')].filter(Boolean) as string[]
  doc.font('Helvetica-Bold').text('Bill to', LEFT + 320, 85)
  doc.font('Helvetica').text(address.join('\n'), LEFT + 320, 100, { width: 180 })
  return Math.max(y, 100 + address.length * 13) + 25
}
