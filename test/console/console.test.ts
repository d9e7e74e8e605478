// The web console in a real browser (Debian's chromium through playwright-core): the service is started
// by the harness, seeded over the API, and the console is walked as a person would — sign in, the usage
// chart, a customer, an invoice finalized, the CSV, a read key, an ingest key, an XSS-shaped name.
// Screenshots of the main pages go to a folder printed at the end (CONSOLE_SCREENSHOTS sets it).
// Callbacks run in the page take `any`: the project compiles without the DOM library, on purpose.
import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../harness.ts'
import { browserTestsRun, launch } from './browser.ts'
import { XSS_NAME, seedConsole, type Seeded } from './seed.ts'

const shots = process.env.CONSOLE_SCREENSHOTS ?? mkdtempSync(join(tmpdir(), 'meterbill-console-shots-'))

describe.skipIf(!browserTestsRun)('web console', () => {
  let h: Harness
  let seed: Seeded
  let browser: Browser
  let readKey: string
  let ingestKey: string
  const contexts: BrowserContext[] = []
  const problems: string[] = []

  beforeAll(async () => {
    // Direct mode (events written by the request, as on a newcomer's machine); meters readable at once (no
    // settle delay); a failed webhook delivery failed at once (no retries).
    ;[h, browser] = await Promise.all([startHarness({ env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0', WEBHOOK_RETRY_ENABLED: 'false' } }), launch()])
    seed = await seedConsole((method, path, body) => h.http(method, path, { body }))
    const mint = async (roles: string[]) => (await h.http('POST', '/v1/secrets/api/keys', { body: { name: roles.join('+'), roles } })).body.api_key as string
    ;[readKey, ingestKey] = await Promise.all([mint(['read']), mint(['ingest'])])
    mkdirSync(shots, { recursive: true })
  })

  afterAll(async () => {
    await browser?.close()
    await h?.stop()
    console.log(`console screenshots: ${shots}`)
  })

  /** A fresh tab (its own session storage); any script error, refused load or dialog fails the test. */
  async function open(): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1360, height: 900 }, acceptDownloads: true })
    contexts.push(context)
    const page = await context.newPage()
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`))
    page.on('console', (m) => m.type() === 'error' && !/Failed to load resource/.test(m.text()) && problems.push(`console error: ${m.text()}`))
    page.on('dialog', (d) => {
      if (d.type() !== 'confirm') problems.push(`dialog: ${d.message()}`)
      void d.accept()
    })
    return page
  }

  async function signIn(key: string): Promise<Page> {
    const page = await open()
    await page.goto(`${h.baseUrl}/`)
    await page.fill('input[name=key]', key)
    await page.click('button[type=submit]')
    await page.waitForSelector('aside.side')
    return page
  }

  /** The admin's tab, signed in once and reloaded at `route` (a fresh page state, the modules cached). */
  let admin: Page | undefined
  async function adminAt(route: string): Promise<Page> {
    admin ??= await signIn(h.key)
    await admin.goto(`${h.baseUrl}/console/#/${route}`)
    await admin.reload()
    await admin.waitForSelector('aside.side')
    return admin
  }

  const shot = (page: Page, name: string) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true })

  it('serves the console with a strict policy, only allow-listed library files, and leaves the API as it was', async () => {
    const root = await fetch(`${h.baseUrl}/`, { redirect: 'manual' })
    expect(root.status).toBe(302)
    expect(root.headers.get('location')).toBe('/console/')
    const index = await fetch(`${h.baseUrl}/console/`)
    const csp = index.headers.get('content-security-policy') ?? ''
    expect(csp).toMatch(/script-src 'self' 'sha256-[A-Za-z0-9+/=]+'/)
    expect(csp).not.toContain('unsafe-inline')
    expect(csp).not.toContain('unsafe-eval')
    expect((await fetch(`${h.baseUrl}/console/vendor/uPlot.esm.js`)).status).toBe(200)
    for (const path of ['/console/vendor/package.json', '/console/vendor/../../package.json', '/console/%2e%2e/package.json', '/node_modules/preact/package.json']) {
      const res = await fetch(`${h.baseUrl}${path}`)
      expect(res.status, path).toBe(404)
      expect(((await res.json()) as { code: string }).code).toBe('not_found')
    }
    const api = await h.http('GET', '/v1/nothing')
    expect(api.status).toBe(404)
    expect(api.body).toMatchObject({ code: 'not_found' })
    expect((await h.http('POST', '/console/', { body: {} })).status).toBe(404)
  })

  it('refuses an ingest key with a clear message', async () => {
    const page = await open()
    await page.goto(`${h.baseUrl}/console/`)
    await page.fill('input[name=key]', ingestKey)
    await page.click('button[type=submit]')
    await expect.poll(() => page.locator('.error').textContent()).toContain('This is an ingest key')
    await page.fill('input[name=key]', 'mb_not_a_key')
    await page.click('button[type=submit]')
    await expect.poll(() => page.locator('.error').textContent()).toContain('invalid API key')
  })

  it('signs in and draws the seeded events on the usage chart, one line or stacked by a property', async () => {
    // A cost sheet: each token costs you 0.0001 USD (docs/costs.md).
    const sheet = (await h.http('POST', '/v1/costs', { body: { name: 'Tokens at cost' } })).body.costsheet
    const costPrice = { entity_type: 'COSTSHEET', entity_id: sheet.id, currency: 'USD', type: 'USAGE', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', amount: '0.0001', meter_id: seed.meter.id }
    expect((await h.http('POST', '/v1/prices', { body: costPrice })).status).toBe(201)
    const page = await adminAt('usage')
    await page.selectOption('select[name=measure]', `meter:${seed.meter.id}`)
    await page.waitForSelector('figure.chart[data-points="12"]')
    // The chart's data: one window an hour holding that hour's two events, with their tokens summed.
    const rows = await page.locator('.chart-data tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)))
    const hours = new Map<string, number>()
    for (const e of seed.events) {
      const hour = new Date(e.at)
      hour.setUTCMinutes(0, 0, 0)
      hours.set(hour.toISOString(), (hours.get(hour.toISOString()) ?? 0) + e.tokens)
    }
    expect(rows).toEqual([...hours].map(([hour, tokens]) => [hour, String(tokens)]))
    const total = seed.events.reduce((sum, e) => sum + e.tokens, 0)
    expect(await page.locator('[data-stat=total]').textContent()).toBe(total.toLocaleString('en-US'))
    expect(await page.locator('[data-stat=events]').textContent()).toBe(String(seed.events.length))
    // The meter's feature is read from the analytics endpoint, priced: the plan includes 100,000 tokens, so nothing is owed yet.
    expect(await page.locator('[data-stat=cost]').textContent()).toBe('0 USD')
    // Next to it, what serving the tokens cost (total × 0.0001, to the cent) and the margin: nothing billed yet, so
    // the margin is the cost's opposite and has no percentage of revenue.
    const serving = (Math.round(total) / 10_000).toFixed(2).replace(/\.?0+$/, '')
    expect(await page.locator('[data-stat=serving-cost]').textContent()).toBe(`${serving} USD`)
    expect(await page.locator('[data-stat=margin]').textContent()).toBe(`-${serving} USD`)
    // And it drew them: the line's colour is on the canvas.
    const drawn = await page.locator('.chart-canvas canvas').evaluate((c: any) => {
      const d = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data
      let n = 0
      for (let i = 0; i < d.length; i += 4) if (Math.abs(d[i] - 0x25) < 24 && Math.abs(d[i + 1] - 0x63) < 24 && Math.abs(d[i + 2] - 0xeb) < 24 && d[i + 3] > 200) n++
      return n
    })
    expect(drawn).toBeGreaterThan(200)
    await shot(page, 'usage')

    await page.fill('input[name=group_by]', 'model')
    await page.press('input[name=group_by]', 'Enter')
    await page.waitForSelector('figure.chart[data-series="2"]')
    const heads = await page.locator('.chart-data thead th').allTextContents()
    expect(heads.slice(1).sort()).toEqual(['gpt-4o', 'gpt-4o-mini'])
    await shot(page, 'usage-grouped')
  })

  it("shows a newcomer's first event on the chart within seconds, from the empty state, without a reload", async () => {
    // A tenant of its own: nothing in it yet, as after the first `npm start`.
    const fresh = await h.newTenant('newcomer')
    const page = await signIn(fresh.apiKey)
    await page.waitForSelector('.empty pre.curl')
    expect(await page.locator('.empty').textContent()).toContain('"event_name":"api.call"')
    const send = await h.http('POST', '/v1/events', { key: fresh.apiKey, body: { event_name: 'api.call', external_customer_id: 'cust_42', properties: { tokens: 1500 } } })
    expect(send.status).toBe(202)
    await expect.poll(() => page.locator('[data-stat=total]').count(), { timeout: 15_000 }).toBe(1)
    await expect.poll(() => page.locator('[data-stat=total]').textContent(), { timeout: 15_000 }).toBe('1')
    expect(await page.locator('select[name=measure]').inputValue()).toBe('event:api.call')
  })

  it('downloads the CSV of the selection from the analytics export', async () => {
    const page = await adminAt('usage')
    await page.selectOption('select[name=measure]', `feature:${seed.feature.id}`)
    await page.waitForSelector('figure.chart')
    const request = page.waitForRequest((r) => r.url().endsWith('/v1/events/analytics/export'))
    const download = page.waitForEvent('download', { timeout: 10_000 }).catch(() => undefined)
    await page.click('text=Download CSV')
    const sent = JSON.parse((await request).postData() ?? '{}')
    expect(sent).toMatchObject({ feature_ids: [seed.feature.id], window_size: 'HOUR' })
    const api = await h.http('POST', '/v1/events/analytics/export', { body: sent })
    expect(api.status).toBe(200)
    const file = await download
    expect(file).toBeDefined()
    expect(readFileSync((await file!.path())!, 'utf8')).toBe(api.body)
    expect(api.body).toContain('Acme Analytics')
  })

  it('opens a customer with subscriptions, entitlements, the wallet and its ledger, and renders an XSS-shaped name as text', async () => {
    const page = await adminAt('customers')
    await page.waitForSelector('table.list')
    // The name is text: no <img> was made of it, no alert ran (a dialog would be recorded as a problem).
    await expect.poll(() => page.locator('table.list').textContent()).toContain(XSS_NAME)
    expect(await page.locator('table.list img').count()).toBe(0)
    await shot(page, 'customers')

    await page.fill('input[name=q]', 'Acme')
    await page.press('input[name=q]', 'Enter')
    await page.click('table.list >> text=Acme Analytics')
    await page.waitForSelector('[data-customer-name]')
    expect(await page.locator('[data-customer-name]').textContent()).toBe('Acme Analytics')
    await page.waitForSelector('[data-balance]')
    const body = await page.locator('main.content').textContent()
    expect(body).toContain('Pro') // the subscription's plan
    expect(body).toContain('100,000 / monthly') // the merged entitlement
    expect(body).toContain('FREE_CREDIT_GRANT') // the ledger
    const live = (await h.http('GET', `/v1/wallets/${seed.wallet.id}/balance/real-time`)).body
    expect(await page.locator('[data-balance]').textContent()).toBe(`${Number(live.real_time_balance).toFixed(2)} USD`)
    await page.waitForSelector('figure.chart')
    await shot(page, 'customer')

    await page.goto(`${h.baseUrl}/console/#/customers/${seed.xss.id}`)
    await expect.poll(() => page.locator('[data-customer-name]').textContent()).toBe(XSS_NAME)
    expect(await page.locator('main.content img').count()).toBe(0)
  })

  it('finalizes an invoice, shows a refused credit note with the field the API names, records a payment, opens the PDF', async () => {
    const page = await adminAt('invoices')
    await page.click('table.list >> text=Draft')
    await page.waitForSelector('text=Draft invoice')
    await shot(page, 'invoice')
    await page.click('button:has-text("Finalize")')
    await page.waitForSelector('h1 .badge:has-text("FINALIZED")')
    const invoice = (await h.http('GET', `/v1/invoices/${seed.invoice.id}`)).body
    expect(invoice.invoice_status).toBe('FINALIZED')
    expect(await page.locator('h1').textContent()).toContain(invoice.invoice_number)

    // More than a line can take: the API refuses, and its message and field are shown.
    await page.click('button:has-text("New credit note")')
    const first = invoice.line_items[0].id
    await page.fill(`input[name=credit_${first}]`, '1000')
    await page.click('button:has-text("Create credit note")')
    await page.waitForSelector('.error')
    const refused = await h.http('POST', '/v1/creditnotes', { body: { invoice_id: invoice.id, reason: 'BILLING_ERROR', line_items: [{ invoice_line_item_id: first, amount: '1000' }] } })
    expect(refused.status).toBe(400)
    const shown = await page.locator('.error').first().textContent()
    expect(shown).toContain(refused.body.message)
    for (const field of Object.keys(refused.body.details)) expect(shown).toContain(field)

    await page.fill(`input[name=credit_${first}]`, '9.00')
    await page.click('button:has-text("Create credit note")')
    await page.waitForSelector('td:has-text("BILLING_ERROR")')

    await page.fill('input[name=payment_amount]', '50')
    await page.click('button:has-text("Record payment")')
    await expect.poll(async () => (await h.http('GET', `/v1/invoices/${seed.invoice.id}`)).body.amount_paid).toBe('50')
    const remaining = (await h.http('GET', `/v1/invoices/${seed.invoice.id}`)).body.amount_remaining
    await expect.poll(() => page.locator('[data-remaining]').textContent()).toBe(`${Number(remaining).toFixed(2)} USD`)
    await shot(page, 'invoice-finalized')

    // The PDF needs the key in a header: the console fetches it and opens it in a new tab.
    const [tab] = await Promise.all([page.context().waitForEvent('page'), page.click('button:has-text("Open PDF")')])
    await expect.poll(() => tab.evaluate(() => (globalThis as any).document.contentType)).toBe('application/pdf')
    await tab.close()
  })

  it('shows the catalog and retries a failed webhook delivery', async () => {
    const run = await h.http('POST', '/v1/jobs/webhook-delivery/run')
    expect(run.status, JSON.stringify(run.body)).toBe(200)
    const page = await adminAt('catalog')
    await page.waitForSelector('text=For growing teams')
    expect(await page.locator('main.content').textContent()).toContain('0.002 USD per unit')
    await shot(page, 'catalog')

    await page.click('nav >> text=Webhooks')
    await page.selectOption('select[name=delivery_status]', 'failed')
    const row = page.locator('tr[data-event]').first()
    await row.waitFor()
    const id = await row.getAttribute('data-event')
    await shot(page, 'webhooks')
    await row.locator('button:has-text("Retry")').click()
    await expect.poll(async () => (await h.http('GET', `/v1/webhooks/events/${id}`)).body.delivery_status).toBe('pending')
  })

  it('gives a read key everything to look at and every write control disabled, with the reason', async () => {
    const page = await signIn(readKey)
    expect(await page.locator('[data-role]').textContent()).toBe('read')
    await page.goto(`${h.baseUrl}/console/#/invoices`)
    await page.waitForSelector('table.list')
    const draft = await h.http('POST', '/v1/invoices', { body: { customer_id: seed.customer.id, currency: 'USD', subtotal: '5', total: '5', amount_due: '5', line_items: [{ display_name: 'Setup', amount: '5', quantity: '1' }] } })
    await page.goto(`${h.baseUrl}/console/#/invoices/${draft.body.id}`)
    const finalize = page.locator('button:has-text("Finalize")')
    await finalize.waitFor()
    expect(await finalize.isDisabled()).toBe(true)
    expect(await page.locator('button:has-text("Void")').isDisabled()).toBe(true)
    expect(await page.locator('main.content').textContent()).toContain('needs a write key: this key is read')
    const writes = await page.locator('button[data-write]').evaluateAll((bs) => bs.map((b: any) => b.disabled as boolean))
    expect(writes.length).toBeGreaterThan(0)
    expect(writes.every(Boolean)).toBe(true)
    // The new invoice's event, sent to an endpoint nobody listens on, fails: a Retry button to find disabled.
    expect((await h.http('POST', '/v1/jobs/webhook-delivery/run')).status).toBe(200)
    await page.goto(`${h.baseUrl}/console/#/webhooks`)
    await page.selectOption('select[name=delivery_status]', 'failed')
    await page.locator('tr[data-event]').first().waitFor()
    expect(await page.locator('button[data-write]').evaluateAll((bs) => bs.every((b: any) => b.disabled as boolean))).toBe(true)
  })

  it('switches an admin to the sandbox with a key minted for the tab, and back', async () => {
    const page = await signIn(h.key)
    await page.selectOption('select[name=environment]', h.tenant.environments.sandbox)
    await page.click('button:has-text("Create a key for")')
    await page.waitForSelector('aside.side')
    expect(await page.locator('select[name=environment]').inputValue()).toBe(h.tenant.environments.sandbox)
    await page.click('nav >> text=Customers')
    await page.waitForSelector('.empty')
    await page.selectOption('select[name=environment]', h.tenant.environments.production)
    await expect.poll(() => page.locator('select[name=environment]').inputValue()).toBe(h.tenant.environments.production)
  })

  it('ran without script errors or dialogs', () => {
    expect(problems).toEqual([])
  })
})
