// Payment provider integration over HTTP on the real engines (rule 16), against a local stand-in for
// the Stripe API (test/fake-stripe.ts): connections whose secrets are never returned, finalized
// invoices pushed by the invoice-sync job (checkout address, or the saved card charged), signed
// callbacks that pay the invoice once, and a provider outage retried with backoff.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../core/clock.ts'
import { D } from '../../core/money.ts'
import { signatureHeader } from '../../core/signatures.ts'
import { customer, eventsOf, fixedPrice, plan, subscribed } from '../../test/catalog.ts'
import { startFakeStripe, type FakeInvoice, type FakeStripe } from '../../test/fake-stripe.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { call, newWallet, topUp } from '../../test/wallets.ts'
import { loadConfig } from '../../core/config.ts'
import { seal, unseal } from '../../infra/secrets.ts'

const SECRET_KEY = 'sk_test_meterbill_51234567890'
const WEBHOOK_SECRET = 'whsec_meterbill_test_secret'
const clock = fixedClock('2024-05-10T12:00:00Z')
let h: Harness
let fake: FakeStripe
let connection: { id: string; tenant_id: string; environment_id: string; webhook_url: string }

const stripeConnection = (apiBaseUrl: string, secrets: Record<string, string> = { secret_key: SECRET_KEY, webhook_secret: WEBHOOK_SECRET }) => ({
  name: 'Stripe',
  provider_type: 'stripe',
  encrypted_secret_data: { stripe: { publishable_key: 'pk_test_meterbill', ...secrets } },
  api_base_url: apiBaseUrl,
})

beforeAll(async () => {
  h = await startHarness({ clock })
  fake = await startFakeStripe(SECRET_KEY)
  connection = await call(h, 'POST', '/v1/connections', stripeConnection(fake.url), 201)
  clock.advance(1000)
})
afterAll(async () => {
  await fake?.stop()
  await h?.stop()
})

const runSync = async () => (await call(h, 'POST', '/v1/jobs/invoice-sync/run')).summary
const syncOf = async (invoiceId: string) => (await call(h, 'GET', `/v1/invoices/${invoiceId}/sync`)).items
const invoice = (id: string) => call(h, 'GET', `/v1/invoices/${id}`)
const stripeInvoiceOf = (invoiceId: string) => [...fake.invoices.values()].filter((i) => i.metadata.meterbill_invoice_id === invoiceId)
const now = () => Math.floor(clock.now().getTime() / 1000)
const paymentsOf = async (invoiceId: string) =>
  (await call(h, 'GET', `/v1/payments?invoice_id=${invoiceId}&order=asc`)).items.map((p: any) => [p.payment_method_type, p.payment_gateway ?? null, p.gateway_payment_id ?? null, p.amount, p.payment_status, p.error_message ?? null])

/** A finalized one-off USD invoice with these lines (no tax, no discount). */
async function finalized(customerId: string, amounts: string[]) {
  const total = amounts.reduce((a, b) => a.plus(b), new D(0))
  const body = {
    customer_id: customerId,
    currency: 'USD',
    subtotal: total.toFixed(2),
    total: total.toFixed(2),
    amount_due: total.toFixed(2),
    line_items: amounts.map((amount, i) => ({ display_name: `Line ${i + 1}`, amount, quantity: '1' })),
  }
  const inv = await call(h, 'POST', '/v1/invoices', body, 201)
  await call(h, 'POST', `/v1/invoices/${inv.id}/finalize`)
  return invoice(inv.id)
}

let eventSeq = 0
const stripeEvent = (type: string, object: Record<string, unknown>) => ({ id: `evt_test_${++eventSeq}`, object: 'event', type, data: { object } })
const invoicePaid = (stripeInvoice: Pick<FakeInvoice, 'id' | 'amount_due' | 'metadata'>) =>
  stripeEvent('invoice.paid', { id: stripeInvoice.id, object: 'invoice', status: 'paid', currency: 'usd', amount_paid: stripeInvoice.amount_due, metadata: stripeInvoice.metadata })

/** Posts a notification as Stripe would: the raw JSON, signed at `at` with `secret`. */
function notify(event: unknown, options: { secret?: string; at?: number; header?: string | null; path?: string } = {}) {
  const raw = JSON.stringify(event)
  const header = options.header === undefined ? signatureHeader(options.secret ?? WEBHOOK_SECRET, options.at ?? now(), raw) : options.header
  const headers: Record<string, string> = { 'content-type': 'application/json', ...(header !== null && { 'stripe-signature': header }) }
  return h.http('POST', options.path ?? connection.webhook_url, { key: null, raw, headers })
}

