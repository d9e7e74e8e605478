// The customer page's usage reconciliation panel: last month's usage billed by the billing run, then one late event →
// the panel shows unsettled 1 for that meter, flagged with its explanation, and every number is the API's answer.
// In a real browser, as console.test.ts.
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { created, customer, plan, usagePrice } from '../catalog.ts'
import { startHarness, type Harness } from '../harness.ts'
import { readyMeter } from '../usage-helpers.ts'
import { browserTestsRun, launch, signIn } from './browser.ts'

// Last calendar month (UTC): the panel's default period and the subscription's first billed period.
const now = new Date()
const month = (offset: number) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + offset, 1))
const [periodStart, periodEnd] = [month(-1), month(0)]
const inPeriod = (day: number) => new Date(periodStart.getTime() + (day - 1) * 86_400_000).toISOString()
const COLUMNS = ['received', 'stored', 'corrected', 'counted', 'billed', 'adjusted', 'unsettled'] as const

describe.skipIf(!browserTestsRun)('console: usage reconciliation', () => {
  let h: Harness
  let browser: Browser

  beforeAll(async () => {
    ;[h, browser] = await Promise.all([
      startHarness({ roles: ['api', 'ingest'], env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0', INVOICE_GRACE_PERIOD_MINUTES: '0' } }),
      launch(),
    ])
  })
  afterAll(async () => {
    await browser?.close()
    await h?.stop()
  })

  const call = async (method: string, path: string, status: number, body?: unknown) => {
    const res = await h.http(method, path, { body })
    expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(status)
    return res.body
  }

  it('shows a late event as unsettled 1, with the numbers of the API', async () => {
    const calls = await readyMeter(h, { name: 'Calls', event_name: 'call', aggregation: { type: 'COUNT' } })
    const p = await plan(h, { prices: [usagePrice(calls, '0.10', { display_name: 'Calls' })] })
    const cus = await customer(h)
    await created(h, '/v1/subscriptions', { customer_id: cus.id, plan_id: p.id, currency: 'USD', billing_period: 'MONTHLY', start_date: periodStart.toISOString() })
    const event = (id: string, day: number) => ({ event_id: id, event_name: 'call', external_customer_id: cus.external_id, timestamp: inPeriod(day) })
    await call('POST', '/v1/events/bulk', 202, { events: [event('c1', 3), event('c2', 9), event('c3', 17)] })

    const report = async () => (await call('GET', `/v1/customers/${cus.id}/usage/reconciliation?start_time=${periodStart.toISOString()}&end_time=${periodEnd.toISOString()}`, 200)) as { meters: Record<string, unknown>[] }
    const stored = async (n: number) => {
      const deadline = Date.now() + 10_000
      while ((await report()).meters.find((m) => m.meter_id === calls)?.stored !== n) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${n} stored events`)
        await new Promise((r) => setTimeout(r, 100))
      }
    }
    await stored(3)
    await call('POST', '/v1/jobs/billing-run/run', 200)
    await call('POST', '/v1/events', 202, event('late', 25))
    await stored(4)
    const api = (await report()).meters.find((m) => m.meter_id === calls)!
    expect(api).toMatchObject({ received: 4, stored: 4, corrected: 0, counted: 4, billed: 3, adjusted: 0, unsettled: 1 })

    const problems: string[] = []
    const page = await signIn(browser, h.baseUrl, h.key, problems)
    await page.goto(`${h.baseUrl}/console/#/customers/${cus.id}`)
    await page.reload()
    const row = page.locator(`[data-reconciliation] tr[data-meter="${calls}"]`)
    await row.waitFor()
    const cells = (await row.locator('td').allTextContents()).map((t) => t.trim())
    expect(cells).toEqual(['Calls', ...COLUMNS.map((c) => String(api[c]))])
    expect(await row.locator('[data-unsettled-flag]').textContent()).toBe('1')
    expect(await page.locator('[data-unsettled-note]').textContent()).toContain('the usage-adjustments job issues the difference')

    // The current month: none of these events, nothing flagged.
    await page.selectOption('select[name=reconciliation-period]', month(0).toISOString())
    await page.waitForSelector('[data-reconciliation] [data-unsettled-note]', { state: 'detached' })
    expect(await page.locator('[data-reconciliation] [data-unsettled-flag]').count()).toBe(0)
    expect(problems).toEqual([])
  })
})
