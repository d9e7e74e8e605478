// Subscription commitments on a fixed calendar, every amount computed by hand: a plan with a usage price
// of 0.10 per call → subscriptions with commitment_amount (with and without true-up, with an overage
// factor, for a partial period) → events → preview and billing run; then a grouped child's commitment on
// its parent's invoice, and prepaid credits applied at finalization to an invoice with a commitment.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../../core/clock.ts'
import { customer, fixedPrice, plan, usagePrice } from '../../../test/catalog.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { readyMeter, send } from '../../../test/usage-helpers.ts'
import { newWallet } from '../../../test/wallets.ts'
import type { InvoiceWire, LineItemWire, SubscriptionWire } from '../../../test/wire.ts'

let h: Harness
const clock = fixedClock('2024-04-20T00:00:00Z')
let planId: string
let seatPlanId: string

beforeAll(async () => {
  h = await startHarness({ clock, env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0', INVOICE_GRACE_PERIOD_MINUTES: '0' } })
  const meterId = await readyMeter(h, { name: 'API calls', event_name: 'api_call', aggregation: { type: 'COUNT' } })
  planId = (await plan(h, { prices: [usagePrice(meterId, '0.10', { display_name: 'API calls' })] })).id
  seatPlanId = (await plan(h, { prices: [fixedPrice('20.00', { display_name: 'Platform' }), usagePrice(meterId, '0.10', { display_name: 'API calls' })] })).id
})
afterAll(() => h?.stop())

const post = (path: string, body?: unknown) => h.http('POST', path, { body })
const at = (start: string, n: number) => Array.from({ length: n }, (_, i) => new Date(Date.parse(start) + i * 1000).toISOString())
const lines = (i: InvoiceWire) => i.line_items.map((l) => [l.display_name, l.quantity, l.amount])
const info = (l: LineItemWire) => l.commitment_info && [l.commitment_info.amount, l.commitment_info.computed_commitment_utilized_amount, l.commitment_info.computed_overage_amount, l.commitment_info.computed_true_up_amount]

/** A subscription from 1 April with `calls` calls on 12 April. */
async function committed(calls: number, body: Record<string, unknown>, plan = planId) {
  const cus = await customer(h)
  const res = await post('/v1/subscriptions', { customer_id: cus.id, plan_id: plan, currency: 'USD', billing_period: 'MONTHLY', collection_method: 'send_invoice', start_date: '2024-04-01T00:00:00Z', ...body })
  expect(res.status, JSON.stringify(res.body)).toBe(201)
  await send(h, at('2024-04-12T00:00:00Z', calls).map((t, i) => ({ id: `${res.body.id}-${i}`, at: t })), { customer: cus.external_id, name: 'api_call' })
  return res.body
}

const cycleInvoice = async (subId: string) => (await h.http('GET', `/v1/invoices?subscription_id=${subId}&billing_reason=SUBSCRIPTION_CYCLE`)).body.items[0]

describe('subscription commitment (commitment_amount, overage_factor, enable_true_up)', () => {
  let below: SubscriptionWire, belowNoTrueUp: SubscriptionWire, above: SubscriptionWire, partial: SubscriptionWire

  beforeAll(async () => {
    below = await committed(300, { commitment_amount: '100.00', enable_true_up: true })
    belowNoTrueUp = await committed(300, { commitment_amount: '100.00', enable_true_up: false })
    above = await committed(1500, { commitment_amount: '100.00', overage_factor: '1.5', enable_true_up: true }, seatPlanId)
    // Calendar billing from 11 April: the first period is 11 April – 1 May, 20 of April's 30 days.
    partial = await committed(300, { commitment_amount: '90.00', enable_true_up: true, billing_cycle: 'calendar', start_date: '2024-04-11T00:00:00Z' })
  })

  it('previews the period with the usage so far: 300 calls = 30.00, trued up to the 100.00 commitment', async () => {
    const preview = await post('/v1/invoices/preview', { subscription_id: below.id })
    expect(preview.status, JSON.stringify(preview.body)).toBe(200)
    expect(lines(preview.body)).toEqual([
      ['API calls', '300', '30'],
      ['Commitment true-up', '1', '70'],
    ])
    expect(preview.body.total).toBe('100')
    expect(preview.body.line_items.map(info)).toEqual([
      ['100', '30', '0', '0'],
      ['100', '0', '0', '70'],
    ])
  })

  it('bills the same at the period end; without true-up the shortfall is not billed', async () => {
    clock.set('2024-05-02T00:00:00Z')
    const run = await post('/v1/jobs/billing-run/run')
    expect(run.body.summary.failed, JSON.stringify(run.body.summary.errors)).toBe(0)

    const a = await cycleInvoice(below.id)
    expect([a.invoice_status, a.period_start, a.period_end, a.total]).toEqual(['FINALIZED', '2024-04-01T00:00:00.000Z', '2024-05-01T00:00:00.000Z', '100'])
    expect(lines(a)).toEqual([
      ['API calls', '300', '30'],
      ['Commitment true-up', '1', '70'],
    ])
    expect(a.line_items[1]).toMatchObject({ subscription_id: below.id, price_type: 'USAGE', period_start: '2024-04-01T00:00:00.000Z', period_end: '2024-05-01T00:00:00.000Z' })

    const b = await cycleInvoice(belowNoTrueUp.id)
    expect([b.total, lines(b)]).toEqual(['30', [['API calls', '300', '30']]])
    expect(info(b.line_items[0])).toEqual(['100', '30', '0', '0'])
  })

  it('bills usage above the commitment × the overage factor; fixed charges stay outside it', async () => {
    const c = await cycleInvoice(above.id)
    // 1500 × 0.10 = 150.00: 100.00 within the commitment, (150.00 − 100.00) × 1.5 = 75.00 above; plus May's
    // platform fee in advance, which the commitment does not cover.
    expect(lines(c)).toEqual([
      ['API calls', '1500', '175'],
      ['Platform', '1', '20'],
    ])
    expect(c.total).toBe('195')
    expect(info(c.line_items[0])).toEqual(['100', '100', '75', '0'])
    expect(c.line_items[1].commitment_info).toBeNull()
  })

  it('commits to its share of a partial period: 90.00 × 20/30 = 60.00', async () => {
    const d = await cycleInvoice(partial.id)
    expect([d.period_start, d.total]).toEqual(['2024-04-11T00:00:00.000Z', '60'])
    expect(lines(d)).toEqual([
      ['API calls', '300', '30'],
      ['Commitment true-up', '1', '30'],
    ])
  })

  it('refuses a commitment it cannot settle per period', async () => {
    const cus = await customer(h)
    const base = { customer_id: cus.id, plan_id: planId, currency: 'USD', billing_period: 'MONTHLY' }
    for (const [body, field] of [
      [{ commitment_amount: '100.005' }, 'commitment_amount'],
      [{ commitment_amount: '100.00', commitment_duration: 'ANNUAL' }, 'commitment_duration'],
      [{ commitment_amount: '100.00', auto_invoice_threshold: '50' }, 'commitment_amount'],
      [{ commitment_amount: '100.00', overage_factor: '0.5' }, 'overage_factor'],
    ] as const) {
      const res = await post('/v1/subscriptions', { ...base, ...body })
      expect([res.status, Object.keys(res.body.details ?? {})], JSON.stringify(body)).toEqual([400, [field]])
    }
  })
})

describe('commitments on a parent invoice and with prepaid credits', () => {
  let child: SubscriptionWire, parent: SubscriptionWire, prepaid: SubscriptionWire

  beforeAll(async () => {
    // Billed on 2 May, as above (the clock is there), for April.
    // The child: 300 calls = 30.00 against 100.00 committed, trued up by 70.00.
    child = await committed(300, { commitment_amount: '100.00', enable_true_up: true })
    // The parent: 500 calls = 50.00 against 40.00 committed: 40.00 within, (50.00 − 40.00) × 2 = 20.00 above.
    parent = await committed(500, { commitment_amount: '40.00', overage_factor: '2', enable_true_up: true, inheritance: { subscriptions_ids_for_grouped_invoicing: [child.id] } })
    // 50.00 of prepaid credits against 30.00 + 70.00 = 100.00.
    prepaid = await committed(300, { commitment_amount: '100.00', enable_true_up: true })
    await newWallet(h, prepaid.customer_id, { initial_credits_to_load: '50' })
    const run = await post('/v1/jobs/billing-run/run')
    expect(run.body.summary.failed, JSON.stringify(run.body.summary.errors)).toBe(0)
  })

  it("settles each member's commitment on its own usage lines of the parent's invoice", async () => {
    const invoice = await cycleInvoice(parent.id)
    expect([invoice.customer_id, invoice.invoice_status, invoice.total]).toEqual([parent.customer_id, 'FINALIZED', '160'])
    expect(lines(invoice)).toEqual([
      ['API calls', '500', '60'],
      ['API calls', '300', '30'],
      ['Commitment true-up', '1', '70'],
    ])
    expect(invoice.line_items.map(info)).toEqual([
      ['40', '40', '20', '0'],
      ['100', '30', '0', '0'],
      ['100', '0', '0', '70'],
    ])
    // The child's lines name it and its customer, and it is billed nowhere else.
    expect(invoice.line_items.map((l: LineItemWire) => [l.subscription_id, l.customer_id])).toEqual([
      [parent.id, parent.customer_id],
      [child.id, child.customer_id],
      [child.id, child.customer_id],
    ])
    expect((await h.http('GET', `/v1/invoices?subscription_id=${child.id}`)).body.items).toEqual([])
  })

  it('keeps commitment_info and the amounts when prepaid credits pay part of the invoice at finalization', async () => {
    const invoice = await cycleInvoice(prepaid.id)
    expect([invoice.invoice_status, invoice.subtotal, invoice.total, invoice.total_prepaid_credits_applied, invoice.amount_due]).toEqual(['FINALIZED', '100', '100', '50', '50'])
    expect(lines(invoice)).toEqual([
      ['API calls', '300', '30'],
      ['Commitment true-up', '1', '70'],
    ])
    expect(invoice.line_items.map(info)).toEqual([
      ['100', '30', '0', '0'],
      ['100', '0', '0', '70'],
    ])
    // Paid in line order: the 30.00 of usage, then 20.00 of the true-up.
    expect(invoice.line_items.map((l: LineItemWire) => l.prepaid_credits_applied)).toEqual(['30', '20'])
  })
})
