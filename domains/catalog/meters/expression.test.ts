// Meter expressions over HTTP: checked when the meter is made, computed per event with exact decimals
// for events sent before the meter (backfill) and after it (intake), and billed as they count.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../../core/clock.ts'
import { customer, plan, subscribed, usagePrice } from '../../../test/catalog.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { readyMeter, send, usage } from '../../../test/usage-helpers.ts'
import { call } from '../../../test/wallets.ts'

const clock = fixedClock('2025-04-02T00:00:00Z')
let h: Harness

beforeAll(async () => {
  h = await startHarness({ clock, env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0', INVOICE_GRACE_PERIOD_MINUTES: '0' } })
})
afterAll(() => h?.stop())

const RANGE = { start_time: '2025-03-01T00:00:00Z', end_time: '2025-04-01T00:00:00Z' }

describe('aggregation.expression', () => {
  it('refuses an expression it cannot compute, naming the field, and makes no meter', async () => {
    const before = (await call(h, 'GET', '/v1/meters?limit=1000')).items.length
    for (const [aggregation, field] of [
      [{ type: 'SUM', expression: 'process.exit(1)' }, 'aggregation.expression'],
      [{ type: 'SUM', expression: 'properties.a +' }, 'aggregation.expression'],
      [{ type: 'COUNT', expression: 'properties.a' }, 'aggregation.expression'],
      [{ type: 'SUM', field: 'a', expression: 'properties.a' }, 'aggregation.field'],
    ] as const) {
      const res = await h.http('POST', '/v1/meters', { body: { name: 'bad', event_name: 'llm', aggregation } })
      expect([res.status, res.body.code, Object.keys(res.body.details)], JSON.stringify(aggregation)).toEqual([400, 'validation_error', [field]])
    }
    expect((await call(h, 'GET', '/v1/meters?limit=1000')).items.length).toBe(before)
  })

  it('weights output tokens three times, exactly, for events before and after the meter, and bills them', async () => {
    const c = await customer(h)
    const at = '2025-03-10T00:00:00Z'
    // Before the meter: 1000 + 200 × 3 = 1600 (backfilled).
    await send(h, [{ id: 'tok-1', at, props: { input_tokens: 1000, output_tokens: 200 } }], { customer: c.external_id, name: 'llm.call' })
    const expression = 'properties.input_tokens + properties.output_tokens * 3'
    const meterId = await readyMeter(h, { name: 'Weighted tokens', event_name: 'llm.call', aggregation: { type: 'SUM', expression } })
    expect((await call(h, 'GET', `/v1/meters/${meterId}`)).aggregation).toEqual({ type: 'SUM', expression })
    // After it: 0.5 + 0.1 × 3 = 0.8 (decimals, exact); 10 + 5 × 3 = 25; one without output_tokens counts nothing.
    await send(
      h,
      [
        { id: 'tok-2', at, props: { input_tokens: '0.5', output_tokens: 0.1 } },
        { id: 'tok-3', at, props: { input_tokens: 10, output_tokens: 5 } },
        { id: 'tok-4', at, props: { input_tokens: 10 } },
      ],
      { customer: c.external_id, name: 'llm.call' },
    )
    // 1600 + 0.8 + 25 = 1625.8
    expect((await usage(h, { meter_id: meterId, external_customer_id: c.external_id, ...RANGE })).value).toBe('1625.8')

    const p = await plan(h, { prices: [usagePrice(meterId, '0.01', { display_name: 'Tokens' })] })
    const sub = await subscribed(h, { customer_id: c.id, plan_id: p.id, start_date: '2025-03-01T00:00:00Z', collection_method: 'send_invoice' })
    await call(h, 'POST', '/v1/jobs/billing-run/run')
    const march = (await call(h, 'GET', `/v1/invoices?subscription_id=${sub.id}`)).items.find((i: any) => i.billing_sequence === 2)
    // 1625.8 × 0.01 = 16.258 → 16.26
    expect(march.line_items.map((l: any) => [l.quantity, l.amount])).toEqual([['1625.8', '16.26']])
  })

  it('a conditional: pro seconds count twice', async () => {
    const c = await customer(h)
    const meterId = await readyMeter(h, { name: 'Compute', event_name: 'job.done', aggregation: { type: 'SUM', expression: 'properties.tier == "pro" ? properties.seconds * 2 : properties.seconds' } })
    const at = '2025-03-12T00:00:00Z'
    await send(
      h,
      [
        { id: 'job-1', at, props: { tier: 'pro', seconds: 30 } },
        { id: 'job-2', at, props: { tier: 'free', seconds: 45 } },
      ],
      { customer: c.external_id, name: 'job.done' },
    )
    // 30 × 2 + 45 = 105
    expect((await usage(h, { meter_id: meterId, external_customer_id: c.external_id, ...RANGE })).value).toBe('105')
  })
})
