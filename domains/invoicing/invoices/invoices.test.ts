// One-off invoices over HTTP: creation checked against the engine, idempotency (rule 11), drafts,
// finalization with gap-free numbers (also under concurrency), payments, voiding, coupons with taxes,
// credit notes (also concurrent), the PDF and the outbox.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../../core/clock.ts'
import { customer, eventsOf, feature, fixedPrice, meter, plan, usagePrice } from '../../../test/catalog.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import type { CustomerWire, InvoiceWire, LineItemWire } from '../../../test/wire.ts'

/** The PDF's text as a reader sees it, a line per text line (pdf.js, so no system tool is needed). */
async function pdfText(bytes: Buffer): Promise<string> {
  const doc = await getDocument({ data: new Uint8Array(bytes), verbosity: 0 }).promise
  let text = ''
  for (let n = 1; n <= doc.numPages; n++) {
    const content = await (await doc.getPage(n)).getTextContent()
    for (const item of content.items) if ('str' in item) text += item.str + (item.hasEOL ? '\n' : ' ')
  }
  return text
}

let h: Harness
let cus: CustomerWire
let pricePro: string
let priceStorage: string
let catalogPlan: string
const clock = fixedClock('2024-05-10T12:00:00Z')

beforeAll(async () => {
  h = await startHarness({ clock })
  cus = await customer(h, { name: 'Acme GmbH', email: 'billing@acme.test', address_line1: 'Hauptstr. 1', address_city: 'Berlin', address_postal_code: '10115', address_country: 'DE' })
  // Lines may name the prices they bill; those must be prices of this environment.
  const catalog = await plan(h, { prices: [fixedPrice('49'), usagePrice((await meter(h)).id, '0.08')] })
  ;[pricePro, priceStorage] = catalog.prices.map((p: { id: string }) => p.id)
  catalogPlan = catalog.id
})
afterAll(() => h?.stop())

const post = (path: string, body?: unknown) => h.http('POST', path, { body })
const oneOff = (over: Record<string, unknown> = {}) => ({
  customer_id: cus.id,
  currency: 'USD',
  subtotal: '147.73',
  total: '147.73',
  amount_due: '147.73',
  line_items: [
    { display_name: 'Pro plan', amount: '49.00', quantity: '1', price_id: pricePro },
    { display_name: 'Storage (GB)', amount: '98.73', quantity: '1234.5', price_id: priceStorage, price_type: 'USAGE' },
  ],
  ...over,
})

async function draft(over: Record<string, unknown> = {}) {
  const res = await post('/v1/invoices', oneOff(over))
  expect(res.status, JSON.stringify(res.body)).toBe(201)
  return res.body
}

