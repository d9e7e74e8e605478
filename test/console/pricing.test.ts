// The console's Pricing page in a real browser: a price change simulated on past usage from the form, its totals,
// the distribution chart, the top movers and the CSV; a read key sees the run button disabled.
// Two customers on a plan of 20.00 a month and 0.10 a call since the first of the month two months ago, with 100 and
// 300 calls last month: their invoices in the range (that first, last month's first, this month's first) bill
// 3 × 20 + 10 = 70.00 and 3 × 20 + 30 = 90.00; at 0.20 a call, 80.00 (+14.29%) and 120.00 (+33.33%).
import { readFileSync } from 'node:fs'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { customer, fixedPrice, plan, usagePrice } from '../catalog.ts'
import { startHarness, type Harness } from '../harness.ts'
import { readyMeter, send } from '../usage-helpers.ts'
import { browserTestsRun, launch } from './browser.ts'

describe.skipIf(!browserTestsRun)('console: Pricing', () => {
  let h: Harness
  let browser: Browser
  let usageId: string
  const customers: string[] = []
  const problems: string[] = []

  beforeAll(async () => {
    ;[h, browser] = await Promise.all([startHarness({ env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0' } }), launch()])
    const meterId = await readyMeter(h, { name: 'API calls', event_name: 'api_call', aggregation: { type: 'COUNT' } })
    const p = await plan(h, { name: 'Pro', prices: [fixedPrice('20.00', { display_name: 'Platform' }), usagePrice(meterId, '0.10', { display_name: 'API calls' })] })
    usageId = p.prices.find((x: { type: string }) => x.type === 'USAGE').id
    const now = new Date()
    const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 2, 1)).toISOString()
    const lastMonth = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 2)
    for (const [i, calls] of [100, 300].entries()) {
      const c = await customer(h)
      customers.push(c.id)
      const sub = await h.http('POST', '/v1/subscriptions', { body: { customer_id: c.id, plan_id: p.id, currency: 'USD', billing_period: 'MONTHLY', start_date: start } })
      expect(sub.status, JSON.stringify(sub.body)).toBe(201)
      const events = Array.from({ length: calls }, (_, k) => ({ id: `c${i}-${k}`, at: new Date(lastMonth + k * 1000).toISOString() }))
      await send(h, events, { customer: c.external_id, name: 'api_call' })
    }
    const run = await h.http('POST', '/v1/jobs/billing-run/run')
    expect(run.body.summary.failed, JSON.stringify(run.body.summary.errors)).toBe(0)
  }, 120_000)

  afterAll(async () => {
    await browser?.close()
    await h?.stop()
  })

  async function signIn(key: string, route: string): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1360, height: 900 }, acceptDownloads: true })
    const page = await context.newPage()
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`))
    page.on('console', (m) => m.type() === 'error' && !/Failed to load resource/.test(m.text()) && problems.push(`console error: ${m.text()}`))
    await page.goto(`${h.baseUrl}/`)
    await page.fill('input[name=key]', key)
    await page.click('button[type=submit]')
    await page.waitForSelector('aside.side')
    await page.click(`nav >> text=${route}`)
    return page
  }

  it('runs a simulation from the form and shows its totals, distribution, top movers and CSV', async () => {
    const page = await signIn(h.key, 'Pricing')
    await page.waitForSelector(`select[name=price_id] option[value="${usageId}"]`, { state: 'attached' })
    await page.selectOption('select[name=price_id]', usageId)
    await page.fill('input[name=amount]', '0.20')
    await page.click('button:has-text("Run the simulation")')
    await expect.poll(() => page.evaluate(() => (globalThis as any).location.hash), { timeout: 10_000 }).toMatch(/^#\/pricing\/sim_/)
    await page.waitForSelector('.badge:has-text("completed")', { timeout: 60_000 })
    await page.waitForSelector('table.list tbody tr')
    expect(await page.locator('.totals dd').allTextContents()).toEqual(['160.00 USD', '200.00 USD', '40.00 USD', '25%', '2', '6'])
    const count = (bucket: string) => page.locator(`.dist-row[data-bucket="${bucket}"] .dist-count`).textContent()
    expect([await count('10% to 20%'), await count('20% to 50%'), await count('unchanged')]).toEqual(['1', '1', '0'])
    const rows = await page.locator('table.list tbody tr').evaluateAll((trs) => trs.map((tr: any) => [...tr.querySelectorAll('td')].map((td: any) => td.textContent)))
    expect(rows).toEqual([
      [customers[1], '90.00 USD', '120.00 USD', '30.00 USD', '33.33%'],
      [customers[0], '70.00 USD', '80.00 USD', '10.00 USD', '14.29%'],
    ])
    const download = page.waitForEvent('download', { timeout: 10_000 })
    await page.click('text=Download CSV')
    const csv = readFileSync((await (await download).path())!, 'utf8').trim().split(/\r?\n/)
    expect(csv[0]).toBe('customer_id,price_id,current,candidate,difference,difference_percent,invoices')
    expect(csv).toContain(`${customers[1]},${usageId},30,60,30,100,`)
    expect(csv).toHaveLength(7)
    if (process.env.CONSOLE_SCREENSHOTS) await page.screenshot({ path: `${process.env.CONSOLE_SCREENSHOTS}/pricing.png`, fullPage: true })
  })

  it("a read key sees the form, its run button disabled with the reason", async () => {
    const read = (await h.http('POST', '/v1/secrets/api/keys', { body: { name: 'read', roles: ['read'] } })).body.api_key as string
    const page = await signIn(read, 'Pricing')
    const button = page.locator('button:has-text("Run the simulation")')
    expect(await button.isDisabled()).toBe(true)
    expect(await page.locator('.write .hint').textContent()).toContain('needs a write key')
  })

  it('ran without script errors', () => {
    expect(problems).toEqual([])
  })
})
