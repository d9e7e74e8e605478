// Billing fields that bound what is billed, end to end: a price's start_date and end_date (nothing is
// billed outside them, the boundary prorated), an entitlement's usage_reset_period (a DAILY limit
// on a monthly plan is one allowance per day) and its window (no allowance for a period starting outside it).
// March 2024: 31 days; a billing run on April 2.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../../core/clock.ts'
import { customer, fixedPrice, plan, subscribed, usagePrice } from '../../../test/catalog.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { readyMeter, send } from '../../../test/usage-helpers.ts'
import { call } from '../../../test/wallets.ts'

const clock = fixedClock('2024-04-02T00:00:00Z')
let h: Harness

beforeAll(async () => {
  h = await startHarness({ clock, env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0', INVOICE_GRACE_PERIOD_MINUTES: '0' } })
})
afterAll(() => h?.stop())

const at = (start: string, n: number) => Array.from({ length: n }, (_, i) => new Date(Date.parse(start) + i * 1000).toISOString())

/** The March invoice (billed on April 1) of a subscription: its lines as [name, quantity, amount]. */
async function marchInvoice(subId: string) {
  const run = await call(h, 'POST', '/v1/jobs/billing-run/run')
  expect(run.summary.failed, JSON.stringify(run.summary.errors)).toBe(0)
  const invoices = (await call(h, 'GET', `/v1/invoices?subscription_id=${subId}`)).items
  const april = invoices.find((i: any) => i.billing_sequence === 2)
  return { total: april.total, lines: april.line_items.map((l: any) => [l.display_name, l.quantity, l.amount, l.period_start.slice(0, 10), l.period_end.slice(0, 10)]), raw: april }
}

describe('price start_date and end_date', () => {
  it('a fixed price that ended on March 11 bills 10 days; a usage price from March 15 bills only the usage after it', async () => {
    const meterId = await readyMeter(h, { name: 'Calls', event_name: 'dated_call', aggregation: { type: 'COUNT' } })
    const p = await plan(h, {
      prices: [
        fixedPrice('31.00', { display_name: 'Support', invoice_cadence: 'ARREAR', end_date: '2024-03-11T00:00:00Z' }),
        usagePrice(meterId, '0.10', { display_name: 'Calls', start_date: '2024-03-15T00:00:00Z' }),
      ],
    })
    const c = await customer(h)
    const sub = await subscribed(h, { customer_id: c.id, plan_id: p.id, start_date: '2024-03-01T00:00:00Z', collection_method: 'send_invoice' })
    const events = [...at('2024-03-10T00:00:00Z', 50), ...at('2024-03-20T00:00:00Z', 70)]
    await send(h, events.map((t, i) => ({ id: `dated-${i}`, at: t })), { customer: c.external_id, name: 'dated_call' })

    const march = await marchInvoice(sub.id)
    // Support: 31.00 × 10/31 = 10.00. Calls: the 70 of March 20 × 0.10 = 7.00 (the 50 of March 10 came before the price).
    expect(march.lines).toEqual([
      ['Support', '1', '10', '2024-03-01', '2024-03-11'],
      ['Calls', '70', '7', '2024-03-15', '2024-04-01'],
    ])
    expect(march.total).toBe('17')
  })
})

describe('usage_reset_period', () => {
  it('a DAILY limit of 100 on a monthly plan: 130, 90 and 250 calls bill 30 + 0 + 150 = 180 calls, 18.00', async () => {
    const meterId = await readyMeter(h, { name: 'Daily calls', event_name: 'daily_call', aggregation: { type: 'COUNT' } })
    const feature = await call(h, 'POST', '/v1/features', { name: 'Daily calls', type: 'metered', meter_id: meterId }, 201)
    const p = await plan(h, {
      prices: [usagePrice(meterId, '0.10', { display_name: 'Calls' })],
      entitlements: [{ feature_id: feature.id, usage_limit: 100, usage_reset_period: 'DAILY', is_soft_limit: true }],
    })
    const c = await customer(h)
    const sub = await subscribed(h, { customer_id: c.id, plan_id: p.id, start_date: '2024-03-01T00:00:00Z', collection_method: 'send_invoice' })
    const events = [...at('2024-03-05T08:00:00Z', 130), ...at('2024-03-06T08:00:00Z', 90), ...at('2024-03-07T08:00:00Z', 250)]
    await send(h, events.map((t, i) => ({ id: `daily-${i}`, at: t })), { customer: c.external_id, name: 'daily_call' })

    const march = await marchInvoice(sub.id)
    // One allowance for the month would have billed 470 − 100 = 370 calls (37.00).
    expect(march.lines).toEqual([['Calls', '470', '18', '2024-03-01', '2024-04-01']])
    expect(march.raw.line_items[0].calculation).toMatchObject({ usage_reset_period: 'DAILY', allowance_windows: 31 })
  })
})

describe('an entitlement window', () => {
  it('an allowance that ended on March 1 gives March none: 150 calls bill 15.00, not 5.00', async () => {
    const meterId = await readyMeter(h, { name: 'Windowed calls', event_name: 'windowed_call', aggregation: { type: 'COUNT' } })
    const feature = await call(h, 'POST', '/v1/features', { name: 'Windowed calls', type: 'metered', meter_id: meterId }, 201)
    const p = await plan(h, {
      prices: [usagePrice(meterId, '0.10', { display_name: 'Calls' })],
      entitlements: [{ feature_id: feature.id, usage_limit: 100, usage_reset_period: 'MONTHLY', is_soft_limit: true, end_date: '2024-03-01T00:00:00Z' }],
    })
    const c = await customer(h)
    const sub = await subscribed(h, { customer_id: c.id, plan_id: p.id, start_date: '2024-03-01T00:00:00Z', collection_method: 'send_invoice' })
    await send(h, at('2024-03-05T08:00:00Z', 150).map((t, i) => ({ id: `windowed-${i}`, at: t })), { customer: c.external_id, name: 'windowed_call' })

    const march = await marchInvoice(sub.id)
    expect(march.lines).toEqual([['Calls', '150', '15', '2024-03-01', '2024-04-01']])
  })
})