describe('creating one-off invoices', () => {
  it('creates a DRAFT whose amounts are the lines, with customer and lines embedded', async () => {
    const inv = await draft()
    expect([inv.invoice_status, inv.payment_status, inv.invoice_type, inv.billing_reason]).toEqual(['DRAFT', 'PENDING', 'ONE_OFF', 'MANUAL'])
    expect([inv.subtotal, inv.total, inv.amount_due, inv.amount_remaining, inv.invoice_number]).toEqual(['147.73', '147.73', '147.73', '147.73', null])
    expect(inv.customer.id).toBe(cus.id)
    expect(inv.line_items.map((l: LineItemWire) => [l.display_name, l.amount])).toEqual([
      ['Pro plan', '49'],
      ['Storage (GB)', '98.73'],
    ])
    expect(await eventsOf(h, inv.id)).toEqual(['invoice.update'])
  })

  it('refuses amounts the lines do not give, naming the field, and writes nothing', async () => {
    const before = (await h.http('GET', '/v1/invoices')).body.pagination.total
    const wrong = await post('/v1/invoices', oneOff({ total: '147.74' }))
    expect(wrong.status).toBe(400)
    expect(wrong.body.details).toEqual({ total: expect.stringContaining('147.73') })
    const over = await post('/v1/invoices', oneOff({ line_items: [], subtotal: '10.00', total: '10.00', amount_due: '10.01' }))
    expect([over.status, Object.keys(over.body.details)]).toEqual([400, ['amount_due']])
    const neg = await post('/v1/invoices', oneOff({ line_items: [{ amount: '-1.00', quantity: '1' }] }))
    expect([neg.status, Object.keys(neg.body.details)]).toEqual([400, ['line_items[0].amount']])
    const cents = await post('/v1/invoices', oneOff({ line_items: [{ amount: '1.005', quantity: '1' }], subtotal: '1.005', total: '1.005', amount_due: '1.005' }))
    expect(cents.status).toBe(400)
    expect((await h.http('GET', '/v1/invoices')).body.pagination.total).toBe(before)
  })

  it('an idempotency key returns the first invoice, unless that one was voided (rule 11)', async () => {
    const first = await draft({ idempotency_key: 'order-1' })
    const again = await draft({ idempotency_key: 'order-1' })
    expect(again.id).toBe(first.id)
    expect((await post(`/v1/invoices/${first.id}/void`)).body.invoice_status).toBe('VOIDED')
    const third = await draft({ idempotency_key: 'order-1' })
    expect(third.id).not.toBe(first.id)
  })
})

describe('finalizing and paying', () => {
  it('numbers invoices INV-YYYYMM-NNNNN without gaps, once; a zero invoice is SKIPPED without a number', async () => {
    const a = await draft()
    const b = await draft()
    expect((await post(`/v1/invoices/${a.id}/finalize`)).body).toEqual({ message: expect.stringContaining('INV-202405-') })
    const twice = await post(`/v1/invoices/${a.id}/finalize`)
    expect([twice.status, twice.body.code]).toEqual([400, 'invalid_operation'])
    await post(`/v1/invoices/${b.id}/finalize`)
    const [na, nb] = await Promise.all([a, b].map(async (x) => (await h.http('GET', `/v1/invoices/${x.id}`)).body.invoice_number))
    expect(Number(nb.slice(-5))).toBe(Number(na.slice(-5)) + 1)
    const zero = await draft({ line_items: [], subtotal: '0', total: '0', amount_due: '0' })
    await post(`/v1/invoices/${zero.id}/finalize`)
    const skipped = (await h.http('GET', `/v1/invoices/${zero.id}`)).body
    expect([skipped.invoice_status, skipped.invoice_number, skipped.finalized_at]).toEqual(['SKIPPED', null, null])
    expect(await eventsOf(h, a.id)).toEqual(['invoice.update', 'invoice.update.finalized'])
  })

  it('two finalizes at once: exactly one succeeds and the sequence has no gap', async () => {
    const drafts = await Promise.all([draft(), draft(), draft()])
    const results = await Promise.all(drafts.flatMap((d) => [post(`/v1/invoices/${d.id}/finalize`), post(`/v1/invoices/${d.id}/finalize`)]))
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 400, 400, 400])
    const list = await h.http('GET', '/v1/invoices?invoice_status=FINALIZED&limit=1000')
    const numbers = list.body.items.map((i: InvoiceWire) => Number(i.invoice_number.slice(-5))).sort((x: number, y: number) => x - y)
    expect(numbers).toEqual(numbers.map((_: number, i: number) => i + 1))
  })

  it('payments follow the amounts: partial PENDING, then SUCCEEDED with paid_at, then OVERPAID', async () => {
    const inv = await draft()
    await post(`/v1/invoices/${inv.id}/finalize`)
    const put = (body: unknown) => h.http('PUT', `/v1/invoices/${inv.id}/payment`, { body })
    const partial = await put({ payment_status: 'PENDING', amount: '47.73' })
    expect([partial.body.payment_status, partial.body.amount_paid, partial.body.amount_remaining, partial.body.paid_at]).toEqual(['PENDING', '47.73', '100', null])
    const claim = await put({ payment_status: 'SUCCEEDED', amount: '50.00' })
    expect([claim.status, Object.keys(claim.body.details)]).toEqual([400, ['payment_status']])
    const rest = await put({ payment_status: 'SUCCEEDED' })
    expect([rest.body.payment_status, rest.body.amount_paid, rest.body.amount_remaining, rest.body.paid_at]).toEqual(['SUCCEEDED', '147.73', '0', '2024-05-10T12:00:00.000Z'])
    const more = await put({ payment_status: 'OVERPAID', amount: '2.27' })
    expect([more.body.payment_status, more.body.overpaid_amount]).toEqual(['OVERPAID', '2.27'])
    const back = await put({ payment_status: 'FAILED' })
    expect([back.status, back.body.code]).toEqual([400, 'invalid_operation'])
    expect((await eventsOf(h, inv.id)).filter((e) => e === 'invoice.update.payment')).toHaveLength(3)
  })

  it('a draft is edited, a finalized invoice is locked', async () => {
    const inv = await draft()
    const edited = await h.http('PUT', `/v1/invoices/${inv.id}`, { body: { line_items: [{ amount: '10.00', quantity: '2', display_name: 'Setup' }], description: 'Setup', version: inv.version } })
    expect([edited.body.total, edited.body.line_items.length, edited.body.version]).toEqual(['10', 1, 2])
    const stale = await h.http('PUT', `/v1/invoices/${inv.id}`, { body: { description: 'x', version: 1 } })
    expect([stale.status, stale.body.code]).toEqual([409, 'version_conflict'])
    await post(`/v1/invoices/${inv.id}/finalize`)
    const locked = await h.http('PUT', `/v1/invoices/${inv.id}`, { body: { line_items: [{ amount: '1.00', quantity: '1' }] } })
    expect([locked.status, locked.body.code]).toEqual([400, 'invalid_operation'])
  })
})

