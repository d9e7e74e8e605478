// An invoice usage line's usage_analytics (per event source) and usage_breakdown (per value of the meter's group_by)
// over HTTP: usage, event counts, shares and costs by hand, the costs adding up to the line to the cent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../../core/clock.ts'
import { customer, plan, usagePrice } from '../../../test/catalog.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { readyMeter } from '../../../test/usage-helpers.ts'
import type { InvoiceWire, Page } from '../../../test/wire.ts'

let h: Harness

beforeAll(async () => {
  h = await startHarness({ clock: fixedClock('2024-03-02T00:00:00Z'), env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0', INVOICE_GRACE_PERIOD_MINUTES: '0' } })
})
afterAll(() => h?.stop())

describe('usage analytics of an invoice line', () => {
  it('splits the line by source and by group_by value, largest remainder to the cent', async () => {
    const tokens = await readyMeter(h, { name: 'Tokens', event_name: 'tokens', aggregation: { type: 'SUM', field: 'tokens', group_by: 'model' } })
    // 1.00 per started package of 10 tokens.
    const p = await plan(h, { prices: [usagePrice(tokens, '1.00', { display_name: 'Tokens', billing_model: 'PACKAGE', transform_quantity: { divide_by: 10, round: 'up' } })] })
    const cus = await customer(h)
    const sub = await h.http('POST', '/v1/subscriptions', { body: { customer_id: cus.id, plan_id: p.id, currency: 'USD', billing_period: 'MONTHLY', start_date: '2024-02-01T00:00:00Z' } })
    expect(sub.status, JSON.stringify(sub.body)).toBe(201)
    const event = (id: string, at: string, source: string, model: string, n: number) => ({ event_id: id, event_name: 'tokens', external_customer_id: cus.external_id, timestamp: at, source, properties: { model, tokens: n } })
    const sent = await h.http('POST', '/v1/events/bulk', {
      body: {
        events: [
          event('w1', '2024-02-03T10:00:00Z', 'web', 'a', 1),
          event('p1', '2024-02-10T10:00:00Z', 'api', 'b', 2),
          event('p2', '2024-02-29T23:59:59.999Z', 'api', 'a', 4),
          // March: past the line's window.
          event('p3', '2024-03-01T00:00:00Z', 'api', 'b', 100),
        ],
      },
    })
    expect(sent.status, JSON.stringify(sent.body)).toBe(202)
    expect((await h.http('POST', '/v1/jobs/billing-run/run')).status).toBe(200)
    const invoices = (await h.http<Page<InvoiceWire>>('GET', `/v1/invoices?subscription_id=${sub.body.id}&limit=100`)).body.items
    const february = invoices.find((i) => i.line_items.some((l) => l.display_name === 'Tokens' && l.quantity === '7'))!
    expect(february, JSON.stringify(invoices.map((i) => i.line_items))).toBeDefined()
    const expanded = await h.http('GET', `/v1/invoices/${february.id}?expand=usage_analytics&expand=usage_breakdown`)
    expect(expanded.status, JSON.stringify(expanded.body)).toBe(200)
    const line = expanded.body.line_items.find((l: { display_name: string }) => l.display_name === 'Tokens')
    // 7 tokens → one package: 1.00.
    expect([line.quantity, line.amount]).toEqual(['7', '1'])
    // By source: api 6 of 7 → 85.714… cents, web 1 of 7 → 14.285… cents; floors 85 + 14 = 99, the cent left goes to
    // the larger remainder (api's .714).
    expect(line.usage_analytics).toEqual([
      { source: 'api', usage: '6', event_count: 2, percentage: '85.71', cost: '0.86' },
      { source: 'web', usage: '1', event_count: 1, percentage: '14.29', cost: '0.14' },
    ])
    // By model: a 5 of 7 → 71.428… cents, b 2 of 7 → 28.571… cents; the cent left goes to b (.571 > .428).
    expect(line.usage_breakdown).toEqual([
      { grouped_by: { model: 'a' }, usage: '5', event_count: 2, percentage: '71.43', cost: '0.71' },
      { grouped_by: { model: 'b' }, usage: '2', event_count: 1, percentage: '28.57', cost: '0.29' },
    ])
  })
})
