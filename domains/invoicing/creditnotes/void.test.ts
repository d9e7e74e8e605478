// Voiding finalized credit notes over HTTP: an ADJUSTMENT is taken back from the invoice (owed and
// creditable again), a REFUND whose money left stays, a voided note is final.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../../core/clock.ts'
import { customer, eventsOf } from '../../../test/catalog.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import type { CustomerWire, InvoiceWire } from '../../../test/wire.ts'

let h: Harness
let cus: CustomerWire
const clock = fixedClock('2024-05-10T12:00:00Z')

beforeAll(async () => {
  h = await startHarness({ clock })
  cus = await customer(h, { name: 'Acme GmbH' })
})
afterAll(() => h?.stop())

const post = (path: string, body?: unknown) => h.http('POST', path, { body })
const invoice = async (id: string) => (await h.http('GET', `/v1/invoices/${id}`)).body

/** A finalized one-off invoice: Pro plan 49.00 + Storage 98.73 = 147.73, no tax or discount. */
async function finalized() {
  const res = await post('/v1/invoices', {
    customer_id: cus.id,
    currency: 'USD',
    subtotal: '147.73',
    total: '147.73',
    amount_due: '147.73',
    line_items: [
      { display_name: 'Pro plan', amount: '49.00', quantity: '1' },
      { display_name: 'Storage (GB)', amount: '98.73', quantity: '1234.5' },
    ],
  })
  expect(res.status, JSON.stringify(res.body)).toBe(201)
  expect((await post(`/v1/invoices/${res.body.id}/finalize`)).status).toBe(200)
  return invoice(res.body.id)
}

async function finalizedNote(invoiceId: string, lines: [string, string][]) {
  const note = await post('/v1/creditnotes', { invoice_id: invoiceId, reason: 'BILLING_ERROR', line_items: lines.map(([id, amount]) => ({ invoice_line_item_id: id, amount })) })
  expect(note.status, JSON.stringify(note.body)).toBe(201)
  const fin = await post(`/v1/creditnotes/${note.body.id}/finalize`)
  expect(fin.status, JSON.stringify(fin.body)).toBe(200)
  return fin.body
}

const amounts = (i: InvoiceWire) => [i.adjustment_amount, i.amount_due, i.amount_paid, i.amount_remaining, i.payment_status]

describe('voiding a finalized ADJUSTMENT', () => {
  it('takes it back from the invoice, frees the amount for a new note for the full 147.73, and is final', async () => {
    const inv = await finalized()
    const [pro, storage] = inv.line_items
    const note = await finalizedNote(inv.id, [[storage.id, '40.00']])
    // 147.73 − 40.00 = 107.73 due.
    expect(amounts(await invoice(inv.id))).toEqual(['40', '107.73', '0', '107.73', 'PENDING'])

    clock.advance(60_000)
    const voided = await post(`/v1/creditnotes/${note.id}/void`)
    expect(voided.status, JSON.stringify(voided.body)).toBe(200)
    expect([voided.body.credit_note_status, voided.body.voided_at, voided.body.credit_note_number]).toEqual(['VOIDED', '2024-05-10T12:01:00.000Z', note.credit_note_number])
    expect(amounts(await invoice(inv.id))).toEqual(['0', '147.73', '0', '147.73', 'PENDING'])
    const creditable = (await h.http('GET', `/v1/invoices/${inv.id}/creditable`)).body
    expect(creditable.total).toBe('147.73')
    expect(await eventsOf(h, note.id)).toEqual(['credit_note.created', 'credit_note.updated', 'credit_note.updated'])
    expect((await eventsOf(h, inv.id)).filter((e) => e === 'invoice.update.payment')).toHaveLength(2)

    const again = await post(`/v1/creditnotes/${note.id}/void`)
    expect([again.status, again.body.code]).toEqual([400, 'invalid_operation'])
    expect(amounts(await invoice(inv.id))).toEqual(['0', '147.73', '0', '147.73', 'PENDING'])

    // 49.00 + 98.73 = 147.73: the whole invoice, which the voided note no longer reserves.
    const full = await finalizedNote(inv.id, [
      [pro.id, '49.00'],
      [storage.id, '98.73'],
    ])
    expect(full.total_amount).toBe('147.73')
    expect(amounts(await invoice(inv.id))).toEqual(['147.73', '0', '0', '0', 'SUCCEEDED'])
  })

  it('an invoice the note had settled owes again: 100.00 paid, 47.73 adjusted, voided → 47.73 PENDING', async () => {
    const inv = await finalized()
    expect((await h.http('PUT', `/v1/invoices/${inv.id}/payment`, { body: { payment_status: 'PENDING', amount: '100.00' } })).status).toBe(200)
    const note = await finalizedNote(inv.id, [[inv.line_items[1].id, '47.73']])
    // 147.73 − 47.73 = 100.00 due, 100.00 paid: settled.
    const settled = await invoice(inv.id)
    expect(amounts(settled)).toEqual(['47.73', '100', '100', '0', 'SUCCEEDED'])

    expect((await post(`/v1/creditnotes/${note.id}/void`)).status).toBe(200)
    const owing = await invoice(inv.id)
    expect(amounts(owing)).toEqual(['0', '147.73', '100', '47.73', 'PENDING'])
    expect(owing.paid_at).toBeNull()
    // The customer pays the rest: paid in full again.
    const paid = await h.http('PUT', `/v1/invoices/${inv.id}/payment`, { body: { payment_status: 'SUCCEEDED' } })
    expect(amounts(paid.body)).toEqual(['0', '147.73', '147.73', '0', 'SUCCEEDED'])
  })
})

describe('voiding a finalized REFUND', () => {
  it('is refused: the refund succeeded and its money left; nothing changes', async () => {
    const inv = await finalized()
    await h.http('PUT', `/v1/invoices/${inv.id}/payment`, { body: { payment_status: 'SUCCEEDED' } })
    const refund = await finalizedNote(inv.id, [[inv.line_items[0].id, '49.00']])
    expect([refund.credit_note_type, refund.refund_status]).toEqual(['REFUND', 'SUCCEEDED'])
    const before = await invoice(inv.id)

    const res = await post(`/v1/creditnotes/${refund.id}/void`)
    expect([res.status, res.body.code, res.body.details]).toEqual([400, 'invalid_operation', { credit_note_type: 'REFUND' }])
    const after = await invoice(inv.id)
    expect([after.refunded_amount, after.payment_status, after.version]).toEqual(['49', 'PARTIALLY_REFUNDED', before.version])
    expect((await h.http('GET', `/v1/creditnotes/${refund.id}`)).body.credit_note_status).toBe('FINALIZED')
  })
})
