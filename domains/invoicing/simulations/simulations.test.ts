// Pricing simulations end to end, every amount computed by hand. A plan "P" bills 20.00 a month in advance and
// 0.10 a call in arrears; each customer makes 100 calls in January and 300 in February 2024 and is billed by the
// billing run on 2 March (invoices of 1 January, 1 February and 1 March). The simulations cover the points dated
// in [1 February, 2 March): the 1 February invoice (January's calls, February's fee) and the 1 March one.
// Today's prices: 20 + 10 + 20 + 30 = 80.00 a customer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../../core/clock.ts'
import { customer, fixedPrice, plan, usagePrice } from '../../../test/catalog.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { readyMeter, send } from '../../../test/usage-helpers.ts'

let h: Harness
const clock = fixedClock('2024-01-01T00:00:00Z')
let P: { id: string; prices: { id: string; type: string }[] }
let fixedId: string
let usageId: string
const subs: Record<'plain' | 'committed' | 'coupon', { id: string; customer_id: string; external_id: string; name: string }> = {} as never
const WINDOW = { start_time: '2024-02-01T00:00:00Z', end_time: '2024-03-02T00:00:00Z' }

const post = (path: string, body?: unknown, key?: string) => h.http('POST', path, { body, key })
const at = (start: string, n: number) => Array.from({ length: n }, (_, i) => new Date(Date.parse(start) + i * 1000).toISOString())

async function subscribe(name: string, body: Record<string, unknown> = {}) {
  const cus = await customer(h)
  const res = await post('/v1/subscriptions', { customer_id: cus.id, plan_id: P.id, currency: 'USD', billing_period: 'MONTHLY', collection_method: 'send_invoice', start_date: '2024-01-01T00:00:00Z', ...body })
  expect(res.status, JSON.stringify(res.body)).toBe(201)
  return { id: res.body.id as string, customer_id: cus.id as string, external_id: cus.external_id as string, name }
}

/** Asks for a simulation and reads it until it is done. */
async function simulate(body: Record<string, unknown>): Promise<any> {
  const res = await post('/v1/pricing/simulations', { name: 'test', ...WINDOW, ...body })
  expect(res.status, JSON.stringify(res.body)).toBe(202)
  expect(['pending', 'running', 'completed']).toContain(res.body.status)
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
    const got = await h.http('GET', `/v1/pricing/simulations/${res.body.id}`)
    if (got.body.status === 'completed' || got.body.status === 'failed') return got.body
  }
  throw new Error('simulation never finished')
}

const customersOf = async (id: string, query = '') => (await h.http('GET', `/v1/pricing/simulations/${id}/customers${query}`)).body
const usageOnly = (overrides: Record<string, unknown>) => ({ price_overrides: [{ price_id: usageId, ...overrides }] })
/** [current, candidate] of one customer's only result. */
async function amounts(customerId: string, candidate: unknown): Promise<[string, string, any]> {
  const sim = await simulate({ customer_ids: [customerId], candidate })
  expect(sim.status, sim.error).toBe('completed')
  return [sim.totals.current, sim.totals.candidate, sim]
}

