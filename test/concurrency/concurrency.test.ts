// Identical requests sent at the same moment: exactly one effect, and a well-formed answer for every one
// of them (the same record, or a 4xx with the error body), never a 5xx. Idempotent creates (invoices,
// credit notes, top-ups, debits with one key; customers with one external_id), finalize, void, payment,
// debits racing for the same credits. On PGlite requests share one connection; under DATABASE_URL they
// run in parallel transactions of a real Postgres.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { customer } from '../catalog.ts'
import { startHarness, type Harness } from '../harness.ts'

let h: Harness
let cus: { id: string }

beforeAll(async () => {
  h = await startHarness({ env: { RATE_LIMIT_PER_SECOND: '100000' } })
  cus = await customer(h)
})
afterAll(() => h?.stop())

interface Answer {
  status: number
  body: any
}

/** Sends `n` copies of one request at once. */
const burst = (n: number, method: string, path: string, body?: unknown): Promise<Answer[]> =>
  Promise.all(Array.from({ length: n }, () => h.http(method, path, { body })))

/** No 5xx; every 4xx carries the error body; returns the successes. */
function wellFormed(answers: Answer[], allowed: number[]): Answer[] {
  for (const a of answers) {
    expect(a.status, JSON.stringify(a.body)).toBeLessThan(500)
    if (a.status >= 400) {
      expect(allowed, JSON.stringify(a.body)).toContain(a.status)
      expect(a.body).toMatchObject({ code: expect.any(String), message: expect.any(String), http_status_code: a.status, details: expect.any(Object) })
    }
  }
  return answers.filter((a) => a.status < 300)
}

const oneOff = (extra: Record<string, unknown> = {}) => ({
  customer_id: cus.id,
  currency: 'USD',
  subtotal: '12.50',
  total: '12.50',
  amount_due: '12.50',
  line_items: [{ display_name: 'Consulting', amount: '12.50', quantity: '1' }],
  ...extra,
})

async function invoice(extra: Record<string, unknown> = {}): Promise<any> {
  const res = await h.http('POST', '/v1/invoices', { body: oneOff(extra) })
  expect(res.status, JSON.stringify(res.body)).toBe(201)
  return res.body
}

const count = async (sql: string, ...values: unknown[]): Promise<number> =>
  Number((await h.running.deps.sql.unsafe<{ n: number }[]>(sql, values as never[]))[0].n)

