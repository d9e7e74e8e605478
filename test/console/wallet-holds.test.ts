// The wallet on a customer's console page shows its credit holds: held and available credits beside the
// balance, and a table of the active holds (a settled one leaves it). In a real browser, as console.test.ts.
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../harness.ts'
import { browserTestsRun, launch } from './browser.ts'

describe.skipIf(!browserTestsRun)('console: wallet holds', () => {
  let h: Harness
  let browser: Browser

  beforeAll(async () => {
    ;[h, browser] = await Promise.all([startHarness({ env: { KAFKA_BROKERS: '' } }), launch()])
  })
  afterAll(async () => {
    await browser?.close()
    await h?.stop()
  })

  const ok = async (method: string, path: string, body?: unknown) => {
    const res = await h.http(method, path, { body })
    expect(res.status, JSON.stringify(res.body)).toBeLessThan(300)
    return res.body
  }

  it('shows held and available credits and the active holds', async () => {
    const customer = await ok('POST', '/v1/customers', { external_id: 'holds-console', name: 'Holds Co' })
    const wallet = await ok('POST', '/v1/wallets', { customer_id: customer.id, currency: 'USD', initial_credits_to_load: '100' })
    const active = await ok('POST', `/v1/wallets/${wallet.id}/holds`, { amount: '20' })
    const settled = await ok('POST', `/v1/wallets/${wallet.id}/holds`, { amount: '5' })
    await ok('POST', `/v1/wallets/holds/${settled.id}/settle`, { amount: '5' })

    const page = await (await browser.newContext()).newPage()
    const problems: string[] = []
    page.on('pageerror', (e) => problems.push(e.message))
    await page.goto(`${h.baseUrl}/`)
    await page.fill('input[name=key]', h.key)
    await page.click('button[type=submit]')
    await page.waitForSelector('aside.side')
    await page.goto(`${h.baseUrl}/console/#/customers/${customer.id}`)
    await page.reload()
    await page.waitForSelector('[data-holds]')
    expect(await page.locator('[data-held]').textContent()).toBe('20')
    expect(await page.locator('[data-available]').textContent()).toBe('75')
    const table = await page.locator('[data-holds]').textContent()
    expect(table).toContain(active.id)
    expect(table).not.toContain(settled.id)
    expect(table).toContain('Active holds (1)')
    expect(problems).toEqual([])
  })
})