beforeAll(async () => {
  h = await startHarness({ clock, env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0', INVOICE_GRACE_PERIOD_MINUTES: '0' } })
  const meterId = await readyMeter(h, { name: 'API calls', event_name: 'api_call', aggregation: { type: 'COUNT' } })
  P = await plan(h, { prices: [fixedPrice('20.00', { display_name: 'Platform' }), usagePrice(meterId, '0.10', { display_name: 'API calls' })] })
  fixedId = P.prices.find((p) => p.type === 'FIXED')!.id
  usageId = P.prices.find((p) => p.type === 'USAGE')!.id
  subs.plain = await subscribe('plain')
  subs.committed = await subscribe('committed', { commitment_amount: '25.00', enable_true_up: true })
  const coupon = (await post('/v1/coupons', { name: 'Two months 10%', type: 'percentage', cadence: 'repeated', duration_in_periods: 2, percentage_off: '10' })).body
  subs.coupon = await subscribe('coupon', { coupons: [coupon.id] })
  clock.set('2024-03-02T00:00:00Z')
  for (const sub of Object.values(subs)) {
    await send(h, [...at('2024-01-10T00:00:00Z', 100), ...at('2024-02-10T00:00:00Z', 300)].map((t, i) => ({ id: `${sub.name}-${i}`, at: t })), { customer: sub.external_id, name: 'api_call' })
  }
  const run = await post('/v1/jobs/billing-run/run')
  expect(run.body.summary.failed, JSON.stringify(run.body.summary.errors)).toBe(0)
}, 120_000)
afterAll(() => h?.stop())

describe('pricing simulation', () => {
  it("today's prices as the candidate: 0 difference for every customer, and current is what the invoices billed before tax", async () => {
    const sim = await simulate({ candidate: usageOnly({ amount: '0.10' }) })
    expect(sim.status, sim.error).toBe('completed')
    expect(sim.progress).toMatchObject({ percent: 100, processed_subscriptions: 3, total_subscriptions: 3 })
    expect(sim.totals).toMatchObject({ difference: '0', difference_percent: '0', customers: 3, invoices: 6 })
    const unchanged = sim.distribution.find((b: any) => b.from_percent === 0 && b.to_percent === 0)
    expect(unchanged.customers).toBe(3)
    const page = await customersOf(sim.id, '?sort=customer_id&order=asc')
    expect(page.pagination.total).toBe(3)
    for (const c of page.items) {
      expect(c.difference).toBe('0')
      // The cycle invoices of 1 February and 1 March, as stored: subtotal less discounts.
      const invoices = (await h.http('GET', `/v1/invoices?customer_id=${c.customer_id}&billing_reason=SUBSCRIPTION_CYCLE`)).body.items
      expect(invoices).toHaveLength(2)
      const billed = invoices.reduce((s: number, i: any) => s + Math.round((Number(i.subtotal) - Number(i.total_discount)) * 100), 0)
      expect(Math.round(Number(c.current) * 100)).toBe(billed)
    }
    // Plain 80.00; committed: January's 10.00 trued up to 25.00 → 95.00; coupon: 10% off the February invoice only → 77.00.
    expect(Object.fromEntries(page.items.map((c: any) => [c.customer_id, c.current]))).toEqual({ [subs.plain.customer_id]: '80', [subs.committed.customer_id]: '95', [subs.coupon.customer_id]: '77' })
  })

  it('doubling the usage price doubles the usage lines only; customers sorted by the size of the change', async () => {
    const sim = await simulate({ candidate: usageOnly({ amount: '0.20' }) })
    // Plain: usage 40 → 80: 120.00 (+50%). Committed: 20 + 5 true-up + 20 | 60 + 20 = 125.00.
    // Coupon: (20 + 20) × 0.9 = 36 | 20 + 60 = 80: 116.00.
    expect(sim.totals).toMatchObject({ current: '252', candidate: '361', difference: '109', difference_percent: '43.25' })
    const page = await customersOf(sim.id)
    expect(page.items.map((c: any) => [c.customer_id, c.current, c.candidate, c.difference, c.difference_percent])).toEqual([
      [subs.plain.customer_id, '80', '120', '40', '50'],
      [subs.coupon.customer_id, '77', '116', '39', '50.65'],
      [subs.committed.customer_id, '95', '125', '30', '31.58'],
    ])
    const plain = page.items[0].lines
    expect(plain.map((l: any) => [l.price_id, l.current, l.candidate])).toEqual(
      expect.arrayContaining([
        [fixedId, '40', '40'],
        [usageId, '40', '80'],
      ]),
    )
    // The shared commitment's true-up is its own line (no price): 15.00 now, 5.00 with the candidate.
    const committed = page.items[2].lines
    expect(committed.find((l: any) => l.price_id === null)).toMatchObject({ current: '15', candidate: '5' })
    expect(committed.find((l: any) => l.price_id === usageId)).toMatchObject({ current: '40', candidate: '80' })
    const buckets = sim.distribution.filter((b: any) => b.customers > 0).map((b: any) => [b.from_percent, b.to_percent, b.customers])
    expect(buckets).toEqual([
      [20, 50, 1],
      [50, null, 2],
    ])
  })

  it('prices tiers, packages, allowances and minimum quantities as the invoice would', async () => {
    const c = subs.plain.customer_id
    // SLAB: 100 at 0.10, the rest at 0.05 → January 10.00, February 10 + 200 × 0.05 = 20.00; + 40 fixed = 70.00.
    const tiers = [
      { up_to: 100, unit_amount: '0.10' },
      { up_to: null, unit_amount: '0.05' },
    ]
    expect((await amounts(c, usageOnly({ billing_model: 'TIERED', tier_mode: 'SLAB', tiers }))).slice(0, 2)).toEqual(['80', '70'])
    // VOLUME: all 300 at the tier reached (0.05) → 10.00 + 15.00 + 40 = 65.00.
    expect((await amounts(c, usageOnly({ billing_model: 'TIERED', tier_mode: 'VOLUME', tiers }))).slice(0, 2)).toEqual(['80', '65'])
    // 5.00 per started 100 calls: 1 and 3 packages → 5 + 15 + 40 = 60.00.
    expect((await amounts(c, usageOnly({ billing_model: 'PACKAGE', amount: '5', transform_quantity: { divide_by: 100, round: 'up' } }))).slice(0, 2)).toEqual(['80', '60'])
    // 50 free calls a month: 50 and 250 billed → 5 + 25 + 40 = 70.00.
    expect((await amounts(c, usageOnly({ allowance: 50 }))).slice(0, 2)).toEqual(['80', '70'])
    // At least 200 calls a month: January billed as 200 → 20 + 30 + 40 = 90.00.
    expect((await amounts(c, usageOnly({ min_quantity: '200' }))).slice(0, 2)).toEqual(['80', '90'])
    // The platform fee at 25.00: 50 + 40 = 90.00.
    expect((await amounts(c, { price_overrides: [{ price_id: fixedId, amount: '25.00' }] })).slice(0, 2)).toEqual(['80', '90'])
  })

  it("a whole plan as the candidate: its prices and its entitlements' allowances replace the plan lines", async () => {
    const meterId = (await h.http('GET', `/v1/prices/${usageId}`)).body.meter_id
    const feature = await h.http('POST', '/v1/features', { body: { name: 'Calls', type: 'metered', meter_id: meterId } })
    expect(feature.status, JSON.stringify(feature.body)).toBe(201)
    const Q = await plan(h, {
      prices: [fixedPrice('25.00', { display_name: 'Platform v2' }), usagePrice(meterId, '0.05', { display_name: 'API calls v2' })],
      entitlements: [{ feature_id: feature.body.id, usage_limit: 100, usage_reset_period: 'MONTHLY', is_soft_limit: true }],
    })
    // 100 calls a month included: January's 100 free, 200 of February's billed at 0.05. 25 + 0 | 25 + 10 = 60.00.
    const [current, candidate, sim] = await amounts(subs.plain.customer_id, { plan_id: Q.id })
    expect([current, candidate, sim.totals.difference_percent]).toEqual(['80', '60', '-25'])
    const [line] = (await customersOf(sim.id)).items
    expect(line.lines.map((l: any) => [l.price_id, l.current, l.candidate])).toEqual(
      expect.arrayContaining([
        [fixedId, '40', '0'],
        [usageId, '40', '0'],
        [Q.prices.find((p: any) => p.type === 'FIXED').id, '0', '50'],
        [Q.prices.find((p: any) => p.type === 'USAGE').id, '0', '10'],
      ]),
    )
  })

  it('exports the customers as CSV: a total row each, then one row per price', async () => {
    const [, , sim] = await amounts(subs.plain.customer_id, usageOnly({ amount: '0.20' }))
    const res = await fetch(`${h.baseUrl}/v1/pricing/simulations/${sim.id}/export`, { headers: { 'x-api-key': h.tenant.apiKey } })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('text/csv')
    const rows = (await res.text()).trim().split(/\r?\n/)
    expect(rows[0]).toBe('customer_id,price_id,current,candidate,difference,difference_percent,invoices')
    expect(rows.slice(1)).toEqual(
      expect.arrayContaining([`${subs.plain.customer_id},,80,120,40,50,2`, `${subs.plain.customer_id},${usageId},40,80,40,100,`, `${subs.plain.customer_id},${fixedId},40,40,0,0,`]),
    )
    expect(rows).toHaveLength(4)
  })

  it('refuses bad input with the field named, and keeps simulations to their tenant', async () => {
    const cases: [Record<string, unknown>, number, string][] = [
      [{ ...WINDOW, end_time: WINDOW.start_time, candidate: usageOnly({ amount: '1' }) }, 400, 'end_time'],
      [{ ...WINDOW, candidate: usageOnly({ billing_model: 'TIERED' }) }, 400, 'candidate.price_overrides[0].tier_mode'],
      [{ ...WINDOW, candidate: { price_overrides: [{ price_id: fixedId, allowance: 5 }] } }, 400, 'candidate.price_overrides[0].allowance'],
      [{ ...WINDOW, candidate: { price_overrides: [{ price_id: 'price_nope', amount: '1' }] } }, 404, 'candidate.price_overrides[0].price_id'],
      [{ ...WINDOW, candidate: { plan_id: 'plan_nope' } }, 404, 'candidate.plan_id'],
      [{ ...WINDOW, customer_ids: [subs.plain.customer_id, 'cus_nope'], candidate: usageOnly({ amount: '1' }) }, 404, 'customer_ids[1]'],
    ]
    for (const [body, status, field] of cases) {
      const res = await post('/v1/pricing/simulations', { name: 'bad', ...body })
      expect([res.status, res.body.code, field in (res.body.details ?? {})], JSON.stringify(res.body)).toEqual([status, status === 404 ? 'not_found' : 'validation_error', true])
    }
    const both = await post('/v1/pricing/simulations', { name: 'bad', ...WINDOW, candidate: { plan_id: P.id, ...usageOnly({ amount: '1' }) } })
    expect(both.status).toBe(400)
    const [, , sim] = await amounts(subs.plain.customer_id, usageOnly({ amount: '0.10' }))
    const other = (await h.newTenant()).apiKey
    expect((await h.http('GET', `/v1/pricing/simulations/${sim.id}`, { key: other })).status).toBe(404)
    expect((await h.http('GET', `/v1/pricing/simulations/${sim.id}/customers`, { key: other })).status).toBe(404)
    expect((await post('/v1/pricing/simulations', { name: 'x', ...WINDOW, candidate: usageOnly({ amount: '1' }) }, other)).status).toBe(404)
  })

  it('the pricing-simulations job runs again one left running by a stopped process, from the start', async () => {
    const [, , sim] = await amounts(subs.plain.customer_id, usageOnly({ amount: '0.20' }))
    const stale = new Date(clock.now().getTime() - 60 * 60_000)
    await h.running.deps.sql`UPDATE pricing_simulations SET sim_status = 'running', totals = NULL, heartbeat_at = ${stale} WHERE id = ${sim.id}`
    expect((await h.http('GET', `/v1/pricing/simulations/${sim.id}/customers`)).status).toBe(400)
    const run = await post('/v1/jobs/pricing-simulations/run')
    expect(run.body.summary.simulations, JSON.stringify(run.body)).toBe(1)
    const again = (await h.http('GET', `/v1/pricing/simulations/${sim.id}`)).body
    expect([again.status, again.totals.current, again.totals.candidate, again.totals.customers]).toEqual(['completed', '80', '120', 1])
    expect((await customersOf(sim.id)).items).toHaveLength(1)
  })

  it('a subscription whose prices the candidate does not change bills the same: 0 difference', async () => {
    const R = await plan(h, { prices: [fixedPrice('15.00', { display_name: 'Basic' })] })
    const c = await customer(h)
    expect((await post('/v1/subscriptions', { customer_id: c.id, plan_id: R.id, currency: 'USD', billing_period: 'MONTHLY', collection_method: 'send_invoice', start_date: '2024-01-01T00:00:00Z' })).status).toBe(201)
    expect((await post('/v1/jobs/billing-run/run')).body.summary.failed).toBe(0)
    // 15.00 on 1 February and on 1 March.
    const [current, candidate, sim] = await amounts(c.id, usageOnly({ amount: '0.20' }))
    expect([current, candidate, sim.totals.difference]).toEqual(['30', '30', '0'])
    expect(sim.distribution.find((b: any) => b.from_percent === 0 && b.to_percent === 0).customers).toBe(1)
  })
})
