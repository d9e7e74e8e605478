// A PDF answer (an invoice's, a credit note's): shown inline, saved under the document's number.
import type { Context } from 'koa'

export function sendPdf(ctx: Context, name: string, pdf: Buffer): undefined {
  ctx.status = 200
  ctx.type = 'application/pdf'
  ctx.set('Content-Disposition', `inline; filename="${name}.pdf"`)
  ctx.body = pdf
  return undefined
}