describe('coupons and taxes on one invoice (docs/billing.md, the USD worked example without prepaid credits)', () => {
  it('a 10% line coupon, a 5.00 invoice coupon and 8.25% tax give 132.86 taxable, 10.96 tax, 143.82 total', async () => {
    const pct = (await post('/v1/coupons', { name: 'Ten percent', type: 'percentage', cadence: 'forever', percentage_off: '10' })).body
    const off = (await post('/v1/coupons', { name: 'Five off', type: 'fixed', cadence: 'once', amount_off: '5.00', currency: 'USD', max_redemptions: 1 })).body
    await post('/v1/taxes/rates', { name: 'US Sales Tax', code: 'TAX_US', tax_rate_type: 'percentage', percentage_value: '8.25' })
    const inv = await draft({
      subtotal: '147.73',
      total: '143.82',
      amount_due: '143.82',
      coupons: [off.id],
      line_item_coupons: [{ coupon_id: pct.id, line_item_id: priceStorage }],
      tax_rate_overrides: [{ tax_rate_code: 'TAX_US', currency: 'USD' }],
    })
    expect([inv.subtotal, inv.total_discount, inv.total_tax, inv.total]).toEqual(['147.73', '14.87', '10.96', '143.82'])
    expect(inv.line_items.map((l: LineItemWire) => [l.line_item_discount, l.invoice_level_discount, l.tax_amount])).toEqual([
      ['0', '1.78', '3.9'],
      ['9.87', '3.22', '7.06'],
    ])
    expect(inv.coupon_applications.map((a: InvoiceWire['coupon_applications'][number]) => [a.coupon_id, a.discounted_amount, a.original_price, a.final_price])).toEqual([
      [pct.id, '9.87', '98.73', '88.86'],
      [off.id, '5', '137.86', '132.86'],
    ])
    expect(inv.taxes.map((t: InvoiceWire['taxes'][number]) => [t.taxable_amount, t.tax_amount, t.tax_rate.code])).toEqual([['132.86', '10.96', 'TAX_US']])
    // The fixed coupon had one redemption: a second invoice cannot take it.
    const again = await post('/v1/invoices', oneOff({ coupons: [off.id] }))
    expect([again.status, again.body.code]).toEqual([400, 'invalid_operation'])
    expect((await h.http('GET', `/v1/coupons/${off.id}`)).body.total_redemptions).toBe(1)

    // The PDF renders, and shows the number, the lines, the discounts, the tax and the totals.
    await post(`/v1/invoices/${inv.id}/finalize`)
    const pdf = await fetch(`${h.baseUrl}/v1/invoices/${inv.id}/pdf`, { headers: { 'x-api-key': h.key } })
    expect(pdf.headers.get('content-type')).toBe('application/pdf')
    const bytes = Buffer.from(await pdf.arrayBuffer())
    expect(bytes.subarray(0, 5).toString()).toBe('%PDF-')
    const text = await pdfText(bytes)
    for (const s of ['INV-202405-', 'Acme GmbH', 'Pro plan', 'Storage (GB)', '147.73 USD', 'Discount Ten percent (10%)', '-9.87 USD', 'US Sales Tax 8.25% on 132.86 USD', '10.96 USD', '143.82 USD']) expect(text).toContain(s)
    // To look at it: INVOICE_PDF_PNG=/tmp/invoice renders the pages with poppler's pdftoppm.
    if (process.env.INVOICE_PDF_PNG) {
      const dir = mkdtempSync(join(tmpdir(), 'invoice-pdf-'))
      writeFileSync(join(dir, 'invoice.pdf'), bytes)
      execFileSync('pdftoppm', ['-png', '-r', '80', join(dir, 'invoice.pdf'), process.env.INVOICE_PDF_PNG])
    }
  })
})

