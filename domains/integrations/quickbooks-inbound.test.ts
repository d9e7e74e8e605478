// QuickBooks' webhooks on the real engines against the QuickBooks stand-in (test/fake-quickbooks.ts): a payment
// received in QuickBooks against an invoice pushed there pays ours, once; the signature is Intuit's; payments we
// pushed are not taken back, nor pushed again; other providers are not connected.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { intuitSignature } from '../../core/quickbooks-webhooks.ts'
import { customer } from '../../test/catalog.ts'
import { startFakeQuickbooks, type FakeQuickbooks } from '../../test/fake-quickbooks.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { call } from '../../test/wallets.ts'

const TOKEN = 'verifier-token-7f3a'
let h: Harness
let qbo: FakeQuickbooks
let webhookUrl: string

beforeAll(async () => {
  h = await startHarness()
  qbo = await startFakeQuickbooks()
  const secrets = { client_id: qbo.clientId, client_secret: qbo.clientSecret, refresh_token: qbo.refreshToken, realm_id: qbo.realm, token_url: qbo.tokenUrl, webhook_verifier_token: TOKEN }
  webhookUrl = (await call(h, 'POST', '/v1/connections', { name: 'QuickBooks', provider_type: 'quickbooks', encrypted_secret_data: { quickbooks: secrets }, api_base_url: qbo.url }, 201)).webhook_url
})
afterAll(async () => {
  await qbo?.stop()
  await h?.stop()
})

const notification = (paymentIds: string[], realmId = qbo.realm) =>
  JSON.stringify({ eventNotifications: [{ realmId, dataChangeEvent: { entities: paymentIds.map((id) => ({ name: 'Payment', id, operation: 'Create', lastUpdated: new Date().toISOString() })) } }] })

const notify = (raw: string, signature = intuitSignature(TOKEN, raw), path = webhookUrl) =>
  h.http('POST', path, { key: null, raw, headers: { 'content-type': 'application/json', 'intuit-signature': signature } })

const runSync = () => call(h, 'POST', '/v1/jobs/invoice-sync/run')

/** A finalized USD invoice pushed to QuickBooks: ours and its QuickBooks id. */
async function pushed(total: string): Promise<{ id: string; qboId: string }> {
  const cust = await customer(h, { name: `Books ${total}` })
  const inv = await call(h, 'POST', '/v1/invoices', { customer_id: cust.id, currency: 'USD', subtotal: total, total, amount_due: total, line_items: [{ display_name: 'Work', amount: total, quantity: '1' }] }, 201)
  await call(h, 'POST', `/v1/invoices/${inv.id}/finalize`)
  await runSync()
  const [sync] = (await call(h, 'GET', `/v1/invoices/${inv.id}/sync`)).accounting
  expect(sync).toMatchObject({ entity_type: 'invoice', sync_status: 'SYNCED' })
  return { id: inv.id, qboId: sync.external_id }
}

const invoice = (id: string) => call(h, 'GET', `/v1/invoices/${id}`)

describe("QuickBooks' webhooks", () => {
  it('record a payment received in QuickBooks against our invoice, once, and never push it back', async () => {
    const inv = await pushed('100.00')
    const paymentId = qbo.receivePayment([{ invoiceId: inv.qboId, amount: 60.1 }])
    const raw = notification([paymentId])

    const res = await notify(raw)
    expect([res.status, res.body]).toEqual([200, { received: true, payments: [{ payment_id: paymentId, invoice_id: inv.id, outcome: 'payment_recorded' }] }])
    expect(await invoice(inv.id)).toMatchObject({ payment_status: 'PENDING', amount_paid: '60.1', amount_remaining: '39.9' })
    const payments = (await call(h, 'GET', `/v1/payments?invoice_id=${inv.id}`)).items
    expect(payments.map((p: any) => [p.amount, p.payment_status, p.payment_method_type, p.payment_gateway, p.gateway_payment_id])).toEqual([['60.1', 'SUCCEEDED', 'OFFLINE', 'quickbooks', paymentId]])

    // Intuit resends until it gets a 200, and sends Update after Create: the payment is there once.
    expect((await notify(raw)).body.payments).toEqual([{ payment_id: paymentId, invoice_id: inv.id, outcome: 'duplicate' }])
    expect((await invoice(inv.id)).amount_paid).toBe('60.1')
    // Not pushed back to QuickBooks as a second payment.
    const before = qbo.entities.Payment.size
    await runSync()
    expect(qbo.entities.Payment.size).toBe(before)

    // The rest, announced in the CloudEvents form Intuit sends since 2026.
    const rest = qbo.receivePayment([{ invoiceId: inv.qboId, amount: 39.9 }])
    const cloud = JSON.stringify([{ specversion: '1.0', id: 'evt-1', source: 'intuit.test', type: 'qbo.payment.created.v1', datacontenttype: 'application/json', time: new Date().toISOString(), intuitentityid: rest, intuitaccountid: qbo.realm, data: {} }])
    expect((await notify(cloud)).body.payments).toEqual([{ payment_id: rest, invoice_id: inv.id, outcome: 'payment_recorded' }])
    expect(await invoice(inv.id)).toMatchObject({ payment_status: 'SUCCEEDED', amount_paid: '100', amount_remaining: '0' })
  })

  it('take no payment back that was pushed from here', async () => {
    const inv = await pushed('40.00')
    await call(h, 'PUT', `/v1/invoices/${inv.id}/payment`, { payment_status: 'SUCCEEDED' })
    await runSync()
    const ours = (await call(h, 'GET', `/v1/invoices/${inv.id}/sync`)).accounting.find((r: any) => r.entity_type === 'payment').external_id
    const res = await notify(notification([ours]))
    expect(res.body.payments).toEqual([{ payment_id: ours, outcome: 'ours: pushed to QuickBooks from here' }])
    expect(await invoice(inv.id)).toMatchObject({ payment_status: 'SUCCEEDED', amount_paid: '40' })
  })

  it("refuse what Intuit did not sign, and read no other company's changes", async () => {
    const inv = await pushed('25.00')
    const raw = notification([qbo.receivePayment([{ invoiceId: inv.qboId, amount: 25 }])])
    for (const [signature, reason] of [[intuitSignature('another-token', raw), 'mismatch'], ['', 'missing']] as const) {
      const res = await notify(raw, signature)
      expect([res.status, res.body.code, res.body.details]).toEqual([401, 'permission_denied', { reason }])
    }
    expect((await notify(notification(['1'], '999'))).body).toEqual({ received: true, payments: [] })
    expect((await notify('{"id":"evt_1"}')).status).toBe(400)
    expect((await invoice(inv.id)).amount_paid).toBe('0')
  })

  it('answer that other providers are not connected, and refuse their connections naming the supported ones', async () => {
    const { tenant_id, environment_id } = (await call(h, 'GET', '/v1/connections')).items[0]
    for (const provider of ['razorpay', 'chargebee', 'hubspot', 'moyasar', 'nomod']) {
      const res = await h.http('POST', `/v1/webhooks/${provider}/${tenant_id}/${environment_id}`, { key: null, raw: '{}' })
      expect([res.status, res.body.message]).toEqual([404, `${provider} is not connected: notifications are taken from stripe and quickbooks connections only`])
    }
    const refused = await h.http('POST', '/v1/connections', { body: { name: 'Razorpay', provider_type: 'razorpay', encrypted_secret_data: {} } })
    expect([refused.status, refused.body.details]).toEqual([400, { provider_type: 'must be one of stripe, quickbooks, s3' }])
  })
})
