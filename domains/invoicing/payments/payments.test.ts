// Payments as records over HTTP: made and moved by PUT /v1/invoices/{id}/payment and by wallet payments,
// read and filtered at /v1/payments, each change announced to a webhook subscriber.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../../core/clock.ts'
import { customer, eventsOf } from '../../../test/catalog.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { call, newWallet } from '../../../test/wallets.ts'

const clock = fixedClock('2025-06-10T09:00:00Z')
let h: Harness

beforeAll(async () => {
  h = await startHarness({ clock, env: { KAFKA_BROKERS: '' } })
})
afterAll(() => h?.stop())

/** A finalized one-off USD invoice of one line. */
async function finalized(customerId: string, amount: string) {
  const body = { customer_id: customerId, currency: 'USD', subtotal: amount, total: amount, amount_due: amount, line_items: [{ display_name: 'Consulting', amount, quantity: '1' }] }
  const inv = await call(h, 'POST', '/v1/invoices', body, 201)
  await call(h, 'POST', `/v1/invoices/${inv.id}/finalize`)
  return call(h, 'GET', `/v1/invoices/${inv.id}`)
}

const pay = (invoiceId: string, body: Record<string, unknown>) => call(h, 'PUT', `/v1/invoices/${invoiceId}/payment`, body)
const brief = (p: any) => [p.payment_method_type, p.amount, p.payment_status, p.gateway_payment_id ?? null, p.error_message ?? null]
const paymentsOf = async (query: string) => (await call(h, 'GET', `/v1/payments?${query}&order=asc`)).items

describe('payments recorded on an invoice', () => {
  it('a pending transfer, its partial arrival and the rest: two payments, each announced', async () => {
    const c = await customer(h)
    const inv = await finalized(c.id, '100.00')
    await pay(inv.id, { payment_status: 'PENDING', payment_method_type: 'ACH', gateway_payment_id: 'wire-778' })
    const [pending] = await paymentsOf(`invoice_id=${inv.id}`)
    expect(pending).toMatchObject({ destination_type: 'INVOICE', destination_id: inv.id, customer_id: c.id, currency: 'USD', invoice_number: inv.invoice_number })
    expect(brief(pending)).toEqual(['ACH', '100', 'PENDING', 'wire-778', null])

    // 40.00 of the transfer arrives: the transfer is a payment of 40.00, and 60.00 is still owed.
    await pay(inv.id, { payment_status: 'PENDING', amount: '40.00', payment_method_type: 'ACH', gateway_payment_id: 'wire-778' })
    // The rest by cheque, without an amount: what remains, 60.00.
    const paid = await pay(inv.id, { payment_status: 'SUCCEEDED' })
    expect([paid.payment_status, paid.amount_paid, paid.amount_remaining]).toEqual(['SUCCEEDED', '100', '0'])

    const payments = await paymentsOf(`invoice_id=${inv.id}`)
    expect(payments.map(brief)).toEqual([
      ['ACH', '40', 'SUCCEEDED', 'wire-778', null],
      ['OFFLINE', '60', 'SUCCEEDED', null, null],
    ])
    expect(payments[0]).toMatchObject({ id: pending.id, succeeded_at: clock.now().toISOString() })
    expect(await eventsOf(h, pending.id)).toEqual(['payment.created', 'payment.pending', 'payment.updated', 'payment.success'])
    expect(await eventsOf(h, payments[1].id)).toEqual(['payment.created', 'payment.success'])
    expect(await call(h, 'GET', `/v1/payments/${pending.id}`)).toMatchObject({ id: pending.id, amount: '40', payment_status: 'SUCCEEDED' })
  })

  it('a failure is kept with its reason; the retry is a payment of its own', async () => {
    const c = await customer(h)
    const inv = await finalized(c.id, '25.50')
    await pay(inv.id, { payment_status: 'FAILED', error_message: 'cheque bounced' })
    await pay(inv.id, { payment_status: 'SUCCEEDED', amount: '25.50' })
    const payments = await paymentsOf(`customer_id=${c.id}`)
    expect(payments.map(brief)).toEqual([
      ['OFFLINE', '25.5', 'FAILED', null, 'cheque bounced'],
      ['OFFLINE', '25.5', 'SUCCEEDED', null, null],
    ])
    expect(payments[0].failed_at).toBe(clock.now().toISOString())
    expect(await eventsOf(h, payments[0].id)).toEqual(['payment.created', 'payment.failed'])
    expect((await paymentsOf(`customer_id=${c.id}&payment_status=FAILED`)).map((p: any) => p.id)).toEqual([payments[0].id])
  })

  it('a wallet payment is a CREDITS payment', async () => {
    const c = await customer(h)
    await newWallet(h, c.id, { initial_credits_to_load: '30' })
    // Credits pay at finalization: this invoice is made after they were spent on another.
    await finalized(c.id, '30.00')
    const inv = await finalized(c.id, '45.00')
    await call(h, 'POST', `/v1/wallets/${(await call(h, 'GET', `/v1/customers/${c.id}/wallets`))[0].id}/top-up`, { credits_to_add: '20', transaction_reason: 'FREE_CREDIT_GRANT' })
    await call(h, 'POST', `/v1/invoices/${inv.id}/payment/attempt`)
    // 20 credits at 1.00 each pay 20.00 of 45.00.
    expect((await paymentsOf(`invoice_id=${inv.id}`)).map(brief)).toEqual([['CREDITS', '20', 'SUCCEEDED', null, null]])
  })

  it('refuses a bad method and an unknown payment, writing nothing', async () => {
    const c = await customer(h)
    const inv = await finalized(c.id, '10.00')
    const bad = await h.http('PUT', `/v1/invoices/${inv.id}/payment`, { body: { payment_status: 'SUCCEEDED', payment_method_type: 'CASH' } })
    expect([bad.status, bad.body.code, Object.keys(bad.body.details ?? {})]).toEqual([400, 'validation_error', ['payment_method_type']])
    expect(await paymentsOf(`invoice_id=${inv.id}`)).toEqual([])
    expect((await h.http('GET', '/v1/payments/pay_missing')).status).toBe(404)
  })
})

describe('payment webhooks', () => {
  it('a subscriber to payment events receives them, in order', async () => {
    const bodies: any[] = []
    const server = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        bodies.push(JSON.parse(Buffer.concat(chunks).toString('utf8')))
        res.writeHead(200).end('ok')
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`
      const filter_types = ['payment.created', 'payment.updated', 'payment.success', 'payment.failed', 'payment.pending']
      await call(h, 'POST', '/v1/webhooks/endpoints', { url, filter_types }, 201)
      const c = await customer(h)
      const inv = await finalized(c.id, '80.00')
      await pay(inv.id, { payment_status: 'PROCESSING', payment_method_type: 'CARD' })
      await pay(inv.id, { payment_status: 'SUCCEEDED', payment_method_type: 'CARD' })
      await call(h, 'POST', '/v1/jobs/webhook-delivery/run')
      const mine = bodies.filter((b) => b.payment?.destination_id === inv.id)
      expect(mine.map((b) => [b.event_type, b.payment.payment_status, b.payment.amount])).toEqual([
        ['payment.created', 'PROCESSING', '80'],
        ['payment.updated', 'SUCCEEDED', '80'],
        ['payment.success', 'SUCCEEDED', '80'],
      ])
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  })
})