describe('connections', () => {
  it('are created, read, updated and deleted; secrets are stored encrypted and never returned', async () => {
    const other = await h.newTenant()
    const as = (method: string, path: string, body?: unknown) => h.http(method, path, { body, key: other.apiKey })
    const missing = await as('POST', '/v1/connections', stripeConnection('http://127.0.0.1:9', { secret_key: 'sk_test_other' }))
    expect([missing.status, missing.body.details]).toEqual([400, { 'encrypted_secret_data.stripe.webhook_secret': expect.stringContaining('required') }])

    const made = await as('POST', '/v1/connections', stripeConnection('http://127.0.0.1:9', { secret_key: 'sk_test_other', webhook_secret: 'whsec_other' }))
    expect(made.status, JSON.stringify(made.body)).toBe(201)
    expect(made.body).toMatchObject({
      name: 'Stripe',
      provider_type: 'stripe',
      api_base_url: 'http://127.0.0.1:9',
      sync_config: { invoice: { inbound: true, outbound: true } },
      webhook_url: `/v1/webhooks/stripe/${other.tenantId}/${other.environments.production}`,
      status: 'published',
    })
    const id = made.body.id
    const [stored] = await h.running.deps.sql`SELECT encrypted_secret_data FROM connections WHERE id = ${id}`
    expect(stored.encrypted_secret_data).toMatch(/^v1:/)
    for (const res of [made, await as('GET', `/v1/connections/${id}`), await as('GET', '/v1/connections')]) {
      expect(res.status).toBe(200 + (res === made ? 1 : 0))
      const text = JSON.stringify(res.body)
      for (const secret of ['sk_test_other', 'whsec_other', 'pk_test_meterbill', 'encrypted_secret_data', stored.encrypted_secret_data]) expect(text).not.toContain(secret)
    }
    expect(JSON.stringify(stored)).not.toContain('sk_test_other')

    const twice = await as('POST', '/v1/connections', stripeConnection('http://127.0.0.1:9', { secret_key: 'sk_2', webhook_secret: 'whsec_2' }))
    expect([twice.status, twice.body.code, twice.body.details]).toEqual([409, 'already_exists', { provider_type: 'stripe' }])
    expect((await h.http('GET', `/v1/connections/${id}`)).status).toBe(404) // another tenant's

    // A rolled webhook secret alone: the secret key stays.
    const updated = await as('PUT', `/v1/connections/${id}`, { name: 'Stripe EU', encrypted_secret_data: { stripe: { webhook_secret: 'whsec_rolled' } }, sync_config: { invoice: { outbound: false } }, version: 1 })
    expect(updated.status, JSON.stringify(updated.body)).toBe(200)
    expect(updated.body).toMatchObject({ name: 'Stripe EU', version: 2, sync_config: { invoice: { inbound: true, outbound: false } } })
    expect(JSON.stringify(updated.body)).not.toContain('whsec_rolled')
    const [rolled] = await h.running.deps.sql`SELECT encrypted_secret_data FROM connections WHERE id = ${id}`
    expect(unseal(h.config, id, rolled.encrypted_secret_data)).toEqual({ secret_key: 'sk_test_other', webhook_secret: 'whsec_rolled', publishable_key: 'pk_test_meterbill' })
    const ping = stripeEvent('customer.created', { id: 'cus_x', object: 'customer' })
    expect((await notify(ping, { secret: 'whsec_other', path: updated.body.webhook_url })).status).toBe(401)
    expect((await notify(ping, { secret: 'whsec_rolled', path: updated.body.webhook_url })).body).toEqual({ received: true, duplicate: false, outcome: 'ignored' })

    const gone = await as('DELETE', `/v1/connections/${id}`)
    expect([gone.status, gone.body.status]).toEqual([200, 'deleted'])
    expect((await as('GET', `/v1/connections/${id}`)).status).toBe(404)
    expect((await notify(stripeEvent('customer.created', {}), { secret: 'whsec_rolled', path: updated.body.webhook_url })).status).toBe(404)
    expect((await as('POST', '/v1/connections', stripeConnection('http://127.0.0.1:9', { secret_key: 'sk_3', webhook_secret: 'whsec_3' }))).status).toBe(201)
  })
})