describe('coupon rules', () => {
  it('are checked when the coupon is made: a bad one is 400 (an unknown plan 404) naming rules.<field>, and nothing is written', async () => {
    const count = async () => (await h.http('GET', '/v1/coupons?limit=1')).body.pagination.total
    const before = await count()
    const base = { name: 'Ruled', type: 'percentage', cadence: 'forever', percentage_off: '10' }
    for (const [rules, status, field] of [
      [{ minimum_amount: '50' }, 400, 'rules.minimum_amount_currency'],
      [{ minimum_amount: '50.001', minimum_amount_currency: 'USD' }, 400, 'rules.minimum_amount'],
      [{ currencies: ['USD'] }, 400, 'rules.currencies'],
      [{ plan_ids: [] }, 400, 'rules.plan_ids'],
      [{ price_ids: 'price_x' }, 400, 'rules.price_ids'],
      [{ plan_ids: ['plan_nope'] }, 404, 'rules.plan_ids[0]'],
      [{ price_ids: [pricePro, 'price_nope'] }, 404, 'rules.price_ids[1]'],
    ] as const) {
      const res = await post('/v1/coupons', { ...base, rules })
      expect([res.status, Object.keys(res.body.details ?? {})], JSON.stringify(rules)).toEqual([status, expect.arrayContaining([field])])
    }
    const fixed = await post('/v1/coupons', { name: 'Ruled', type: 'fixed', cadence: 'once', amount_off: '5.00', currency: 'USD', rules: { minimum_amount: '200.00', minimum_amount_currency: 'EUR' } })
    expect([fixed.status, Object.keys(fixed.body.details)]).toEqual([400, ['rules.minimum_amount_currency']])
    expect(await count()).toBe(before)
    const made = await post('/v1/coupons', { name: 'Ruled', type: 'fixed', cadence: 'once', amount_off: '5.00', currency: 'usd', rules: { minimum_amount: '200.00', plan_ids: [catalogPlan] } })
    expect([made.status, made.body.rules]).toEqual([201, { minimum_amount: '200', minimum_amount_currency: 'USD', plan_ids: [catalogPlan] }])
  })

  it('discount only what they cover: 10% on Storage only is 9.87 of 147.73; a 200.00 minimum and another plan take nothing', async () => {
    const other = await plan(h)
    const storageOnly = (await post('/v1/coupons', { name: 'Storage 10%', type: 'percentage', cadence: 'forever', percentage_off: '10', rules: { price_ids: [priceStorage] } })).body
    const over200 = (await post('/v1/coupons', { name: 'Big order', type: 'fixed', cadence: 'forever', amount_off: '5.00', currency: 'USD', rules: { minimum_amount: '200.00' } })).body
    const otherPlan = (await post('/v1/coupons', { name: 'Other plan', type: 'percentage', cadence: 'forever', percentage_off: '20', rules: { plan_ids: [other.id] } })).body
    const thisPlan = (await post('/v1/coupons', { name: 'This plan', type: 'fixed', cadence: 'forever', amount_off: '1.00', currency: 'USD', rules: { plan_ids: [catalogPlan] } })).body
    const inv = await draft({
      // Pro plan 49.00 under the plan, Storage 98.73 without one: 147.73.
      line_items: [
        { display_name: 'Pro plan', amount: '49.00', quantity: '1', price_id: pricePro, plan_id: catalogPlan },
        { display_name: 'Storage (GB)', amount: '98.73', quantity: '1234.5', price_id: priceStorage, price_type: 'USAGE' },
      ],
      coupons: [storageOnly.id, over200.id, otherPlan.id, thisPlan.id],
      // 10% of Storage's 98.73 = 9.873 → 9.87; 1.00 on the Pro line only (the one under this plan); 147.73 − 10.87 = 136.86.
      total: '136.86',
      amount_due: '136.86',
    })
    expect([inv.subtotal, inv.total_discount, inv.total]).toEqual(['147.73', '10.87', '136.86'])
    expect(inv.line_items.map((l: LineItemWire) => [l.display_name, l.line_item_discount, l.invoice_level_discount])).toEqual([
      ['Pro plan', '0', '1'],
      ['Storage (GB)', '0', '9.87'],
    ])
    // Only the coupons that discounted something are applied: 98.73 was Storage-only's base, 49.00 this plan's.
    expect(inv.coupon_applications.map((a: InvoiceWire['coupon_applications'][number]) => [a.coupon_id, a.original_price, a.discounted_amount])).toEqual([
      [storageOnly.id, '98.73', '9.87'],
      [thisPlan.id, '49', '1'],
    ])
  })
})

