// The customer portal's API on the real engines: a session opened with an API key reads one customer's billing
// with X-Session-Token and nothing of another customer's (ids in paths answer 404), only finalized documents,
// stored as a hash, for one hour; revoked by the biller or by the customer signing out; refused with the error body.
import { createHash } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../core/clock.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { asCustomer, openSession, seedPortal, type PortalSeed } from '../../test/portal.ts'
import { startFakeStripe, type FakeStripe } from '../../test/fake-stripe.ts'

const clock = fixedClock(new Date())
let h: Harness
let seed: PortalSeed

beforeAll(async () => {
  h = await startHarness({ clock, env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0' } })
  seed = await seedPortal(h)
})
afterAll(() => h?.stop())

describe('opening a portal session', () => {
  it('answers a link to the page, the token and an expiry one hour ahead; stores only the token’s hash', async () => {
    const res = await h.http('GET', `/v1/customers/portal/${seed.ours.external_id}`)
    expect(res.status).toBe(200)
    expect(Object.keys(res.body).sort()).toEqual(['expires_at', 'token', 'url'])
    expect(res.body.url).toBe(`${h.baseUrl}/portal/#token=${encodeURIComponent(res.body.token)}`)
    expect(new Date(res.body.expires_at).getTime()).toBe(clock.now().getTime() + 3600_000)
    const rows = await h.running.deps.sql`SELECT * FROM portal_sessions WHERE customer_id = ${seed.ours.id}`
    expect(JSON.stringify(rows)).not.toContain(res.body.token)
    const digest = createHash('sha256').update(res.body.token).digest()
    expect(rows.some((r) => Buffer.compare(r.token_hash as Buffer, digest) === 0)).toBe(true)
  })

  it('needs a write key and a customer of the key’s environment', async () => {
    const reader = (await h.http('POST', '/v1/secrets/api/keys', { body: { name: 'reader', roles: ['read'] } })).body.api_key
    const denied = await h.http('GET', `/v1/customers/portal/${seed.ours.external_id}`, { key: reader })
    expect(denied.status).toBe(403)
    const missing = await h.http('GET', '/v1/customers/portal/no-such-customer')
    expect(missing.status).toBe(404)
    expect(missing.body).toMatchObject({ code: 'not_found', http_status_code: 404 })
    const other = await h.newTenant()
    const elsewhere = await h.http('GET', `/v1/customers/portal/${seed.ours.external_id}`, { key: other.apiKey })
    expect(elsewhere.status).toBe(404)
  })
})

describe('a session reads its one customer', () => {
  let token: string
  beforeAll(async () => {
    token = (await openSession(h, seed.ours.external_id)).token
  })

  it('sees the customer, its usage against the limit, subscriptions, finalized invoices, credit notes and wallets', async () => {
    const info = await asCustomer(h, token, 'GET', '/info')
    expect(info.body).toMatchObject({ id: seed.ours.id, name: 'Acme Analytics' })
    const usage = await asCustomer(h, token, 'GET', '/usage')
    expect(usage.body.features).toHaveLength(1)
    expect(usage.body.features[0]).toMatchObject({ current_usage: '13', total_limit: 20, usage_percent: '65' })
    const history = await asCustomer(h, token, 'GET', '/usage/history')
    const points = history.body.features[0].points
    expect(points.reduce((s: number, p: { value: string }) => s + Number(p.value), 0)).toBe(13)
    expect(history.body.features[0]).toMatchObject({ usage_limit: 20, aggregation_type: 'COUNT' })
    const subs = await asCustomer(h, token, 'POST', '/subscriptions', {})
    expect(subs.body.items.map((s: { id: string }) => s.id)).toEqual([seed.subscription.id])
    const invoices = await asCustomer(h, token, 'POST', '/invoices', { page: 1, limit: 10 })
    expect(invoices.body.items.map((i: { id: string }) => i.id)).toEqual([seed.invoice.id])
    const notes = await asCustomer(h, token, 'POST', '/creditnotes', {})
    expect(notes.body.items.map((n: { id: string; total_amount: string }) => [n.id, n.total_amount])).toEqual([[seed.creditNote.id, '4']])
    const wallets = await asCustomer(h, token, 'POST', '/wallets', {})
    expect(wallets.body.map((w: { id: string }) => w.id)).toEqual([seed.wallet.id])
    expect(wallets.body[0].balance).toBe('75.00')
    const ledger = await asCustomer(h, token, 'GET', `/wallets/${seed.wallet.id}/transactions?limit=5`)
    expect(ledger.body.items).toHaveLength(2)
    const pdf = await h.http('GET', `/v1/customer/portal/invoices/${seed.invoice.id}/pdf`, { key: null, headers: { 'x-session-token': token } })
    expect(pdf.status).toBe(200)
    expect(pdf.headers.get('content-type')).toBe('application/pdf')
    expect(String(pdf.body).startsWith('%PDF')).toBe(true)
    const notePdf = await h.http('GET', `/v1/customer/portal/creditnotes/${seed.creditNote.id}/pdf`, { key: null, headers: { 'x-session-token': token } })
    expect([notePdf.status, notePdf.headers.get('content-type'), String(notePdf.body).slice(0, 4)]).toEqual([200, 'application/pdf', '%PDF'])
  })

  it('finds nothing of another customer, nor a draft, by id: 404 as for an id that does not exist', async () => {
    const probes = [
      `/invoices/${seed.theirInvoice.id}`,
      `/invoices/${seed.theirInvoice.id}/pdf`,
      `/invoices/${seed.draft.id}`,
      `/invoices/${seed.draft.id}/pdf`,
      `/wallets/${seed.theirWallet.id}`,
      `/wallets/${seed.theirWallet.id}/transactions`,
      `/subscriptions/${seed.theirSubscription.id}`,
      `/creditnotes/${seed.theirCreditNote.id}/pdf`,
      '/creditnotes/cn_does_not_exist/pdf',
      '/invoices/inv_does_not_exist',
    ]
    for (const path of probes) {
      const res = await asCustomer(h, token, 'GET', path)
      expect(res.status, path).toBe(404)
      expect(res.body.code, path).toBe('not_found')
      expect(JSON.stringify(res.body), path).not.toContain('Globex')
    }
    // Lists take no customer from the caller: a stray filter is refused, not obeyed.
    const smuggled = await asCustomer(h, token, 'POST', '/invoices', { customer_id: seed.theirs.id })
    expect(smuggled.status).toBe(400)
  })

  it('is no API key, and an API key is no session', async () => {
    const asKey = await h.http('GET', '/v1/customers', { key: token })
    expect(asKey.status).toBe(401)
    const keyAsSession = await asCustomer(h, h.key, 'GET', '/info')
    expect(keyAsSession.status).toBe(401)
    const keyOnly = await h.http('GET', '/v1/customer/portal/info')
    expect(keyOnly.status).toBe(401)
    expect(keyOnly.body).toMatchObject({ code: 'permission_denied', http_status_code: 401, details: { header: 'x-session-token' } })
  })
})

describe('a session ends', () => {
  it('an hour after it opened', async () => {
    const { token } = await openSession(h, seed.ours.external_id)
    clock.advance(3600_000 - 1000)
    expect((await asCustomer(h, token, 'GET', '/info')).status).toBe(200)
    clock.advance(1000)
    const expired = await asCustomer(h, token, 'GET', '/info')
    expect(expired.status).toBe(401)
    expect(expired.body.message).toMatch(/expired or was revoked/)
    expect(JSON.stringify(expired.body)).not.toContain('Acme')
  })

  it('when the biller revokes the customer’s sessions, and only that customer’s', async () => {
    const [a, b, theirs] = [await openSession(h, seed.ours.external_id), await openSession(h, seed.ours.external_id), await openSession(h, seed.theirs.external_id)]
    const revoked = await h.http('DELETE', `/v1/customers/portal/${seed.ours.external_id}`)
    expect(revoked.body).toEqual({ revoked_sessions: 2 })
    for (const { token } of [a, b]) expect((await asCustomer(h, token, 'GET', '/info')).status).toBe(401)
    expect((await asCustomer(h, theirs.token, 'GET', '/info')).status).toBe(200)
  })

  it('when the customer signs out', async () => {
    const { token } = await openSession(h, seed.ours.external_id)
    expect((await asCustomer(h, token, 'DELETE', '/session')).body).toEqual({ revoked: true })
    expect((await asCustomer(h, token, 'GET', '/info')).status).toBe(401)
  })
})

describe('the payment method', () => {
  let fake: FakeStripe
  beforeAll(async () => {
    fake = await startFakeStripe('sk_test_portal')
    const connection = await h.http('POST', '/v1/connections', { body: { name: 'Stripe', provider_type: 'stripe', api_base_url: fake.url, encrypted_secret_data: { stripe: { secret_key: 'sk_test_portal', webhook_secret: 'whsec_portal' } } } })
    expect(connection.status).toBe(201)
  })
  afterAll(() => fake?.stop())

  it("opens Stripe's billing portal for a customer with a Stripe account, coming back to the portal without the token", async () => {
    fake.addCustomer('cus_portal')
    const linked = await h.http('POST', '/v1/customers', { body: { external_id: `linked-${Date.now()}`, name: 'Linked', integrations: [{ provider_type: 'stripe', provider_entity_id: 'cus_portal' }] } })
    const { token } = await openSession(h, linked.body.external_id)
    expect((await asCustomer(h, token, 'GET', '/payment-method')).body).toEqual({ provider: 'stripe' })
    const page = await asCustomer(h, token, 'POST', '/payment-method')
    expect(page.body).toEqual({ provider: 'stripe', url: expect.stringMatching(/^https:\/\/billing\.stripe\.test\/p\/session\/bps_fake\d+$/) })
    const sent = fake.requests.find((r) => r.path === '/v1/billing_portal/sessions')!
    expect(sent.form).toEqual({ customer: 'cus_portal', return_url: `${h.baseUrl}/portal/` })
  })

  it('offers none to a customer without an account at the provider', async () => {
    const { token } = await openSession(h, seed.ours.external_id)
    expect((await asCustomer(h, token, 'GET', '/payment-method')).body).toEqual({ provider: null })
    const refused = await asCustomer(h, token, 'POST', '/payment-method')
    expect(refused.status).toBe(404)
    expect(fake.requests.filter((r) => r.path === '/v1/billing_portal/sessions')).toHaveLength(1)
  })
})