describe('the encryption key', () => {
  it('is 64 hex digits when configured; secrets sealed under one key do not open under another or another connection', () => {
    expect(() => loadConfig({ SECRETS_ENCRYPTION_KEY: 'abc' })).toThrow(/SECRETS_ENCRYPTION_KEY must be 64 hex digits/)
    const one = loadConfig({ SECRETS_ENCRYPTION_KEY: '11'.repeat(32) })
    const sealed = seal(one, 'conn_a', { secret_key: 'sk_test_x' })
    expect(sealed).not.toContain('sk_test_x')
    expect(unseal(one, 'conn_a', sealed)).toEqual({ secret_key: 'sk_test_x' })
    expect(() => unseal(loadConfig({ SECRETS_ENCRYPTION_KEY: '22'.repeat(32) }), 'conn_a', sealed)).toThrow(/conn_a: its secrets do not decrypt with this process's SECRETS_ENCRYPTION_KEY/)
    expect(() => unseal(one, 'conn_b', sealed)).toThrow(/do not decrypt/)
  })

  it('is still read under its former name INTEGRATIONS_ENCRYPTION_KEY; both names with different keys stop start-up', () => {
    const former = loadConfig({ INTEGRATIONS_ENCRYPTION_KEY: '11'.repeat(32) })
    expect(unseal(former, 'conn_a', seal(loadConfig({ SECRETS_ENCRYPTION_KEY: '11'.repeat(32) }), 'conn_a', { secret_key: 'sk_test_x' }))).toEqual({ secret_key: 'sk_test_x' })
    expect(() => loadConfig({ INTEGRATIONS_ENCRYPTION_KEY: 'abc' })).toThrow(/INTEGRATIONS_ENCRYPTION_KEY must be 64 hex digits/)
    expect(loadConfig({ SECRETS_ENCRYPTION_KEY: '11'.repeat(32), INTEGRATIONS_ENCRYPTION_KEY: '11'.repeat(32) }).secretsKey).toBe('11'.repeat(32))
    expect(() => loadConfig({ SECRETS_ENCRYPTION_KEY: '11'.repeat(32), INTEGRATIONS_ENCRYPTION_KEY: '22'.repeat(32) })).toThrow(/SECRETS_ENCRYPTION_KEY differs from INTEGRATIONS_ENCRYPTION_KEY/)
  })
})

describe('pushing finalized invoices', () => {
  it('without a saved payment method: pushed by the job, not the finalize; the checkout address lands in the metadata; the callback pays it once', async () => {
    const cus = await customer(h, { name: 'Acme GmbH', email: 'billing@acme.test' })
    const before = fake.requests.length
    const inv = await finalized(cus.id, ['49.00', '98.73'])
    expect(fake.requests.length).toBe(before) // the finalize request made no provider call
    expect(await syncOf(inv.id)).toEqual([])

    expect(await runSync()).toEqual({ queued: 1, attempted: 1, synced: 1, retrying: 0, failed: 0, skipped: 0, accounting: { queued: 0, attempted: 0, synced: 0, retrying: 0, failed: 0, skipped: 0, waiting: 0 } })
    const [pushed] = stripeInvoiceOf(inv.id)
    // 49.00 + 98.73 = 147.73 → 4900 + 9873 = 14773 cents, sent for payment by the customer.
    expect(pushed).toMatchObject({ collection_method: 'send_invoice', currency: 'usd', status: 'open', amount_due: 14773, metadata: { meterbill_invoice_id: inv.id, meterbill_invoice_number: inv.invoice_number } })
    expect(pushed.lines.map((l) => l.amount)).toEqual([4900, 9873])
    // The customer was made at Stripe and mapped in its integrations.
    expect(fake.customers.get(pushed.customer)).toMatchObject({ name: 'Acme GmbH', email: 'billing@acme.test', metadata: { meterbill_customer_id: cus.id } })
    expect((await call(h, 'GET', `/v1/customers/${cus.id}`)).integrations).toMatchObject([{ provider_type: 'stripe', provider_entity_id: pushed.customer }])
    const synced = await invoice(inv.id)
    expect(synced.metadata).toEqual({ payment_provider: 'stripe', payment_provider_invoice_id: pushed.id, checkout_url: `https://invoice.stripe.test/i/${pushed.id}` })
    expect(synced.payment_status).toBe('PENDING')
    expect(await syncOf(inv.id)).toMatchObject([{ sync_status: 'SYNCED', attempts: 1, provider_invoice_id: pushed.id, collection_method: 'send_invoice', provider_status: 'open', checkout_url: synced.metadata.checkout_url, last_error: null }])
    expect(await runSync()).toMatchObject({ queued: 0, attempted: 0 }) // never pushed twice

    const paid = invoicePaid({ ...pushed, amount_due: 14773 })
    clock.advance(5000)
    const res = await notify(paid)
    expect([res.status, res.body]).toEqual([200, { received: true, duplicate: false, outcome: 'payment_recorded', invoice_id: inv.id }])
    const after = await invoice(inv.id)
    expect([after.payment_status, after.amount_paid, after.amount_remaining, after.paid_at]).toEqual(['SUCCEEDED', '147.73', '0', clock.now().toISOString()])

    // The same notification again (Stripe resends until it sees a 2xx), and the payment intent of the same invoice: one payment.
    const header = signatureHeader(WEBHOOK_SECRET, now(), JSON.stringify(paid))
    expect((await notify(paid, { header })).body).toEqual({ received: true, duplicate: true })
    expect((await notify(paid, { header })).body).toEqual({ received: true, duplicate: true })
    const intent = stripeEvent('payment_intent.succeeded', { id: 'pi_test_1', object: 'payment_intent', invoice: pushed.id, amount_received: 14773, currency: 'usd', metadata: {} })
    expect((await notify(intent)).body).toEqual({ received: true, duplicate: false, outcome: 'duplicate_payment', invoice_id: inv.id })
    expect((await invoice(inv.id)).amount_paid).toBe('147.73')
    expect((await eventsOf(h, inv.id)).filter((e) => e === 'invoice.update.payment')).toHaveLength(1)
    expect(await paymentsOf(inv.id)).toEqual([['CARD', 'stripe', pushed.id, '147.73', 'SUCCEEDED', null]])

    // Replayed after the 5-minute tolerance: refused, whatever its signature.
    clock.advance(5 * 60_000 + 1000)
    const stale = await notify(paid, { header })
    expect([stale.status, stale.body.code, stale.body.details]).toEqual([401, 'permission_denied', { reason: 'stale' }])
  })

  it('with a saved payment method: charged automatically; paid in our books when the callback comes', async () => {
    fake.addCustomer('cus_with_card', { paymentMethod: 'pm_card_visa' })
    const cus = await customer(h, { name: 'Card Co', integrations: [{ provider_type: 'stripe', provider_entity_id: 'cus_with_card' }] })
    const inv = await finalized(cus.id, ['60.00'])
    // 10.00 paid by bank transfer before the push: Stripe charges the 50.00 left.
    await call(h, 'PUT', `/v1/invoices/${inv.id}/payment`, { payment_status: 'PENDING', amount: '10.00' })

    expect(await runSync()).toMatchObject({ queued: 1, synced: 1 })
    const [pushed] = stripeInvoiceOf(inv.id)
    // 6000 for the line, −1000 for what was paid before: 5000 charged.
    expect(pushed.lines.map((l) => [l.description, l.amount])).toEqual([
      ['Line 1', 6000],
      ['Prepaid credits, adjustments and payments', -1000],
    ])
    expect(pushed).toMatchObject({ customer: 'cus_with_card', collection_method: 'charge_automatically', status: 'paid', amount_paid: 5000 })
    expect(fake.requests.some((r) => r.path === `/v1/invoices/${pushed.id}/pay`)).toBe(true)
    const charged = await invoice(inv.id)
    expect(charged.metadata).toEqual({ payment_provider: 'stripe', payment_provider_invoice_id: pushed.id })
    expect([charged.payment_status, charged.amount_paid]).toEqual(['PENDING', '10'])
    expect(await syncOf(inv.id)).toMatchObject([{ sync_status: 'SYNCED', collection_method: 'charge_automatically', provider_status: 'paid', checkout_url: null }])
    expect(fake.customers.size).toBeGreaterThan(0)
    expect((await call(h, 'GET', `/v1/customers/${cus.id}`)).integrations).toHaveLength(1) // mapped already: no new Stripe customer

    // The charge is a card payment pending until Stripe says the invoice is paid.
    expect(await paymentsOf(inv.id)).toEqual([
      ['OFFLINE', null, null, '10', 'SUCCEEDED', null],
      ['CARD', 'stripe', pushed.id, '50', 'PENDING', null],
    ])

    expect((await notify(invoicePaid(pushed))).body.outcome).toBe('payment_recorded')
    const paid = await invoice(inv.id)
    // 10.00 + 50.00 = 60.00: paid in full.
    expect([paid.payment_status, paid.amount_paid, paid.amount_remaining]).toEqual(['SUCCEEDED', '60', '0'])
    expect((await paymentsOf(inv.id))[1]).toEqual(['CARD', 'stripe', pushed.id, '50', 'SUCCEEDED', null])
  })

  it('a declined card leaves the invoice open at Stripe, with its page as the checkout address', async () => {
    fake.addCustomer('cus_declines', { paymentMethod: 'pm_card_chargeDeclined', declines: true })
    const cus = await customer(h, { name: 'Declined Ltd', integrations: [{ provider_type: 'stripe', provider_entity_id: 'cus_declines' }] })
    const inv = await finalized(cus.id, ['12.50'])
    await runSync()
    const [pushed] = stripeInvoiceOf(inv.id)
    expect(pushed).toMatchObject({ collection_method: 'charge_automatically', status: 'open', amount_due: 1250 })
    expect(await syncOf(inv.id)).toMatchObject([{ sync_status: 'SYNCED', provider_status: 'open', last_error: expect.stringContaining('declined') }])
    expect((await invoice(inv.id)).metadata.checkout_url).toBe(`https://invoice.stripe.test/i/${pushed.id}`)
    const [failed] = await paymentsOf(inv.id)
    expect(failed.slice(0, 5)).toEqual(['CARD', 'stripe', pushed.id, '12.5', 'FAILED'])
    expect(failed[5]).toContain('declined')
  })

  it('a SKIPPED invoice (zero, nothing to pay) is never pushed', async () => {
    const cus = await customer(h)
    const inv = await call(h, 'POST', '/v1/invoices', { customer_id: cus.id, currency: 'USD', subtotal: '0', total: '0', amount_due: '0', line_items: [{ display_name: 'Free', amount: '0', quantity: '1' }] }, 201)
    await call(h, 'POST', `/v1/invoices/${inv.id}/finalize`)
    expect((await invoice(inv.id)).invoice_status).toBe('SKIPPED')
    expect(await runSync()).toMatchObject({ queued: 0 })
    expect(await syncOf(inv.id)).toEqual([])
    expect(stripeInvoiceOf(inv.id)).toEqual([])
  })

  it('a wallet credit purchase paid through Stripe puts its credits in the wallet', async () => {
    const cus = await customer(h)
    const wallet = await newWallet(h, cus.id)
    const { invoice_id } = await topUp(h, wallet.id, { credits_to_add: '40', transaction_reason: 'PURCHASED_CREDIT_INVOICED' })
    await runSync()
    const [pushed] = stripeInvoiceOf(invoice_id)
    expect(pushed.amount_due).toBe(4000)
    expect((await call(h, 'GET', `/v1/wallets/${wallet.id}`)).credit_balance).toBe('0')
    expect((await notify(invoicePaid(pushed))).body.outcome).toBe('payment_recorded')
    expect((await call(h, 'GET', `/v1/wallets/${wallet.id}`)).credit_balance).toBe('40')
  })
})

describe('a trial charged automatically', () => {
  it('gets a Stripe Checkout page in setup mode; once the card is saved it is the default and the trial invoice is settled', async () => {
    const conn = await call(h, 'GET', `/v1/connections/${connection.id}`)
    await call(h, 'PUT', `/v1/connections/${connection.id}`, { metadata: { ...conn.metadata, checkout_success_url: 'https://app.example.test/welcome' } })
    fake.addCustomer('cus_trial')
    const cus = await customer(h, { name: 'Trial Co', integrations: [{ provider_type: 'stripe', provider_entity_id: 'cus_trial' }] })
    const p = await plan(h, { prices: [fixedPrice('25.00', { invoice_cadence: 'ADVANCE' })] })
    const started = new Date(clock.now().getTime() - 2 * 3_600_000).toISOString()
    const trialEnd = new Date(clock.now().getTime() + 14 * 86_400_000).toISOString()
    const sub = await subscribed(h, { customer_id: cus.id, plan_id: p.id, start_date: started, trial_start: started, trial_end: trialEnd, collection_method: 'charge_automatically' })
    await call(h, 'POST', '/v1/jobs/billing-run/run')
    const [trial] = (await call(h, 'GET', `/v1/invoices?subscription_id=${sub.id}`)).items
    expect(trial).toMatchObject({ billing_reason: 'SUBSCRIPTION_TRIAL_START', invoice_status: 'FINALIZED', total: '0', metadata: { checkout_status: 'awaiting_payment_method' } })

    await runSync()
    const session = [...fake.sessions.values()].find((x) => x.metadata.meterbill_invoice_id === trial.id)!
    expect(session).toMatchObject({ mode: 'setup', customer: 'cus_trial', currency: 'usd', success_url: 'https://app.example.test/welcome', status: 'open' })
    expect((await invoice(trial.id)).metadata).toMatchObject({ payment_provider: 'stripe', checkout_url: session.url, checkout_status: 'open', checkout_session_id: session.id })
    expect(await syncOf(trial.id)).toMatchObject([{ sync_status: 'SYNCED', provider_status: 'setup_open', checkout_url: session.url }])

    fake.completeSetup(session.id, 'pm_card_visa')
    const completed = stripeEvent('checkout.session.completed', { id: session.id, object: 'checkout.session', mode: 'setup', customer: 'cus_trial', setup_intent: session.setup_intent, metadata: session.metadata })
    expect((await notify(completed)).body).toMatchObject({ outcome: 'card_saved', invoice_id: trial.id })
    expect(fake.customers.get('cus_trial')!.invoice_settings.default_payment_method).toBe('pm_card_visa')
    expect(await invoice(trial.id)).toMatchObject({ payment_status: 'SUCCEEDED', metadata: { checkout_status: 'completed' } })
    // Nothing was owed: no payment record. A resend changes nothing.
    expect(await paymentsOf(trial.id)).toEqual([])
    expect((await notify(completed)).body).toEqual({ received: true, duplicate: true })
  })

  it('without checkout_success_url on the connection the setup waits with the reason, and goes out once it is set and retried', async () => {
    const conn = await call(h, 'GET', `/v1/connections/${connection.id}`)
    const { checkout_success_url: _s, ...others } = conn.metadata
    await call(h, 'PUT', `/v1/connections/${connection.id}`, { metadata: others })
    fake.addCustomer('cus_trial_2')
    const cus = await customer(h, { integrations: [{ provider_type: 'stripe', provider_entity_id: 'cus_trial_2' }] })
    const p = await plan(h, { prices: [fixedPrice('25.00', { invoice_cadence: 'ADVANCE' })] })
    const started = new Date(clock.now().getTime() - 2 * 3_600_000).toISOString()
    const sub = await subscribed(h, { customer_id: cus.id, plan_id: p.id, start_date: started, trial_start: started, trial_end: new Date(clock.now().getTime() + 86_400_000).toISOString(), collection_method: 'charge_automatically' })
    await call(h, 'POST', '/v1/jobs/billing-run/run')
    const [trial] = (await call(h, 'GET', `/v1/invoices?subscription_id=${sub.id}`)).items
    await runSync()
    expect(await syncOf(trial.id)).toMatchObject([{ sync_status: 'PENDING', last_error: expect.stringContaining('checkout_success_url') }])
    expect((await invoice(trial.id)).metadata.checkout_status).toBe('awaiting_payment_method')

    await call(h, 'PUT', `/v1/connections/${connection.id}`, { metadata: { ...others, checkout_success_url: 'https://app.example.test/welcome' } })
    await call(h, 'POST', `/v1/invoices/${trial.id}/sync`)
    await runSync()
    expect(await syncOf(trial.id)).toMatchObject([{ sync_status: 'SYNCED', provider_status: 'setup_open' }])
    expect((await invoice(trial.id)).metadata.checkout_status).toBe('open')
  })

  it('end to end: a badly signed setup notification changes nothing; the signed one saves the card, and the trial-end invoice is charged to it', async () => {
    const conn = await call(h, 'GET', `/v1/connections/${connection.id}`)
    await call(h, 'PUT', `/v1/connections/${connection.id}`, { metadata: { ...conn.metadata, checkout_success_url: 'https://app.example.test/welcome' } })
    fake.addCustomer('cus_trial_e2e')
    const cus = await customer(h, { integrations: [{ provider_type: 'stripe', provider_entity_id: 'cus_trial_e2e' }] })
    const p = await plan(h, { prices: [fixedPrice('25.00', { invoice_cadence: 'ADVANCE' })] })
    const started = new Date(clock.now().getTime() - 3_600_000).toISOString()
    const trialEnd = new Date(clock.now().getTime() + 2 * 3_600_000).toISOString()
    const sub = await subscribed(h, { customer_id: cus.id, plan_id: p.id, start_date: started, trial_start: started, trial_end: trialEnd, collection_method: 'charge_automatically', payment_behavior: 'default_incomplete' })
    expect(sub.subscription_status).toBe('trialing')
    await call(h, 'POST', '/v1/jobs/billing-run/run')
    const [trial] = (await call(h, 'GET', `/v1/invoices?subscription_id=${sub.id}`)).items
    await runSync()
    const session = [...fake.sessions.values()].find((x) => x.metadata.meterbill_invoice_id === trial.id)!
    fake.completeSetup(session.id, 'pm_card_mastercard')
    const completed = stripeEvent('checkout.session.completed', { id: session.id, object: 'checkout.session', mode: 'setup', customer: 'cus_trial_e2e', setup_intent: session.setup_intent, metadata: session.metadata })

    // Signed with another secret: 401, and neither Stripe nor our records hear of it.
    const received = async () => (await h.running.deps.sql`SELECT count(*)::int AS n FROM provider_events`)[0].n
    const [events, requests, before] = [await received(), fake.requests.length, await invoice(trial.id)]
    const bad = await notify(completed, { secret: 'whsec_wrong' })
    expect([bad.status, bad.body.details]).toEqual([401, { reason: 'mismatch' }])
    expect(fake.customers.get('cus_trial_e2e')!.invoice_settings.default_payment_method).toBeNull()
    expect([fake.requests.length, await received()]).toEqual([requests, events])
    const unchanged = await invoice(trial.id)
    expect([unchanged.version, unchanged.payment_status, unchanged.metadata.checkout_status]).toEqual([before.version, before.payment_status, 'open'])
    expect((await call(h, 'GET', `/v1/subscriptions/${sub.id}`)).subscription_status).toBe('trialing')

    // Signed: the card is the default, the trial invoice settled, the trial runs on.
    expect((await notify(completed)).body).toMatchObject({ outcome: 'card_saved', invoice_id: trial.id })
    expect(fake.customers.get('cus_trial_e2e')!.invoice_settings.default_payment_method).toBe('pm_card_mastercard')
    expect(await invoice(trial.id)).toMatchObject({ payment_status: 'SUCCEEDED', metadata: { checkout_status: 'completed' } })
    expect((await call(h, 'GET', `/v1/subscriptions/${sub.id}`)).subscription_status).toBe('trialing')

    // The trial ends: the subscription is active and its first charge, 25.00 in advance, goes to that card.
    clock.advance(2 * 3_600_000 + 60_000)
    await call(h, 'POST', '/v1/jobs/subscription-lifecycle/run')
    await call(h, 'POST', '/v1/jobs/billing-run/run')
    expect((await call(h, 'GET', `/v1/subscriptions/${sub.id}`)).subscription_status).toBe('active')
    // Finalized once the grace period for late events (INVOICE_GRACE_PERIOD_MINUTES, 60) has passed.
    clock.advance(61 * 60_000)
    await call(h, 'POST', '/v1/jobs/billing-run/run')
    const charge = (await call(h, 'GET', `/v1/invoices?subscription_id=${sub.id}`)).items.find((i: any) => i.id !== trial.id)
    expect(charge).toMatchObject({ billing_reason: 'SUBSCRIPTION_TRIAL_END', invoice_status: 'FINALIZED', total: '25' })
    await runSync()
    const [pushed] = stripeInvoiceOf(charge.id)
    expect(pushed).toMatchObject({ customer: 'cus_trial_e2e', collection_method: 'charge_automatically', status: 'paid', amount_paid: 2500, payment_method: 'pm_card_mastercard' })
    expect(await paymentsOf(charge.id)).toEqual([['CARD', 'stripe', pushed.id, '25', 'PENDING', null]])
    expect((await notify(invoicePaid(pushed))).body.outcome).toBe('payment_recorded')
    expect(await invoice(charge.id)).toMatchObject({ payment_status: 'SUCCEEDED', amount_paid: '25' })
    expect((await call(h, 'GET', `/v1/subscriptions/${sub.id}`)).subscription_status).toBe('active')
  })
})

describe('callbacks', () => {
  it('bad, missing and stale signatures are 401 and change nothing; a wrong address is 404 without saying which part', async () => {
    const cus = await customer(h)
    const inv = await finalized(cus.id, ['25.00'])
    await runSync()
    const [pushed] = stripeInvoiceOf(inv.id)
    const paid = invoicePaid(pushed)
    const version = (await invoice(inv.id)).version
    const received = async () => (await h.running.deps.sql`SELECT count(*)::int AS n FROM provider_events`)[0].n
    const events = await received()

    for (const [options, reason] of [
      [{ secret: 'whsec_wrong' }, 'mismatch'],
      [{ header: null }, 'missing'],
      [{ header: 't=123,v1=zz' }, 'malformed'],
      [{ at: now() - 301 }, 'stale'],
      [{ at: now() + 301 }, 'stale'],
    ] as const) {
      const res = await notify(paid, options)
      expect([res.status, res.body.code, res.body.http_status_code, res.body.details], reason).toEqual([401, 'permission_denied', 401, { reason }])
    }
    // A body changed after signing.
    const raw = JSON.stringify(paid)
    const tampered = await h.http('POST', connection.webhook_url, { key: null, raw: raw.replace('2500', '250000'), headers: { 'content-type': 'application/json', 'stripe-signature': signatureHeader(WEBHOOK_SECRET, now(), raw) } })
    expect(tampered.status).toBe(401)

    const { tenant_id, environment_id } = connection
    const wrong = [`/v1/webhooks/stripe/tenant_nope/${environment_id}`, `/v1/webhooks/stripe/${tenant_id}/env_nope`, `/v1/webhooks/paypal/${tenant_id}/${environment_id}`]
    const answers = await Promise.all(wrong.map((path) => notify(paid, { path })))
    expect(answers.map((a) => [a.status, a.body.message])).toEqual([
      [404, 'no stripe connection receives notifications at this address'],
      [404, 'no stripe connection receives notifications at this address'],
      [404, 'paypal is not connected: notifications are taken from stripe and quickbooks connections only'],
    ])

    const after = await invoice(inv.id)
    expect([after.payment_status, after.amount_paid, after.version]).toEqual(['PENDING', '0', version])
    expect(await received()).toBe(events)

    expect((await notify(paid)).body.outcome).toBe('payment_recorded')
    expect((await invoice(inv.id)).payment_status).toBe('SUCCEEDED')
  })

  it('a payment for an invoice it cannot match, or one already voided, is acknowledged and kept with the reason', async () => {
    const unknown = stripeEvent('invoice.paid', { id: 'in_not_ours', object: 'invoice', currency: 'usd', amount_paid: 100, metadata: {} })
    expect((await notify(unknown)).body).toEqual({ received: true, duplicate: false, outcome: 'unmatched' })
    const cus = await customer(h)
    const inv = await finalized(cus.id, ['5.00'])
    await call(h, 'POST', `/v1/invoices/${inv.id}/void`)
    const late = stripeEvent('payment_intent.succeeded', { id: 'pi_late', object: 'payment_intent', amount_received: 500, currency: 'usd', metadata: { meterbill_invoice_id: inv.id } })
    const res = await notify(late)
    expect([res.status, res.body.outcome]).toEqual([200, expect.stringMatching(/^not_applied: .*VOIDED/)])
    expect((await invoice(inv.id)).amount_paid).toBe('0')
  })
})

describe('a provider outage', () => {
  it('is retried with growing waits, the state says so, and a push that failed half-way makes one Stripe invoice', async () => {
    const cus = await customer(h)
    fake.down = true
    const inv = await finalized(cus.id, ['30.00'])
    expect(await runSync()).toMatchObject({ queued: 1, attempted: 1, retrying: 1 })
    const first = clock.now().getTime()
    expect(await syncOf(inv.id)).toMatchObject([{ sync_status: 'PENDING', attempts: 1, last_error: expect.stringContaining('503'), next_attempt_at: new Date(first + 60_000).toISOString() }])
    expect(await runSync()).toMatchObject({ attempted: 0 }) // not due yet

    clock.advance(60_000)
    expect(await runSync()).toMatchObject({ attempted: 1, retrying: 1 })
    expect(await syncOf(inv.id)).toMatchObject([{ sync_status: 'PENDING', attempts: 2, next_attempt_at: new Date(first + 60_000 + 120_000).toISOString() }])

    // Up again, but failing at the finalize: the Stripe invoice and its item exist.
    fake.down = false
    fake.failOn = '/finalize'
    clock.advance(120_000)
    expect(await runSync()).toMatchObject({ attempted: 1, retrying: 1 })
    expect(await syncOf(inv.id)).toMatchObject([{ sync_status: 'PENDING', attempts: 3, last_error: expect.stringContaining('500') }])
    expect(stripeInvoiceOf(inv.id)).toMatchObject([{ status: 'draft', lines: [{ amount: 3000 }] }])

    fake.failOn = undefined
    clock.advance(240_000)
    expect(await runSync()).toMatchObject({ attempted: 1, synced: 1 })
    expect(await syncOf(inv.id)).toMatchObject([{ sync_status: 'SYNCED', attempts: 4 }])
    // The retry found what the failed attempt made (idempotency keys): one invoice, one item.
    expect(stripeInvoiceOf(inv.id)).toMatchObject([{ status: 'open', amount_due: 3000, lines: [{ amount: 3000 }] }])
  })

  it('is given up after 10 attempts (FAILED) and tried again on request', async () => {
    const cus = await customer(h)
    fake.down = true
    const inv = await finalized(cus.id, ['7.00'])
    for (let i = 0; i < 10; i++) {
      await runSync()
      clock.advance(60 * 60_000)
    }
    expect(await syncOf(inv.id)).toMatchObject([{ sync_status: 'FAILED', attempts: 10 }])
    expect(await runSync()).toMatchObject({ attempted: 0 })

    fake.down = false
    expect(await call(h, 'POST', `/v1/invoices/${inv.id}/sync`)).toMatchObject({ items: [{ sync_status: 'PENDING', attempts: 0 }] })
    expect(await runSync()).toMatchObject({ attempted: 1, synced: 1 })
    expect(stripeInvoiceOf(inv.id)).toHaveLength(1)
  })
})
