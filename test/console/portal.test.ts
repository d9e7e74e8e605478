// The customer portal page in a real browser (Debian's chromium through playwright-core): a customer opens the
// link a portal session answers and sees its own usage, invoices, credit notes and wallet (and, where Stripe holds
// its cards, a way to update them), and nothing of another customer's, whatever ids it tries with its session; an
// expired or revoked link shows a page saying so and no data; customer-provided text with markup stays text.
// PORTAL_SCREENSHOT=<file> saves the page (docs/portal.png).
// Callbacks run in the page take `any`: the project compiles without the DOM library, on purpose.
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../core/clock.ts'
import { startHarness, type Harness } from '../harness.ts'
import { openSession, seedPortal, type PortalSeed } from '../portal.ts'
import { browserTestsRun, launch } from './browser.ts'
import { startFakeStripe } from '../fake-stripe.ts'

const SCRIPT_NAME = 'Mallory <script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'

describe.skipIf(!browserTestsRun)('customer portal page', () => {
  const clock = fixedClock(new Date())
  let h: Harness
  let browser: Browser
  let seed: PortalSeed
  const problems: string[] = []

  beforeAll(async () => {
    ;[h, browser] = await Promise.all([startHarness({ clock, env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0' } }), launch()])
    seed = await seedPortal(h)
  })
  afterAll(async () => {
    await browser?.close()
    await h?.stop()
  })

  /** A fresh tab; script errors and dialogs are collected (an alert would be an injected script running). */
  async function open(url: string): Promise<{ page: Page; calls: { url: string; headers: Record<string, string> }[] }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true })
    const page = await context.newPage()
    const calls: { url: string; headers: Record<string, string> }[] = []
    page.on('request', (r) => r.url().includes('/v1/') && calls.push({ url: r.url(), headers: r.headers() }))
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`))
    page.on('console', (m) => m.type() === 'error' && !/Failed to load resource/.test(m.text()) && problems.push(`console error: ${m.text()}`))
    page.on('dialog', (d) => {
      problems.push(`dialog: ${d.message()}`)
      void d.dismiss()
    })
    await page.goto(url)
    return { page, calls }
  }

  it('serves the page under a strict policy, never cached, and keeps the link’s token through /portal → /portal/', async () => {
    const res = await fetch(`${h.baseUrl}/portal/`)
    const csp = res.headers.get('content-security-policy') ?? ''
    expect(csp).toMatch(/script-src 'self' 'sha256-[A-Za-z0-9+/=]+'/)
    expect(csp).toContain("default-src 'none'")
    expect(csp).toContain("frame-ancestors 'none'")
    expect(csp).not.toContain('unsafe-inline')
    expect(res.headers.get('cache-control')).toBe('no-store')
    expect(res.headers.get('referrer-policy')).toBe('no-referrer')
    const { token } = await openSession(h, seed.ours.external_id)
    const { page } = await open(`${h.baseUrl}/portal#token=${token}`)
    await expect.poll(() => page.locator('[data-customer-name]').textContent()).toBe('Acme Analytics')
  })

  it('shows the customer its usage against the limit, invoices with PDFs, credit notes and wallet, and nothing of another customer', async () => {
    const session = await openSession(h, seed.ours.external_id)
    const { page, calls } = await open(session.url)
    await expect.poll(() => page.locator('[data-customer-name]').textContent()).toBe('Acme Analytics')
    // The token leaves the address bar at once.
    expect(page.url()).toBe(`${h.baseUrl}/portal/`)
    await page.waitForSelector(`[data-feature="${seed.feature.id}"] meter`)
    expect(await page.locator(`[data-feature="${seed.feature.id}"]`).textContent()).toContain('13 / 20 calls')
    expect(await page.locator(`[data-feature="${seed.feature.id}"] meter`).getAttribute('value')).toBe('13')
    await page.waitForSelector(`[data-chart="${seed.feature.id}"] canvas`)
    expect(await page.locator(`[data-invoice="${seed.invoice.id}"]`).textContent()).toContain('49.00 USD')
    expect(await page.locator(`[data-credit-note="${seed.creditNote.id}"]`).textContent()).toContain('Goodwill')
    await expect.poll(() => page.locator(`[data-wallet="${seed.wallet.id}"] [data-balance]`).textContent()).toBe('75.00 USD')
    await expect.poll(() => page.locator(`[data-wallet="${seed.wallet.id}"] tbody tr`).count()).toBe(2)

    // The invoice's and the credit note's PDFs download through the session.
    for (const id of [seed.invoice.id, seed.creditNote.id]) {
      const [download] = await Promise.all([page.waitForEvent('download'), page.click(`[data-pdf="${id}"]`)])
      const pdf = await download.createReadStream().then(async (s) => {
        const chunks: Buffer[] = []
        for await (const c of s) chunks.push(c as Buffer)
        return Buffer.concat(chunks)
      })
      expect(pdf.subarray(0, 4).toString(), id).toBe('%PDF')
    }

    const html = await page.content()
    for (const theirs of [seed.theirs.id, seed.theirs.name, seed.theirInvoice.id, seed.theirCreditNote.id, seed.theirWallet.id, seed.theirSubscription.id, seed.draft.id]) expect(html).not.toContain(theirs)
    // Every call the page made carried this session and no API key.
    expect(calls.length).toBeGreaterThan(6)
    for (const c of calls) {
      expect(c.url).toContain('/v1/customer/portal/')
      expect(c.headers['x-session-token']).toBe(session.token)
      expect(c.headers['x-api-key']).toBeUndefined()
    }
    if (process.env.PORTAL_SCREENSHOT) await page.screenshot({ path: process.env.PORTAL_SCREENSHOT, fullPage: true })
    expect(problems).toEqual([])
  })

  it('answers another customer’s ids, tried with the session from the page, with 404 and no data', async () => {
    const { page } = await open((await openSession(h, seed.ours.external_id)).url)
    await page.waitForSelector('[data-customer-name]')
    const tries = [`invoices/${seed.theirInvoice.id}`, `invoices/${seed.theirInvoice.id}/pdf`, `wallets/${seed.theirWallet.id}/transactions`, `subscriptions/${seed.theirSubscription.id}`]
    const answers = await page.evaluate(async (paths: string[]) => {
      const token = (globalThis as any).sessionStorage.getItem('meterbill.portal.token')
      return Promise.all(paths.map(async (p) => {
        const res = await fetch(`/v1/customer/portal/${p}`, { headers: { 'x-session-token': token } })
        return [res.status, await res.text()] as [number, string]
      }))
    }, tries)
    for (const [status, body] of answers) {
      expect(status).toBe(404)
      expect(body).not.toContain('Globex')
    }
  })

  it('shows an expired link as such, with no data', async () => {
    const { page } = await open((await openSession(h, seed.ours.external_id)).url)
    await expect.poll(() => page.locator('[data-customer-name]').textContent()).toBe('Acme Analytics')
    // Every call of the first load answered: one still under way when the hour passes would end the page before the reload.
    await page.waitForLoadState('networkidle')
    clock.advance(3600_000)
    await page.reload()
    await page.waitForSelector('[data-ended]')
    expect(await page.locator('[data-ended]').textContent()).toContain('expired or was revoked')
    const html = await page.content()
    expect(html).not.toContain('Acme')
    expect(html).not.toContain(seed.invoice.id)
    expect(await page.evaluate(() => (globalThis as any).sessionStorage.length)).toBe(0)
  })

  it('drops what is on screen once the biller revokes the link', async () => {
    const { page } = await open((await openSession(h, seed.ours.external_id)).url)
    await page.waitForSelector(`[data-pdf="${seed.invoice.id}"]`)
    expect((await h.http('DELETE', `/v1/customers/portal/${seed.ours.external_id}`)).status).toBe(200)
    await page.click(`[data-pdf="${seed.invoice.id}"]`)
    await page.waitForSelector('[data-ended]')
    expect(await page.content()).not.toContain(seed.invoice.id)
  })

  it('shows customer-provided text with markup as text, running none of it', async () => {
    const mallory = await h.http('POST', '/v1/customers', { body: { external_id: `mallory-${Date.now()}`, name: SCRIPT_NAME, email: 'mallory@evil.test' } })
    expect(mallory.status).toBe(201)
    await h.http('POST', '/v1/wallets', { body: { customer_id: mallory.body.id, currency: 'USD', name: '<img src=x onerror="window.__pwned = 3">' } })
    const before = problems.length
    const { page } = await open((await openSession(h, mallory.body.external_id)).url)
    await expect.poll(() => page.locator('[data-customer-name]').textContent()).toBe(SCRIPT_NAME)
    await expect.poll(() => page.locator('.wallet h3').textContent()).toContain('<img src=x onerror=')
    expect(await page.evaluate(() => (globalThis as any).__pwned)).toBeUndefined()
    expect(await page.locator('#app script, #app img').count()).toBe(0)
    expect(problems.slice(before)).toEqual([])
  })

  it("sends the customer to Stripe's page to update its payment method, where Stripe holds its account", async () => {
    const fake = await startFakeStripe('sk_test_portal_page')
    try {
      await h.http('POST', '/v1/connections', { body: { name: 'Stripe', provider_type: 'stripe', api_base_url: fake.url, encrypted_secret_data: { stripe: { secret_key: 'sk_test_portal_page', webhook_secret: 'whsec_x' } } } })
      fake.addCustomer('cus_page')
      const linked = await h.http('POST', '/v1/customers', { body: { external_id: `linked-${Date.now()}`, name: 'Linked Ltd', integrations: [{ provider_type: 'stripe', provider_entity_id: 'cus_page' }] } })
      const { page } = await open((await openSession(h, linked.body.external_id)).url)
      // No network here: Stripe's page is answered in the browser.
      await page.route('https://billing.stripe.test/**', (r) => r.fulfill({ contentType: 'text/html', body: '<title>Stripe billing portal</title>' }))
      await page.click('[data-payment-method]')
      await page.waitForURL(/^https:\/\/billing\.stripe\.test\/p\/session\/bps_fake\d+$/)
      expect(fake.requests.find((r) => r.path === '/v1/billing_portal/sessions')?.form.customer).toBe('cus_page')
    } finally {
      await fake.stop()
    }
  })
})