describe('the PDF of usage lines', () => {
  it("shows a usage line's quantity in its feature's reporting unit: 1500000 tokens at 1000000 per M token are 1.5 M tokens", async () => {
    const tokens = await feature(h, 'metered', { reporting_unit: { unit_singular: 'M token', unit_plural: 'M tokens', conversion_rate: 1000000 } })
    const oneM = await feature(h, 'metered', { reporting_unit: { unit_singular: 'M token', unit_plural: 'M tokens', conversion_rate: 1000000 } })
    const inv = await draft({
      subtotal: '54.50',
      total: '54.50',
      amount_due: '54.50',
      line_items: [
        { display_name: 'Pro plan', amount: '49.00', quantity: '1', price_id: pricePro },
        // 1.5 M tokens × 2.00 = 3.00; 1 M token × 2.00 = 2.00; 1234.5 GB without a reporting unit × 0.0004 ≈ 0.50.
        { display_name: 'Input tokens', amount: '3.00', quantity: '1500000', price_type: 'USAGE', meter_id: tokens.meter_id },
        { display_name: 'Output tokens', amount: '2.00', quantity: '1000000', price_type: 'USAGE', meter_id: oneM.meter_id },
        { display_name: 'Storage (GB)', amount: '0.50', quantity: '1234.5', price_id: priceStorage, price_type: 'USAGE' },
      ],
    })
    await post(`/v1/invoices/${inv.id}/finalize`)
    const pdf = await fetch(`${h.baseUrl}/v1/invoices/${inv.id}/pdf`, { headers: { 'x-api-key': h.key } })
    expect(pdf.status).toBe(200)
    const text = await pdfText(Buffer.from(await pdf.arrayBuffer()))
    for (const s of ['Input tokens', '1.5 M tokens', '3.00 USD', 'Output tokens', '1 M token ', '1234.5', '54.50 USD']) expect(text).toContain(s)
    expect(text).not.toContain('1500000')
  })
})

