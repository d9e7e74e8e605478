// The console's test clocks page in a real browser (as console.test.ts): in a sandbox environment it lists a
// clock with its customers, and "Advance" moves the clock, showing it ready at the new time. Production has no
// such page in the navigation.
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../harness.ts'
import { browserTestsRun, launch } from './browser.ts'

describe.skipIf(!browserTestsRun)('console: test clocks', () => {
  let h: Harness
  let browser: Browser
  let sandboxKey: string

  beforeAll(async () => {
    ;[h, browser] = await Promise.all([startHarness({ env: { KAFKA_BROKERS: '' } }), launch()])
    sandboxKey = (await h.http('POST', '/v1/secrets/api/keys', { body: { name: 'sandbox', roles: ['admin'], environment_id: h.tenant.environments.sandbox } })).body.api_key
  })
  afterAll(async () => {
    await browser?.close()
    await h?.stop()
  })

  const ok = async (method: string, path: string, body?: unknown) => {
    const res = await h.http(method, path, { body, key: sandboxKey })
    expect(res.status, JSON.stringify(res.body)).toBeLessThan(300)
    return res.body
  }

  async function signIn(key: string, problems: string[]): Promise<Page> {
    const page = await (await browser.newContext()).newPage()
    page.on('pageerror', (e) => problems.push(e.message))
    await page.goto(`${h.baseUrl}/`)
    await page.fill('input[name=key]', key)
    await page.click('button[type=submit]')
    await page.waitForSelector('aside.side')
    return page
  }

  it("shows a sandbox clock's customers and advances it", async () => {
    const clock = await ok('POST', '/v1/test_clocks', { name: 'Console clock', frozen_time: '2031-01-01T00:00:00Z' })
    const customer = await ok('POST', '/v1/customers', { external_id: 'clocked-console', name: 'Clocked Co', test_clock_id: clock.id })
    await ok('POST', '/v1/customers', { external_id: 'wall-console', name: 'Wall Co' })
    const problems: string[] = []
    const page = await signIn(sandboxKey, problems)
    await page.click('nav a[href="#/test-clocks"]')
    await page.waitForSelector(`[data-clock="${clock.id}"] [data-customer="${customer.id}"]`)
    const card = page.locator(`[data-clock="${clock.id}"]`)
    expect(await card.textContent()).not.toContain('Wall Co')
    expect(await card.locator('[data-frozen-time]').textContent()).toBe('2031-01-01T00:00:00.000Z')
    await card.locator('input[name=advance_to]').fill('2031-03-01T00:00')
    await card.locator('button:has-text("Advance")').click()
    await page.waitForFunction(
      (id: string) => (globalThis as any).document.querySelector(`[data-clock="${id}"] [data-frozen-time]`)?.textContent === '2031-03-01T00:00:00.000Z',
      clock.id,
      { timeout: 30_000 },
    )
    expect(await card.textContent()).toContain('ready')
    expect(problems).toEqual([])
  })

  it('has no test clocks in production', async () => {
    const page = await signIn(h.key, [])
    expect(await page.locator('nav a[href="#/test-clocks"]').count()).toBe(0)
  })
})