describe('concurrent identical requests', () => {
  it('20 one-off invoice creations with one idempotency key make one invoice, answered to all', async () => {
    const answers = await burst(20, 'POST', '/v1/invoices', oneOff({ idempotency_key: 'order-race-1' }))
    const ok = wellFormed(answers, [409])
    expect(ok.length).toBeGreaterThan(0)
    expect(new Set(ok.map((a) => a.body.id)).size).toBe(1)
    expect(await count(`SELECT count(*) AS n FROM invoices WHERE idempotency_key = $1`, 'order-race-1')).toBe(1)
  })

  it('20 customers with one external_id make one customer; the others are already_exists', async () => {
    const answers = await burst(20, 'POST', '/v1/customers', { external_id: 'race-customer' })
    const ok = wellFormed(answers, [409])
    expect(ok).toHaveLength(1)
    expect(answers.filter((a) => a.status === 409).every((a) => a.body.code === 'already_exists')).toBe(true)
    expect(await count(`SELECT count(*) AS n FROM customers WHERE external_id = $1 AND status = 'published'`, 'race-customer')).toBe(1)
  })

  it('10 finalizes of one invoice give it one number', async () => {
    const inv = await invoice()
    const answers = await burst(10, 'POST', `/v1/invoices/${inv.id}/finalize`)
    expect(wellFormed(answers, [400, 409]).length).toBeGreaterThanOrEqual(1)
    const after = (await h.http('GET', `/v1/invoices/${inv.id}`)).body
    expect(after.invoice_status).toBe('FINALIZED')
    expect(after.invoice_number).toMatch(/^INV-/)
    expect(await count(`SELECT count(*) AS n FROM invoices WHERE invoice_number = $1`, after.invoice_number)).toBe(1)
    // The next invoice takes the next number: no number was spent twice or skipped.
    const next = await invoice()
    await h.http('POST', `/v1/invoices/${next.id}/finalize`)
    const seq = (n: string) => Number(n.split('-').pop())
    expect(seq((await h.http('GET', `/v1/invoices/${next.id}`)).body.invoice_number)).toBe(seq(after.invoice_number) + 1)
  })

  it('10 voids of one invoice void it once and announce it once', async () => {
    const inv = await invoice()
    const answers = await burst(10, 'POST', `/v1/invoices/${inv.id}/void`)
    expect(wellFormed(answers, [400, 409]).length).toBeGreaterThanOrEqual(1)
    expect((await h.http('GET', `/v1/invoices/${inv.id}`)).body.invoice_status).toBe('VOIDED')
    expect(await count(`SELECT count(*) AS n FROM webhook_events WHERE entity_id = $1 AND event_type = 'invoice.update.voided'`, inv.id)).toBe(1)
  })

  it('10 identical payments of an invoice pay it once', async () => {
    const inv = await invoice()
    await h.http('POST', `/v1/invoices/${inv.id}/finalize`)
    const answers = await burst(10, 'PUT', `/v1/invoices/${inv.id}/payment`, { payment_status: 'SUCCEEDED', amount: '12.50' })
    expect(wellFormed(answers, [400, 409]).length).toBeGreaterThanOrEqual(1)
    const after = (await h.http('GET', `/v1/invoices/${inv.id}`)).body
    expect([after.payment_status, after.amount_paid, after.amount_remaining]).toEqual(['SUCCEEDED', '12.5', '0'])
  })

  it('credit notes: one per idempotency key, and racing notes never credit more than the invoice', async () => {
    const inv = await invoice()
    await h.http('POST', `/v1/invoices/${inv.id}/finalize`)
    await h.http('PUT', `/v1/invoices/${inv.id}/payment`, { body: { payment_status: 'SUCCEEDED', amount: '12.50' } })
    const line = (await h.http('GET', `/v1/invoices/${inv.id}`)).body.line_items[0].id
    const note = (amount: string, key?: string) => ({ invoice_id: inv.id, reason: 'BILLING_ERROR', idempotency_key: key, line_items: [{ invoice_line_item_id: line, amount }] })

    const keyed = wellFormed(await burst(10, 'POST', '/v1/creditnotes', note('2.00', 'refund-race-1')), [409])
    expect(new Set(keyed.map((a) => a.body.id)).size).toBe(1)
    expect(await count(`SELECT count(*) AS n FROM credit_notes WHERE idempotency_key = $1`, 'refund-race-1')).toBe(1)

    // 10.50 is left; ten notes of 4.00 at once: two fit, the rest are refused.
    const racing = wellFormed(await burst(10, 'POST', '/v1/creditnotes', note('4.00')), [400, 409])
    expect(racing).toHaveLength(2)
    expect(await count(`SELECT count(*) AS n FROM credit_notes WHERE invoice_id = $1`, inv.id)).toBe(3)
  })

  it('wallet top-ups and debits with one idempotency key move credits once; racing debits never overdraw', async () => {
    const wallet = (await h.http('POST', '/v1/wallets', { body: { customer_id: cus.id, currency: 'USD' } })).body
    const balance = async () => (await h.http('GET', `/v1/wallets/${wallet.id}`)).body.credit_balance
    const topUps = wellFormed(await burst(10, 'POST', `/v1/wallets/${wallet.id}/top-up`, { credits_to_add: '10', transaction_reason: 'FREE_CREDIT_GRANT', idempotency_key: 'topup-race-1' }), [409])
    expect(topUps.length).toBeGreaterThan(0)
    expect(await balance()).toBe('10')
    const debits = wellFormed(await burst(10, 'POST', `/v1/wallets/${wallet.id}/debit`, { credits: '1.5', idempotency_key: 'debit-race-1' }), [409])
    expect(debits.length).toBeGreaterThan(0)
    expect(await balance()).toBe('8.5')
    // Ten different debits of 3 against 8.5: two succeed, the rest are refused; the balance never goes below 0.
    const racing = await Promise.all(Array.from({ length: 10 }, (_, i) => h.http('POST', `/v1/wallets/${wallet.id}/debit`, { body: { credits: '3', idempotency_key: `debit-race-2-${i}` } })))
    expect(wellFormed(racing, [400, 409])).toHaveLength(2)
    expect(await balance()).toBe('2.5')
  })
})
