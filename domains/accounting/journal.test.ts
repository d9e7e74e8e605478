// The journal over HTTP after a month of one customer's finance: credits given, an invoice paid partly by
// them and the rest by transfer, a refund, an invoice voided. Every entry balances; the customer's
// receivable nets to zero; each entry names its record.
import { parse } from 'csv-parse/sync'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../core/clock.ts'
import { customer } from '../../test/catalog.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { call, newWallet } from '../../test/wallets.ts'

const clock = fixedClock('2025-05-05T10:00:00Z')
let h: Harness

beforeAll(async () => {
  h = await startHarness({ clock, env: { KAFKA_BROKERS: '' } })
})
afterAll(() => h?.stop())

const HOUR = 3_600_000

async function finalizedInvoice(customerId: string, lines: [string, string][]) {
  const total = lines.reduce((a, [, amount]) => a + Number(amount), 0).toFixed(2)
  const line_items = lines.map(([price_type, amount]) => ({ price_type, amount, quantity: '1', display_name: price_type }))
  const inv = await call(h, 'POST', '/v1/invoices', { customer_id: customerId, currency: 'USD', subtotal: total, total, amount_due: total, line_items }, 201)
  await call(h, 'POST', `/v1/invoices/${inv.id}/finalize`)
  return call(h, 'GET', `/v1/invoices/${inv.id}`)
}

const signed = (l: any) => Number(l.debit) - Number(l.credit)

