// payment_behavior default_incomplete: a subscription charged automatically waits, incomplete, until its
// first invoice is paid in full (PUT /v1/invoices/{id}/payment), then is active with subscription.activated.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../../core/clock.ts'
import { customer, eventsOf, fixedPrice, plan } from '../../../test/catalog.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'

let h: Harness
const clock = fixedClock('2024-04-01T00:00:00Z')
let planId: string

beforeAll(async () => {
  h = await startHarness({ clock, env: { KAFKA_BROKERS: '', INVOICE_GRACE_PERIOD_MINUTES: '0' } })
  planId = (await plan(h, { prices: [fixedPrice('30.00', { display_name: 'Seat' })] })).id
})
afterAll(() => h?.stop())

async function subscription(payment_behavior: string) {
  const cus = await customer(h)
  const res = await h.http('POST', '/v1/subscriptions', { body: { customer_id: cus.id, plan_id: planId, currency: 'USD', billing_period: 'MONTHLY', collection_method: 'charge_automatically', payment_behavior } })
  expect(res.status, JSON.stringify(res.body)).toBe(201)
  return res.body
}

const firstInvoice = async (subId: string) => (await h.http('GET', `/v1/invoices?subscription_id=${subId}`)).body.items[0]
const pay = (id: string, body: Record<string, string>) => h.http('PUT', `/v1/invoices/${id}/payment`, { body })
const status = async (subId: string) => (await h.http('GET', `/v1/subscriptions/${subId}`)).body.subscription_status

describe('an incomplete subscription becomes active when its first invoice is paid', () => {
  it('stays incomplete through a partial payment, then activates on the rest', async () => {
    const waiting = await subscription('default_incomplete')
    const active = await subscription('default_active')
    expect([waiting.subscription_status, active.subscription_status]).toEqual(['incomplete', 'active'])
    await h.http('POST', '/v1/jobs/billing-run/run')
    const invoice = await firstInvoice(waiting.id)
    expect([invoice.billing_reason, invoice.invoice_status, invoice.amount_due]).toEqual(['SUBSCRIPTION_CREATE', 'FINALIZED', '30'])

    // 10.00 of 30.00: PENDING, not paid yet.
    expect((await pay(invoice.id, { payment_status: 'PENDING', amount: '10.00' })).body.amount_remaining).toBe('20')
    expect(await status(waiting.id)).toBe('incomplete')
    expect(await eventsOf(h, waiting.id)).toEqual(['subscription.created'])

    const paid = await pay(invoice.id, { payment_status: 'SUCCEEDED' })
    expect([paid.status, paid.body.payment_status, paid.body.amount_remaining]).toEqual([200, 'SUCCEEDED', '0'])
    expect(await status(waiting.id)).toBe('active')
    expect(await eventsOf(h, waiting.id)).toEqual(['subscription.created', 'subscription.activated'])

    // Paying an active subscription's invoice announces nothing for the subscription.
    const other = await firstInvoice(active.id)
    expect((await pay(other.id, { payment_status: 'SUCCEEDED' })).body.payment_status).toBe('SUCCEEDED')
    expect(await eventsOf(h, active.id)).toEqual(['subscription.created'])
  })

  it('a failed payment leaves it incomplete', async () => {
    const waiting = await subscription('default_incomplete')
    await h.http('POST', '/v1/jobs/billing-run/run')
    const invoice = await firstInvoice(waiting.id)
    expect((await pay(invoice.id, { payment_status: 'FAILED' })).body.payment_status).toBe('FAILED')
    expect(await status(waiting.id)).toBe('incomplete')
    expect(await eventsOf(h, waiting.id)).toEqual(['subscription.created'])
  })
})