describe('credit notes', () => {
  async function finalized() {
    const inv = await draft()
    await post(`/v1/invoices/${inv.id}/finalize`)
    return (await h.http('GET', `/v1/invoices/${inv.id}`)).body
  }

  it('an unpaid invoice gets ADJUSTMENTs net of earlier notes; a paid one REFUNDs; numbers CN-…', async () => {
    const inv = await finalized()
    const [pro, storage] = inv.line_items
    const note = await post('/v1/creditnotes', { invoice_id: inv.id, reason: 'BILLING_ERROR', line_items: [{ invoice_line_item_id: storage.id, amount: '40.00' }] })
    expect([note.status, note.body.credit_note_type, note.body.credit_note_status, note.body.total_amount]).toEqual([201, 'ADJUSTMENT', 'DRAFT', '40'])
    // The draft reserves its 40.00: 58.73 is left on the storage line.
    const over = await post('/v1/creditnotes', { invoice_id: inv.id, reason: 'BILLING_ERROR', line_items: [{ invoice_line_item_id: storage.id, amount: '58.74' }] })
    expect([over.status, over.body.details]).toEqual([400, { 'line_items[0].amount': expect.stringContaining('58.73') }])
    const fin = await post(`/v1/creditnotes/${note.body.id}/finalize`)
    expect([fin.body.credit_note_status, fin.body.credit_note_number]).toEqual(['FINALIZED', 'CN-202405-00001'])
    const after = (await h.http('GET', `/v1/invoices/${inv.id}`)).body
    expect([after.adjustment_amount, after.amount_due, after.amount_remaining, after.payment_status]).toEqual(['40', '107.73', '107.73', 'PENDING'])
    await h.http('PUT', `/v1/invoices/${inv.id}/payment`, { body: { payment_status: 'SUCCEEDED' } })
    const refund = await post('/v1/creditnotes', { invoice_id: inv.id, reason: 'UNSATISFACTORY', line_items: [{ invoice_line_item_id: pro.id, amount: '49.00' }] })
    expect(refund.body.credit_note_type).toBe('REFUND')
    const done = await post(`/v1/creditnotes/${refund.body.id}/finalize`)
    expect([done.body.credit_note_number, done.body.refund_status, done.body.invoice.refunded_amount, done.body.invoice.payment_status]).toEqual(['CN-202405-00002', 'SUCCEEDED', '49', 'PARTIALLY_REFUNDED'])
    expect(await eventsOf(h, refund.body.id)).toEqual(['credit_note.created', 'credit_note.updated'])
    const draftNote = await post('/v1/creditnotes', { invoice_id: (await draft()).id, reason: 'DUPLICATE', line_items: [{ invoice_line_item_id: 'x', amount: '1.00' }] })
    expect([draftNote.status, draftNote.body.code]).toEqual([400, 'invalid_operation'])
  })

  it('two notes at once for the whole line: one is made, the other refused', async () => {
    const inv = await finalized()
    const line = inv.line_items[1]
    const body = { invoice_id: inv.id, reason: 'DUPLICATE', line_items: [{ invoice_line_item_id: line.id, amount: '98.73' }] }
    const results = await Promise.all([post('/v1/creditnotes', body), post('/v1/creditnotes', body)])
    expect(results.map((r) => r.status).sort()).toEqual([201, 400])
    const notes = await h.http('GET', `/v1/creditnotes?invoice_id=${inv.id}`)
    expect(notes.body.items.map((n: { total_amount: string }) => n.total_amount)).toEqual(['98.73'])
  })
})
