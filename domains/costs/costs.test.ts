// Cost sheets and cost analytics over HTTP on embedded engines, every amount computed by hand. April 2024, GPT-4
// tokens metered by property filter (model gpt-4; gpt-3.5 events are counted by no meter here):
//   revenue (the plan, as invoiced): input 0.00005 a token, output 0.0001 a token;
//   cost (the active sheet): input 0.00003 a token until 20 April 12:00, then 0.00002 (a price starting then
//   supersedes the first); output 0.00006 a token throughout.
// Customer A (subscribed 1 April): input 10,000 (sdk, 5 April 10:00), 30,000 (web, 20 April 10:00), 20,000 (web, 20 April
//   14:00); output 4,000 (sdk, 5 April), 6,000 (web, 20 April 10:00); 5,000 gpt-3.5 input tokens (not counted).
//   Revenue: input 60,000 × 0.00005 = 3.00, output 10,000 × 0.0001 = 1.00 → 4.00.
//   Cost: input 10,000 × 0.00003 + 30,000 × 0.00003 + 20,000 × 0.00002 = 0.30 + 0.90 + 0.40 = 1.60; output 10,000 × 0.00006
//   = 0.60 → 2.20. Margin 1.80, 45 % of revenue; ROI 1.80 ÷ 2.20 = 0.8182 (81.82 %).
// Customer B (no subscription): output 1,000 (sdk, 10 April) → revenue 0, cost 0.06.
import { parse } from 'csv-parse/sync'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../core/clock.ts'
import { created, customer, plan, subscribed, usagePrice } from '../../test/catalog.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { readyMeter } from '../../test/usage-helpers.ts'

let h: Harness
const clock = fixedClock('2024-04-30T00:00:00Z')
const april = { start_time: '2024-04-01T00:00:00Z', end_time: '2024-05-01T00:00:00Z' }
const ids = {} as Record<'input' | 'output' | 'inputMeter' | 'outputMeter' | 'a' | 'b' | 'sheet' | 'sub', string>

async function send(customerId: string, kind: string, model: string, source: string, at: string, n: number) {
  const event = { event_id: `${customerId}-${kind}-${model}-${at}`, event_name: 'llm', external_customer_id: customerId, source, timestamp: at, properties: { kind, model, n } }
  const res = await h.http('POST', '/v1/events/bulk', { body: { events: [event] } })
  expect(res.status, JSON.stringify(res.body)).toBe(202)
}

const post = async (path: string, body: Record<string, unknown>, status = 200) => {
  const res = await h.http('POST', path, { body })
  expect(res.status, JSON.stringify(res.body)).toBe(status)
  return res.body
}
const costs = (body: Record<string, unknown>) => post('/v1/costs/analytics', { ...april, ...body })
const costPrice = (meterId: string, amount: string, extra: Record<string, unknown> = {}) =>
  created(h, '/v1/prices', { ...usagePrice(meterId, amount), entity_type: 'COSTSHEET', entity_id: ids.sheet, ...extra })

