// reset_usage over HTTP: a NEVER meter bills everything used up to each period's end (storage held, not
// storage added), a BILLING_PERIOD meter next to it only its period. Every quantity and amount by hand.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../../core/clock.ts'
import { customer, fixedPrice, plan, usagePrice } from '../../../test/catalog.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { readyMeter, send, usage } from '../../../test/usage-helpers.ts'
import type { CustomerWire, InvoiceWire, LineItemWire, Page, SubscriptionWire } from '../../../test/wire.ts'

let h: Harness
const clock = fixedClock('2024-04-02T00:00:00Z')

beforeAll(async () => {
  h = await startHarness({ clock, env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0', INVOICE_GRACE_PERIOD_MINUTES: '0' } })
})
afterAll(() => h?.stop())

const post = (path: string, body?: unknown) => h.http('POST', path, { body })
const invoicesOf = async (subId: string) =>
  (await h.http<Page<InvoiceWire>>('GET', `/v1/invoices?subscription_id=${subId}&limit=100`)).body.items.sort((a, b) => a.billing_sequence - b.billing_sequence)
const lines = (i: InvoiceWire) => Object.fromEntries(i.line_items.map((l) => [l.display_name, [l.quantity, l.amount]]))

describe('reset_usage NEVER next to BILLING_PERIOD', () => {
  let sub: SubscriptionWire
  let storage: string
  let cus: CustomerWire

  beforeAll(async () => {
    storage = await readyMeter(h, { name: 'Storage', event_name: 'storage', aggregation: { type: 'SUM', field: 'gb' }, reset_usage: 'NEVER' })
    const calls = await readyMeter(h, { name: 'Calls', event_name: 'call', aggregation: { type: 'COUNT' }, reset_usage: 'BILLING_PERIOD' })
    const p = await plan(h, {
      prices: [fixedPrice('10.00', { display_name: 'Platform' }), usagePrice(storage, '0.50', { display_name: 'Storage GB' }), usagePrice(calls, '0.10', { display_name: 'Calls' })],
    })
    cus = await customer(h)
    const res = await post('/v1/subscriptions', { customer_id: cus.id, plan_id: p.id, currency: 'USD', billing_period: 'MONTHLY', start_date: '2024-02-01T00:00:00Z' })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    sub = res.body
    // GB added (+) and removed (−): before the subscription, in February, in March, and after March's end.
    await send(
      h,
      [
        { id: 's1', at: '2024-01-20T08:00:00Z', props: { gb: 5 } },
        { id: 's2', at: '2024-02-10T08:00:00Z', props: { gb: 10 } },
        { id: 's3', at: '2024-02-20T08:00:00Z', props: { gb: -3 } },
        { id: 's4', at: '2024-03-05T08:00:00Z', props: { gb: 8 } },
        { id: 's5', at: '2024-03-31T23:59:59.999Z', props: { gb: 0.5 } },
        { id: 's6', at: '2024-04-01T00:00:00Z', props: { gb: 100 } },
      ],
      { customer: cus.external_id, name: 'storage' },
    )
    const calls3 = ['2024-01-25T00:00:00Z', '2024-02-02T00:00:00Z', '2024-02-03T00:00:00Z', '2024-02-29T23:59:59Z', '2024-03-01T00:00:00Z', '2024-03-15T00:00:00Z', '2024-04-01T10:00:00Z']
    await send(h, calls3.map((at, i) => ({ id: `c${i}`, at })), { customer: cus.external_id, name: 'call' })
  })

  it('bills the cumulative quantity each period for NEVER, the period alone for BILLING_PERIOD', async () => {
    const run = await post('/v1/jobs/billing-run/run')
    expect(run.status, JSON.stringify(run.body)).toBe(200)
    const [first, february, march] = await invoicesOf(sub.id)
    expect(first.billing_reason).toBe('SUBSCRIPTION_CREATE')
    // February: storage 5 (January, before the subscription) + 10 − 3 = 12 GB × 0.50 = 6; calls 3 (Feb 2, 3, 29) × 0.10.
    expect([february.period_start, february.period_end]).toEqual(['2024-02-01T00:00:00.000Z', '2024-03-01T00:00:00.000Z'])
    expect(lines(february)).toEqual({ 'Storage GB': ['12', '6'], Calls: ['3', '0.3'], Platform: ['1', '10'] })
    expect(february.total).toBe('16.3')
    // March: 12 + 8 + 0.5 = 20.5 GB × 0.50 = 10.25 (the 100 GB of April 1 00:00 is past the end); calls 2.
    expect(lines(march)).toEqual({ 'Storage GB': ['20.5', '10.25'], Calls: ['2', '0.2'], Platform: ['1', '10'] })
    expect(march.total).toBe('20.45')
    // The line's usage analytics explain the billed 20.5 GB, not March's own 8.5.
    const expanded = (await h.http<InvoiceWire>('GET', `/v1/invoices/${march.id}?expand=usage_analytics`)).body
    const storageLine = expanded.line_items.find((l) => l.display_name === 'Storage GB')!
    expect(storageLine.usage_analytics!.map((a) => [a.usage, a.cost])).toEqual([['20.5', '10.25']])
  })

  it('previews April with everything stored up to now', async () => {
    const preview = await post('/v1/invoices/preview', { subscription_id: sub.id })
    expect(preview.status, JSON.stringify(preview.body)).toBe(200)
    // 20.5 + 100 = 120.5 GB × 0.50 = 60.25; one call on April 1.
    const usageLines = preview.body.line_items.filter((l: LineItemWire) => l.price_type === 'USAGE')
    expect(Object.fromEntries(usageLines.map((l: LineItemWire) => [l.display_name, [l.quantity, l.amount]]))).toEqual({ 'Storage GB': ['120.5', '60.25'], Calls: ['1', '0.1'] })
  })

  it('the usage query answers the range it is asked, whatever reset_usage says', async () => {
    const march = await usage(h, { meter_id: storage, external_customer_id: cus.external_id, start_time: '2024-03-01T00:00:00Z', end_time: '2024-04-01T00:00:00Z' })
    expect(march.value).toBe('8.5')
  })
})
