import { defineRoute, type Route } from '../route.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { recordRoutes } from '../record-routes.ts'
import { metadataSchema, nonNegativeDecimal } from '../record-schema.ts'
import { toWire } from '../../domains/records/wire.ts'
import * as service from '../../domains/invoicing/creditnotes/service.ts'
import { creditNotePdf } from '../../domains/invoicing/creditnotes/pdf.ts'
import { sendPdf } from '../pdf-response.ts'

const id: JsonSchema = { type: 'string', minLength: 1 }

export const creditNoteRoutes: Route[] = [
  ...recordRoutes({
    path: '/v1/creditnotes',
    tag: 'Credit notes',
    noun: 'credit note',
    sortable: ['created_at', 'updated_at', 'finalized_at'],
    filters: service.FILTERS,
    createBody: {
      type: 'object',
      required: ['invoice_id', 'reason', 'line_items'],
      additionalProperties: false,
      properties: {
        invoice_id: id,
        reason: { type: 'string', enum: ['DUPLICATE', 'FRAUDULENT', 'ORDER_CHANGE', 'UNSATISFACTORY', 'SERVICE_ISSUE', 'BILLING_ERROR', 'SUBSCRIPTION_CANCELLATION'] },
        line_items: {
          type: 'array',
          minItems: 1,
          maxItems: 1000,
          items: { type: 'object', required: ['invoice_line_item_id', 'amount'], additionalProperties: false, properties: { invoice_line_item_id: id, amount: nonNegativeDecimal } },
        },
        memo: { type: 'string', maxLength: 2000 },
        idempotency_key: { type: 'string', minLength: 1, maxLength: 255 },
        metadata: metadataSchema,
        process_credit_note: { type: 'boolean', default: false, description: 'finalize it at once (Flexprice\'s SDK sends true unless told otherwise)' },
      },
    },
    service: { create: service.createCreditNote, get: service.getCreditNote, list: service.listCreditNotes },
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/creditnotes/{id}/finalize',
    tag: 'Credit notes',
    summary: "Finalize a draft note: numbered CN-…; the invoice's adjustment or refunded amount follows",
    permission: 'write',
    handler: async ({ deps, actor, params }) => toWire(await service.finalizeCreditNote(deps, actor, params.id)),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/creditnotes/{id}/void',
    tag: 'Credit notes',
    summary: 'Void a note: a draft frees what it reserved; a finalized ADJUSTMENT is taken back from the invoice (a REFUND whose money left cannot be voided)',
    permission: 'write',
    handler: async ({ deps, actor, params }) => toWire(await service.voidCreditNote(deps, actor, params.id)),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/invoices/{id}/creditable',
    tag: 'Credit notes',
    summary: 'What each line of an invoice can still be credited, net of earlier notes',
    permission: 'read',
    handler: async ({ deps, actor, params }) => toWire(await service.creditableOf(deps, actor, params.id)),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/creditnotes/{id}/pdf',
    tag: 'Credit notes',
    summary: 'The credit note as a PDF document (what its email attaches)',
    permission: 'read',
    handler: async ({ deps, actor, params, ctx }) => {
      const { note, pdf } = await creditNotePdf(deps, actor, params.id)
      return sendPdf(ctx, note.credit_note_number ?? note.id, pdf)
    },
  }),
]