describe('GET /v1/accounting/journal', () => {
  it('books a month of one customer in balanced entries, each traceable to its record', async () => {
    const c = await customer(h)
    const w = await newWallet(h, c.id, { initial_credits_to_load: '20' })
    clock.advance(HOUR)
    // 30.00 usage + 20.00 fixed; the 20 free credits pay 20.00 at finalization.
    const inv = await finalizedInvoice(c.id, [
      ['USAGE', '30.00'],
      ['FIXED', '20.00'],
    ])
    expect([inv.total_prepaid_credits_applied, inv.amount_due]).toEqual(['20', '30'])
    clock.advance(HOUR)
    await call(h, 'PUT', `/v1/invoices/${inv.id}/payment`, { payment_status: 'SUCCEEDED', amount: '30.00', payment_method_type: 'ACH' })
    const [payment] = (await call(h, 'GET', `/v1/payments?invoice_id=${inv.id}`)).items
    clock.advance(HOUR)
    const note = await call(h, 'POST', '/v1/creditnotes', { invoice_id: inv.id, reason: 'SERVICE_ISSUE', line_items: [{ invoice_line_item_id: inv.line_items[0].id, amount: '5.00' }], process_credit_note: true }, 201)
    clock.advance(HOUR)
    const voided = await finalizedInvoice(c.id, [['FIXED', '10.00']])
    clock.advance(HOUR)
    await call(h, 'POST', `/v1/invoices/${voided.id}/void`)

    const res = await call(h, 'GET', '/v1/accounting/journal?start_time=2025-05-01T00:00:00Z&end_time=2025-06-01T00:00:00Z')
    const mine = res.entries.filter((e: any) => e.customer_id === c.id)
    for (const e of mine) expect(e.lines.reduce((a: number, l: any) => a + signed(l), 0), e.id).toBeCloseTo(0, 10)
    const debit = (await call(h, 'GET', `/v1/wallets/${w.id}/transactions?type=debit`)).items[0]
    const grant = (await call(h, 'GET', `/v1/wallets/${w.id}/transactions?type=credit`)).items[0]
    expect(mine.map((e: any) => [e.source_type, e.source_id, e.lines.map((l: any) => `${l.account} ${signed(l).toFixed(2)}`)])).toEqual([
      ['wallet_transaction', grant.id, ['promotional_credits 20.00', 'customer_credit_liability -20.00']],
      ['invoice', inv.id, ['accounts_receivable 50.00', 'revenue:usage -30.00', 'revenue:fixed -20.00']],
      ['wallet_transaction', debit.id, ['accounts_receivable -20.00', 'customer_credit_liability 20.00']],
      ['payment', payment.id, ['cash 30.00', 'accounts_receivable -30.00']],
      ['credit_note', note.id, ['sales_returns 5.00', 'cash -5.00']],
      ['invoice', voided.id, ['accounts_receivable 10.00', 'revenue:fixed -10.00']],
      ['invoice_void', voided.id, ['accounts_receivable -10.00', 'revenue:fixed 10.00']],
    ])
    // 50 − 20 − 30 + 10 − 10: the customer owes nothing.
    const receivable = mine.flatMap((e: any) => e.lines).filter((l: any) => l.account === 'accounts_receivable').reduce((a: number, l: any) => a + signed(l), 0)
    expect(receivable).toBeCloseTo(0, 10)
    expect(mine[1]).toMatchObject({ id: `invoice:${inv.id}`, currency: 'USD', date: inv.finalized_at })

    // The same as CSV, a row per line: the JSON's lines, in order, each entry balanced.
    const csv = await h.http<string>('GET', '/v1/accounting/journal/export?start_time=2025-05-01T00:00:00Z&end_time=2025-06-01T00:00:00Z')
    expect([csv.status, csv.headers.get('content-type')]).toEqual([200, 'text/csv; charset=utf-8'])
    const [header, ...rows] = parse(csv.body) as string[][]
    expect(header).toEqual(['entry_id', 'date', 'source_type', 'source_id', 'customer_id', 'currency', 'description', 'account', 'debit', 'credit'])
    const lines = res.entries.flatMap((e: any) => e.lines.map((l: any) => [e.id, e.date, e.source_type, e.source_id, e.customer_id, e.currency, e.description, l.account, l.debit, l.credit]))
    expect(rows).toEqual(lines)
    const byEntry = new Map<string, number>()
    for (const r of rows) byEntry.set(r[0], (byEntry.get(r[0]) ?? 0) + Number(r[8]) - Number(r[9]))
    for (const [id, sum] of byEntry) expect(sum, id).toBeCloseTo(0, 10)

    // A range that holds none of it answers none of it.
    const before = await call(h, 'GET', '/v1/accounting/journal?start_time=2025-04-01T00:00:00Z&end_time=2025-05-01T00:00:00Z')
    expect(before.entries.filter((e: any) => e.customer_id === c.id)).toEqual([])
  })

  it("a taxed invoice's credit notes give its tax back: 110.00 with 10.00 tax credited in 33.00 and 77.00", async () => {
    clock.set('2025-07-05T10:00:00Z')
    const c = await customer(h)
    await call(h, 'POST', '/v1/taxes/rates', { name: 'VAT', code: 'JOURNAL_VAT10', tax_rate_type: 'percentage', percentage_value: '10' }, 201)
    const draft = await call(h, 'POST', '/v1/invoices', {
      customer_id: c.id,
      currency: 'USD',
      subtotal: '100.00',
      total: '110.00',
      amount_due: '110.00',
      line_items: [{ price_type: 'FIXED', amount: '100.00', quantity: '1', display_name: 'Seat' }],
      tax_rate_overrides: [{ tax_rate_code: 'JOURNAL_VAT10', currency: 'USD' }],
    }, 201)
    await call(h, 'POST', `/v1/invoices/${draft.id}/finalize`)
    const inv = await call(h, 'GET', `/v1/invoices/${draft.id}`)
    expect([inv.total_tax, inv.total]).toEqual(['10', '110'])
    clock.advance(HOUR)
    // 33.00 of 110.00 is 3.00 tax (33 × 10 / 110); the other 77.00 carries 7.00: the whole 10.00 comes back.
    const note = (amount: string) => call(h, 'POST', '/v1/creditnotes', { invoice_id: inv.id, reason: 'BILLING_ERROR', line_items: [{ invoice_line_item_id: inv.line_items[0].id, amount }], process_credit_note: true }, 201)
    const first = await note('33.00')
    clock.advance(HOUR)
    const second = await note('77.00')
    clock.advance(HOUR)
    await call(h, 'POST', `/v1/creditnotes/${first.id}/void`)

    const res = await call(h, 'GET', '/v1/accounting/journal?start_time=2025-07-01T00:00:00Z&end_time=2025-08-01T00:00:00Z')
    const mine = res.entries.filter((e: any) => e.customer_id === c.id)
    expect(mine.map((e: any) => [e.source_type, e.source_id, e.lines.map((l: any) => `${l.account} ${signed(l).toFixed(2)}`)])).toEqual([
      ['invoice', inv.id, ['accounts_receivable 110.00', 'revenue:fixed -100.00', 'tax_payable -10.00']],
      ['credit_note', first.id, ['sales_returns 30.00', 'tax_payable 3.00', 'accounts_receivable -33.00']],
      ['credit_note', second.id, ['sales_returns 70.00', 'tax_payable 7.00', 'accounts_receivable -77.00']],
      ['credit_note_void', first.id, ['sales_returns -30.00', 'tax_payable -3.00', 'accounts_receivable 33.00']],
    ])
    // What is still payable: 10.00 − 3.00 − 7.00 + 3.00 (the first note voided).
    const payable = mine.flatMap((e: any) => e.lines).filter((l: any) => l.account === 'tax_payable').reduce((a: number, l: any) => a - signed(l), 0)
    expect(payable).toBeCloseTo(3, 10)
  })

  it('refuses a range that ends before it starts or a missing bound, naming the field', async () => {
    const bad = await h.http('GET', '/v1/accounting/journal?start_time=2025-05-02T00:00:00Z&end_time=2025-05-01T00:00:00Z')
    expect([bad.status, bad.body.code, Object.keys(bad.body.details)]).toEqual([400, 'validation_error', ['end_time']])
    const missing = await h.http('GET', '/v1/accounting/journal?start_time=2025-05-02T00:00:00Z')
    expect([missing.status, missing.body.code]).toEqual([400, 'validation_error'])
    // The CSV export refuses it the same way, as the JSON error body (nothing streamed yet).
    const badCsv = await h.http('GET', '/v1/accounting/journal/export?start_time=2025-05-02T00:00:00Z&end_time=2025-05-01T00:00:00Z')
    expect([badCsv.status, badCsv.body.code, Object.keys(badCsv.body.details)]).toEqual([400, 'validation_error', ['end_time']])
  })
})