beforeAll(async () => {
  h = await startHarness({ clock, env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0', INVOICE_GRACE_PERIOD_MINUTES: '0' } })
  const gpt4 = (kind: string) => ({ name: `gpt-4 ${kind}`, event_name: 'llm', aggregation: { type: 'SUM', field: 'n' }, filters: [{ key: 'model', values: ['gpt-4'] }, { key: 'kind', values: [kind] }] })
  ids.inputMeter = await readyMeter(h, gpt4('input'))
  ids.outputMeter = await readyMeter(h, gpt4('output'))
  ids.input = (await created(h, '/v1/features', { name: 'GPT-4 input', type: 'metered', meter_id: ids.inputMeter })).id
  ids.output = (await created(h, '/v1/features', { name: 'GPT-4 output', type: 'metered', meter_id: ids.outputMeter })).id
  const p = await plan(h, { prices: [usagePrice(ids.inputMeter, '0.00005'), usagePrice(ids.outputMeter, '0.0001')] })
  const a = await customer(h, { name: 'Acme' })
  ids.a = a.external_id
  ids.b = (await customer(h)).external_id
  ids.sub = (await subscribed(h, { customer_id: a.id, plan_id: p.id, collection_method: 'send_invoice', start_date: '2024-04-01T00:00:00Z' })).id
  // An older sheet, superseded by the newer one: its price never counts while the newer is published.
  const old = (await post('/v1/costs', { name: 'Old sheet' }, 201)).costsheet
  await created(h, '/v1/prices', { ...usagePrice(ids.inputMeter, '1'), entity_type: 'COSTSHEET', entity_id: old.id })
  ids.sheet = (await post('/v1/costs', { name: 'GPT-4 at cost', lookup_key: 'gpt4-cost', metadata: { vendor: 'openai' } }, 201)).costsheet.id
  await costPrice(ids.inputMeter, '0.00003')
  await costPrice(ids.inputMeter, '0.00002', { start_date: '2024-04-20T12:00:00Z' })
  await costPrice(ids.outputMeter, '0.00006')
  await send(ids.a, 'input', 'gpt-4', 'sdk', '2024-04-05T10:00:00Z', 10_000)
  await send(ids.a, 'input', 'gpt-4', 'web', '2024-04-20T10:00:00Z', 30_000)
  await send(ids.a, 'input', 'gpt-4', 'web', '2024-04-20T14:00:00Z', 20_000)
  await send(ids.a, 'input', 'gpt-3.5', 'web', '2024-04-20T14:00:00Z', 5_000)
  await send(ids.a, 'output', 'gpt-4', 'sdk', '2024-04-05T10:00:00Z', 4_000)
  await send(ids.a, 'output', 'gpt-4', 'web', '2024-04-20T10:00:00Z', 6_000)
  await send(ids.b, 'output', 'gpt-4', 'sdk', '2024-04-10T10:00:00Z', 1_000)
}, 120_000)
afterAll(() => h?.stop())

const byFeature = (items: any[]) => Object.fromEntries(items.map((i) => [i.feature_id, [i.total_quantity, i.total_revenue, i.total_cost, i.margin, i.margin_percent]]))

// Under a loaded machine the first reads (cold engines) take seconds: a generous bound, not a wait.
describe('cost analytics', { timeout: 30_000 }, () => {
  it("prices one customer's usage with the sheet in force in each part of April", async () => {
    const r = await costs({ external_customer_id: ids.a })
    expect(r).toMatchObject({ costsheet_id: ids.sheet, currency: 'USD', total_revenue: '4', total_cost: '2.2', margin: '1.8', margin_percent: '45', roi: '0.8182', roi_percent: '81.82' })
    expect(byFeature(r.cost_analytics)).toEqual({ [ids.input]: ['60000', '3', '1.6', '1.4', '46.67'], [ids.output]: ['10000', '1', '0.6', '0.4', '40'] })
    expect(r.cost_analytics[0]).toMatchObject({ external_customer_id: ids.a, customer_id: expect.stringMatching(/^cus/) })
  })

  it('has revenue equal to what usage analytics reports as cost, item by item', async () => {
    const body = { external_customer_id: ids.a, group_by: ['source'] }
    const usage = await post('/v1/events/analytics', { ...april, ...body })
    const r = await costs(body)
    expect(r.total_revenue).toBe(usage.total_cost)
    const revenue = (items: any[], field: string) => Object.fromEntries(items.map((i) => [`${i.feature_id}|${i.source}`, i[field]]))
    expect(revenue(r.cost_analytics, 'total_revenue')).toEqual(revenue(usage.items, 'total_cost'))
    // Input by source: sdk 10,000 → revenue 0.50, cost 0.30; web 50,000 → revenue 2.50, cost 0.90 + 0.40 = 1.30.
    const rows = r.cost_analytics.map((i: any) => [i.feature_id === ids.input ? 'input' : 'output', i.source, i.total_quantity, i.total_revenue, i.total_cost])
    expect(rows).toEqual(
      expect.arrayContaining([
        ['input', 'sdk', '10000', '0.5', '0.3'],
        ['input', 'web', '50000', '2.5', '1.3'],
        ['output', 'sdk', '4000', '0.4', '0.24'],
        ['output', 'web', '6000', '0.6', '0.36'],
      ]),
    )
  })

  it('splits a window at the change of unit cost: 20 April costs 0.90 + 0.40 for input', async () => {
    const r = await costs({ external_customer_id: ids.a, feature_ids: [ids.input], window_size: 'DAY' })
    const points = r.cost_analytics[0].cost_by_period
    expect(points).toHaveLength(30)
    const day = (d: string) => points.find((p: any) => p.timestamp.startsWith(d))
    expect(day('2024-04-05')).toMatchObject({ quantity: '10000', event_count: 1, revenue: '0.5', cost: '0.3', margin: '0.2', margin_percent: '40' })
    expect(day('2024-04-20')).toMatchObject({ quantity: '50000', revenue: '2.5', cost: '1.3', margin: '1.2', margin_percent: '48' })
    expect(day('2024-04-21')).toMatchObject({ quantity: '0', cost: '0', margin_percent: null })
  })

  it('covers the whole environment: a customer without a subscription costs without earning', async () => {
    const r = await costs({})
    // 2.20 + B's 1,000 × 0.00006 = 0.06 → 2.26; margin 1.74, 43.5 %; ROI 1.74 ÷ 2.26 = 0.76991… → 0.7699.
    expect(r).toMatchObject({ total_revenue: '4', total_cost: '2.26', margin: '1.74', margin_percent: '43.5', roi: '0.7699', roi_percent: '76.99' })
    expect(r.cost_analytics.every((i: any) => i.customer_id === null)).toBe(true)
  })

  it('exports the margins as CSV, one row per customer, feature and window with usage', async () => {
    const res = await h.http('POST', '/v1/costs/analytics/export', { body: { ...april, window_size: 'DAY' } })
    expect(res.status, String(res.body)).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    const rows: Record<string, string>[] = parse(res.body as string, { columns: true })
    const view = rows.map((r) => [r.external_customer_id, r.feature_name, r.window_start.slice(0, 10), r.usage, r.revenue, r.cost, r.margin, r.margin_percent])
    expect(view).toEqual(
      expect.arrayContaining([
        [ids.a, 'GPT-4 input', '2024-04-20', '50000', '2.5', '1.3', '1.2', '48'],
        [ids.a, 'GPT-4 output', '2024-04-05', '4000', '0.4', '0.24', '0.16', '40'],
        [ids.b, 'GPT-4 output', '2024-04-10', '1000', '0', '0.06', '-0.06', ''],
      ]),
    )
    expect(rows).toHaveLength(5)
    // The rows add up to the JSON answer's totals.
    const sum = (field: string) => rows.reduce((s, r) => s + Math.round(Number(r[field]) * 100), 0) / 100
    expect([sum('revenue'), sum('cost')]).toEqual([4, 2.26])
  })

  it('refuses half a range, a group it cannot make, and cost prices in another currency than the revenue, naming the field', async () => {
    const half = await h.http('POST', '/v1/costs/analytics', { body: { start_time: april.start_time } })
    expect(half.status).toBe(400)
    expect(half.body).toMatchObject({ code: 'validation_error', details: { end_time: expect.any(String) } })
    const bad = await h.http('POST', '/v1/costs/analytics', { body: { ...april, group_by: ['customer'] } })
    expect(bad.body).toMatchObject({ code: 'validation_error', details: { group_by: expect.any(String) } })
    const euro = await created(h, '/v1/prices', { ...usagePrice(ids.outputMeter, '0.00005'), currency: 'EUR', entity_type: 'COSTSHEET', entity_id: ids.sheet })
    const mixed = await h.http('POST', '/v1/costs/analytics', { body: { ...april, external_customer_id: ids.a } })
    expect(mixed.body).toMatchObject({ code: 'validation_error', details: { currency: expect.any(String) } })
    await h.http('DELETE', `/v1/prices/${euro.id}`)
    expect((await costs({ external_customer_id: ids.a })).total_cost).toBe('2.2')
  })
})

describe('cost sheets', { timeout: 30_000 }, () => {
  it('keeps a price on a sheet that exists, of usage, and out of subscriptions', async () => {
    const missing = await h.http('POST', '/v1/prices', { body: { ...usagePrice(ids.inputMeter, '1'), entity_type: 'COSTSHEET', entity_id: 'costsheet_nope' } })
    expect(missing.status).toBe(404)
    expect(missing.body.details).toMatchObject({ entity_id: 'costsheet_nope' })
    const fixed = await h.http('POST', '/v1/prices', { body: { currency: 'USD', type: 'FIXED', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', amount: '5', entity_type: 'COSTSHEET', entity_id: ids.sheet } })
    expect(fixed.body).toMatchObject({ code: 'validation_error', details: { type: expect.any(String) } })
    const sheetPrice = (await h.http('GET', `/v1/costs/${ids.sheet}`)).body.costsheet.prices[0]
    // A cost is not a charge: a subscription cannot take the sheet's price as a line item.
    const line = await h.http('POST', `/v1/subscriptions/${ids.sub}/lineitems`, { body: { price_id: sheetPrice.id } })
    expect(line.status).toBe(404)
    expect(line.body.details).toMatchObject({ price_id: sheetPrice.id })
  })

  it('answers the active sheet (the newest published), and the one before once it is deleted', async () => {
    const active = await h.http('GET', '/v1/costs/active')
    expect(active.body).toMatchObject({ id: ids.sheet, name: 'GPT-4 at cost', lookup_key: 'gpt4-cost', metadata: { vendor: 'openai' } })
    expect(active.body.prices.map((p: any) => p.amount).sort()).toEqual(['0.00002', '0.00003', '0.00006'])
    const twice = await h.http('POST', '/v1/costs', { body: { name: 'GPT-4 at cost' } })
    expect(twice.status).toBe(409)
    const temp = (await post('/v1/costs', { name: 'Temporary' }, 201)).costsheet
    expect((await h.http('GET', '/v1/costs/active')).body.id).toBe(temp.id)
    // With the temporary sheet active, only its output price counts: 10,000 × 0.0001 = 1.00; input costs nothing.
    const tempPrice = await created(h, '/v1/prices', { ...usagePrice(ids.outputMeter, '0.0001'), entity_type: 'COSTSHEET', entity_id: temp.id })
    expect((await costs({ external_customer_id: ids.a })).total_cost).toBe('1')
    expect((await h.http('DELETE', `/v1/costs/${temp.id}`)).body).toEqual({ id: temp.id, message: 'Costsheet deleted successfully' })
    // Its prices went with it.
    expect((await h.http('GET', `/v1/prices/${tempPrice.id}`)).body.status).toBe('deleted')
    expect((await h.http('GET', '/v1/costs/active')).body.id).toBe(ids.sheet)
    expect((await costs({ external_customer_id: ids.a })).total_cost).toBe('2.2')
  })
})
