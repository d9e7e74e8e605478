// POST /v1/events/analytics over HTTP on embedded engines, every amount computed by hand. April 2024, monthly
// subscriptions from 1 April, billed on 2 May:
//   customer A — calls (COUNT) at 0.10 with 100 included (soft limit), tokens (SUM of n) graduated 1000 at 0.002 then
//     0.001, images (COUNT) in packages of 10 at 5.00 rounded up;
//   customer B — calls at 0.10 with a commitment of 50.00, overage ×2, true-up.
// A: 150 calls from sdk on 3 April, 100 from web on 12 April → 250 − 100 included = 150 × 0.10 = 15.00;
//    tokens 600 (sdk, 5 April) + 900 (web, 15 April) + 300 (sdk, 25 April) = 1800 → 1000 × 0.002 + 800 × 0.001 = 2.80;
//    23 images (sdk, 10 April) → 3 packages × 5.00 = 15.00.
// B: 700 calls from sdk on 8 April → 70.00: 50.00 within the commitment, 20.00 × 2 = 40.00 over it → 90.00.
// C: queries (COUNT) at 0.10 with 100 a day included (soft limit, DAILY reset): 150 on 3 April, 80 on 4 April, 130 on
//    5 April → (50 + 0 + 30) × 0.10 = 8.00 (one allowance for the month would bill 260 × 0.10 = 26.00).
import { parse } from 'csv-parse/sync'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../core/clock.ts'
import { created, customer, plan, subscribed, usagePrice } from '../../test/catalog.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { readyMeter } from '../../test/usage-helpers.ts'
import { leaveMidExport } from '../../test/exports.ts'

let h: Harness
const clock = fixedClock('2024-04-30T00:00:00Z')
const ids = {} as Record<'calls' | 'tokens' | 'images' | 'queries' | 'callsMeter' | 'tokensMeter' | 'imagesMeter' | 'queriesMeter' | 'a' | 'b' | 'c' | 'subA' | 'subB' | 'subC' | 'callsPlan', string>
const april = { start_time: '2024-04-01T00:00:00Z', end_time: '2024-05-01T00:00:00Z' }

async function sendEvents(customerId: string, name: string, source: string, at: string, count: number, props: Record<string, unknown> = {}) {
  const events = Array.from({ length: count }, (_, i) => ({
    event_id: `${customerId}-${name}-${source}-${at}-${i}`,
    event_name: name,
    external_customer_id: customerId,
    source,
    timestamp: new Date(Date.parse(at) + i * 1000).toISOString(),
    properties: props,
  }))
  const res = await h.http('POST', '/v1/events/bulk', { body: { events } })
  expect(res.status, JSON.stringify(res.body)).toBe(202)
}

const analytics = async (body: Record<string, unknown>, key?: string) => h.http('POST', '/v1/events/analytics', { body: { ...april, ...body }, key })
const ok = async (body: Record<string, unknown>) => {
  const res = await analytics(body)
  expect(res.status, JSON.stringify(res.body)).toBe(200)
  return res.body
}

beforeAll(async () => {
  h = await startHarness({ clock, env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0', INVOICE_GRACE_PERIOD_MINUTES: '0' } })
  ids.callsMeter = await readyMeter(h, { name: 'calls', event_name: 'api_call', aggregation: { type: 'COUNT' } })
  ids.tokensMeter = await readyMeter(h, { name: 'tokens', event_name: 'tokens', aggregation: { type: 'SUM', field: 'n' } })
  ids.imagesMeter = await readyMeter(h, { name: 'images', event_name: 'image', aggregation: { type: 'COUNT' } })
  ids.calls = (await created(h, '/v1/features', { name: 'API calls', type: 'metered', meter_id: ids.callsMeter, unit_singular: 'call', unit_plural: 'calls' })).id
  ids.tokens = (await created(h, '/v1/features', { name: 'Tokens', type: 'metered', meter_id: ids.tokensMeter, reporting_unit: { unit_singular: 'k token', unit_plural: 'k tokens', conversion_rate: 1000 } })).id
  ids.images = (await created(h, '/v1/features', { name: 'Images', type: 'metered', meter_id: ids.imagesMeter })).id
  ids.queriesMeter = await readyMeter(h, { name: 'queries', event_name: 'query', aggregation: { type: 'COUNT' } })
  ids.queries = (await created(h, '/v1/features', { name: 'Queries', type: 'metered', meter_id: ids.queriesMeter })).id
  const full = await plan(h, {
    prices: [
      usagePrice(ids.callsMeter, '0.10', { display_name: 'API calls' }),
      usagePrice(ids.tokensMeter, '0', { display_name: 'Tokens', billing_model: 'TIERED', tier_mode: 'SLAB', tiers: [{ up_to: 1000, unit_amount: '0.002' }, { up_to: null, unit_amount: '0.001' }] }),
      usagePrice(ids.imagesMeter, '5.00', { display_name: 'Images', billing_model: 'PACKAGE', transform_quantity: { divide_by: 10, round: 'up' } }),
    ],
  })
  await created(h, '/v1/entitlements', { plan_id: full.id, feature_id: ids.calls, feature_type: 'metered', usage_limit: 100, is_soft_limit: true, usage_reset_period: 'MONTHLY' })
  const callsOnly = await plan(h, { prices: [usagePrice(ids.callsMeter, '0.10', { display_name: 'API calls' })] })
  ids.callsPlan = callsOnly.id
  const daily = await plan(h, { prices: [usagePrice(ids.queriesMeter, '0.10', { display_name: 'Queries' })] })
  await created(h, '/v1/entitlements', { plan_id: daily.id, feature_id: ids.queries, feature_type: 'metered', usage_limit: 100, is_soft_limit: true, usage_reset_period: 'DAILY' })
  const a = await customer(h, { name: 'Acme, "the" company', metadata: { tier: '=gold', region: 'eu' } })
  const b = await customer(h)
  const c = await customer(h)
  ids.a = a.external_id
  ids.b = b.external_id
  ids.c = c.external_id
  const common = { collection_method: 'send_invoice', start_date: '2024-04-01T00:00:00Z' }
  ids.subA = (await subscribed(h, { customer_id: a.id, plan_id: full.id, ...common })).id
  ids.subB = (await subscribed(h, { customer_id: b.id, plan_id: callsOnly.id, commitment_amount: '50.00', overage_factor: '2', enable_true_up: true, ...common })).id
  ids.subC = (await subscribed(h, { customer_id: c.id, plan_id: daily.id, ...common })).id
  await sendEvents(ids.a, 'api_call', 'sdk', '2024-04-03T10:00:00Z', 150)
  await sendEvents(ids.a, 'api_call', 'web', '2024-04-12T10:00:00Z', 100)
  await sendEvents(ids.a, 'tokens', 'sdk', '2024-04-05T10:00:00Z', 1, { n: 600, model: 'small' })
  await sendEvents(ids.a, 'tokens', 'web', '2024-04-15T10:00:00Z', 1, { n: 900, model: 'large' })
  await sendEvents(ids.a, 'tokens', 'sdk', '2024-04-25T10:00:00Z', 1, { n: 300, model: 'small' })
  await sendEvents(ids.a, 'image', 'sdk', '2024-04-10T10:00:00Z', 23)
  await sendEvents(ids.b, 'api_call', 'sdk', '2024-04-08T10:00:00Z', 700)
  await sendEvents(ids.c, 'query', 'sdk', '2024-04-03T10:00:00Z', 150)
  await sendEvents(ids.c, 'query', 'sdk', '2024-04-04T10:00:00Z', 80)
  await sendEvents(ids.c, 'query', 'sdk', '2024-04-05T10:00:00Z', 130)
}, 120_000)
afterAll(() => h?.stop())

const byFeature = (items: any[]) => {
  const out: Record<string, string> = {}
  for (const i of items) out[i.feature_id] = (Number(out[i.feature_id] ?? 0) + Number(i.total_cost)).toFixed(2)
  return out
}

describe('one customer, April, by source', () => {
  it('answers the spec shape: usage, event counts and cost per feature and source', async () => {
    const r = await ok({ external_customer_id: ids.a, group_by: ['source'] })
    expect(r.currency).toBe('USD')
    expect(r.total_cost).toBe('32.8')
    // What a unit of each feature cost: calls 15.00 ÷ 250 = 0.06; tokens 2.80 ÷ 1.8 k tokens = 1.5555… → 1.5555555556
    // (10 places, half up); images 15.00 ÷ 23 = 0.65217391304… → 0.652173913.
    expect(r.custom_analytics).toHaveLength(3)
    expect(r.custom_analytics).toEqual(
      expect.arrayContaining([
        { id: 'cost-per-unit', name: 'Cost per call', feature_name: 'API calls', type: 'feature', value: '0.06' },
        { id: 'cost-per-unit', name: 'Cost per k token', feature_name: 'Tokens', type: 'feature', value: '1.5555555556' },
        { id: 'cost-per-unit', name: 'Cost per unit', feature_name: 'Images', type: 'feature', value: '0.652173913' },
      ]),
    )
    expect(r.pagination).toEqual({ total: 5, limit: 50, offset: 0 })
    const rows = r.items.map((i: any) => [i.name, i.source, i.event_count, i.total_usage, i.total_cost])
    // Calls split 15.00 by usage 150 : 100; tokens 2.80 by 900 : 900; images all sdk.
    expect(rows).toEqual(
      expect.arrayContaining([
        ['API calls', 'sdk', 150, '150', '9'],
        ['API calls', 'web', 100, '100', '6'],
        ['Tokens', 'sdk', 2, '900', '1.4'],
        ['Tokens', 'web', 1, '900', '1.4'],
        ['Images', 'sdk', 23, '23', '15'],
      ]),
    )
    const calls = r.items.find((i: any) => i.feature_id === ids.calls && i.source === 'sdk')
    expect(calls).toMatchObject({ meter_id: ids.callsMeter, subscription_id: ids.subA, event_name: 'api_call', aggregation_type: 'COUNT', sources: ['sdk'], total_usage_display: '150 calls', window_size: null })
    // Tokens have a reporting unit: 900 tokens at 1000 per k token show as 0.9 k tokens (the usage itself stays 900).
    const tokens = r.items.find((i: any) => i.feature_id === ids.tokens && i.source === 'sdk')
    expect(tokens).toMatchObject({ total_usage: '900', total_usage_display: '0.9 k tokens', reporting_unit: { unit_singular: 'k token', unit_plural: 'k tokens', conversion_rate: 1000 } })
    expect(calls.group).toEqual({ feature_id: ids.calls, source: 'sdk' })
    expect(calls.price_id).toMatch(/^price_/)
    expect(calls.sub_line_item_id).toBeTruthy()
  })

  it('points per DAY: each day costs what it added to the line (the 100 included calls are used first)', async () => {
    const r = await ok({ external_customer_id: ids.a, feature_ids: [ids.calls], window_size: 'DAY' })
    expect(r.items).toHaveLength(1)
    const item = r.items[0]
    expect(item.points).toHaveLength(30)
    const nonZero = item.points.filter((p: any) => p.usage !== '0').map((p: any) => [p.timestamp, p.usage, p.event_count, p.cost])
    // 3 April: 150 calls, 50 above the allowance = 5.00; 12 April: 100 more = 10.00.
    expect(nonZero).toEqual([
      ['2024-04-03T00:00:00.000Z', '150', 150, '5'],
      ['2024-04-12T00:00:00.000Z', '100', 100, '10'],
    ])
    expect(item.total_cost).toBe('15')
    expect(item.window_size).toBe('DAY')
  })

  it('a range inside the period is priced from the period start: 12 April alone costs 10.00', async () => {
    const r = await ok({ external_customer_id: ids.a, feature_ids: [ids.calls], start_time: '2024-04-12T00:00:00Z', end_time: '2024-04-13T00:00:00Z' })
    expect(r.items.map((i: any) => [i.total_usage, i.total_cost])).toEqual([['100', '10']])
  })

  it('groups by an event property and filters on one', async () => {
    const r = await ok({ external_customer_id: ids.a, feature_ids: [ids.tokens], group_by: ['properties.model'] })
    expect(r.items.map((i: any) => [i.properties, i.total_usage, i.total_cost])).toEqual([
      [{ model: 'large' }, '900', '1.4'],
      [{ model: 'small' }, '900', '1.4'],
    ])
    const small = await ok({ external_customer_id: ids.a, feature_ids: [ids.tokens], property_filters: { model: ['small'] } })
    // Filtered, the groups cost their share of the line: small's 900 of 1800 tokens, half of 2.80.
    expect(small.items.map((i: any) => [i.total_usage, i.total_cost])).toEqual([['900', '1.4']])
    expect(small.total_cost).toBe('1.4')
  })

  it('a source filter: the source costs its share of the line, not the line', async () => {
    const web = await ok({ external_customer_id: ids.a, feature_ids: [ids.calls], sources: ['web'] })
    // 100 of the 250 calls: 15.00 × 100 / 250.
    expect(web.items.map((i: any) => [i.total_usage, i.total_cost])).toEqual([['100', '6']])
    expect(web.total_cost).toBe('6')
  })

  it('expands the feature, meter, price, plan and line item', async () => {
    const r = await ok({ external_customer_id: ids.a, feature_ids: [ids.images], expand: ['feature', 'meter', 'price', 'plan', 'subscription_line_item'] })
    const item = r.items[0]
    expect(item.feature.id).toBe(ids.images)
    expect(item.meter.id).toBe(ids.imagesMeter)
    expect(item.price).toMatchObject({ id: item.price_id, billing_model: 'PACKAGE' })
    expect(item.plan.id).toBe(item.plan_id)
    expect(item.subscription_line_item.id).toBe(item.sub_line_item_id)
  })
})

describe('an allowance that resets each day', () => {
  it('gives each day its own 100 included queries, as the invoice does: 5.00, 0, 3.00', async () => {
    const r = await ok({ external_customer_id: ids.c, feature_ids: [ids.queries], window_size: 'DAY' })
    const busy = r.items[0].points.filter((p: any) => p.usage !== '0').map((p: any) => [p.timestamp.slice(0, 10), p.usage, p.cost])
    expect(busy).toEqual([
      ['2024-04-03', '150', '5'],
      ['2024-04-04', '80', '0'],
      ['2024-04-05', '130', '3'],
    ])
    expect(r.total_cost).toBe('8')
    // From inside the period: 5 April alone costs its own 30 queries over the day's 100.
    const fifth = await ok({ external_customer_id: ids.c, feature_ids: [ids.queries], start_time: '2024-04-05T00:00:00Z', end_time: '2024-04-06T00:00:00Z' })
    expect(fifth.total_cost).toBe('3')
  })
})

describe('a commitment, the whole environment and pages', () => {
  it('prices the commitment as the invoice does: 50.00 within, 20.00 × 2 over it', async () => {
    const r = await ok({ external_customer_id: ids.b })
    expect(r.items.map((i: any) => [i.feature_id, i.total_usage, i.total_cost])).toEqual([[ids.calls, '700', '90']])
    expect(r.items[0].commitment_info).toMatchObject({ amount: '50', overage_factor: '2', true_up_enabled: true, computed_commitment_utilized_amount: '50', computed_overage_amount: '40' })
    // Per day: 8 April holds all of it; the true-up is a line of its own, never a point's.
    const daily = await ok({ external_customer_id: ids.b, window_size: 'DAY' })
    const busy = daily.items[0].points.filter((p: any) => p.cost !== '0')
    expect(busy).toEqual([
      { timestamp: '2024-04-08T00:00:00.000Z', usage: '700', cost: '90', event_count: 700, computed_commitment_utilized_amount: '50', computed_overage_amount: '40', computed_true_up_amount: '0' },
    ])
  })

  it('the whole environment: both customers’ lines, split by source by largest remainder', async () => {
    const r = await ok({ feature_ids: [ids.calls], group_by: ['source'] })
    // 105.00 over sdk 850 and web 100: 9394.7 and 1105.3 cents → floors 9394 + 1105, the cent left to the larger remainder.
    expect(r.total_cost).toBe('105')
    expect(r.items.map((i: any) => [i.source, i.total_usage, i.total_cost])).toEqual([
      ['sdk', '850', '93.95'],
      ['web', '100', '11.05'],
    ])
    expect(r.items[0].subscription_id).toBeNull()
  })

  it('pages of groups: every group on some page, costs adding up to the total', async () => {
    const first = await ok({ feature_ids: [ids.calls], group_by: ['source'], limit: 1 })
    const second = await ok({ feature_ids: [ids.calls], group_by: ['source'], limit: 1, offset: 1 })
    expect(first.pagination).toEqual({ total: 2, limit: 1, offset: 0 })
    expect([...first.items, ...second.items].map((i: any) => [i.source, i.total_cost])).toEqual([
      ['sdk', '93.95'],
      ['web', '11.05'],
    ])
  })
})

describe('the CSV export', () => {
  const exported = async (body: Record<string, unknown>) => {
    const res = await h.http('POST', '/v1/events/analytics/export', { body: { ...april, format: 'csv', ...body } })
    expect(res.status, String(res.body)).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    return parse(res.body as string) as string[][]
  }

  it('one row per customer, feature, source and day with events; costs add up to the lines; metadata columns', async () => {
    const rows = await exported({ feature_ids: [ids.calls], group_by: ['source'], window_size: 'DAY', metadata_columns: ['tier', 'region'] })
    expect(rows[0]).toEqual(['window_start', 'customer_id', 'external_customer_id', 'customer_name', 'meter_id', 'meter_name', 'feature_id', 'feature_name', 'source', 'event_count', 'usage', 'cost', 'currency', 'metadata.tier', 'metadata.region'])
    const body = rows.slice(1).map((r) => [r[0], r[2], r[3], r[8], r[9], r[10], r[11], r[12], r[13], r[14]])
    // A: 150 sdk calls on 3 April (50 above the 100 included: 5.00), 100 web on 12 April (10.00); B: 700 on 8 April (90.00).
    // The name keeps its comma and quotes (RFC 4180); the metadata value `=gold` is neutralized against formulas.
    expect(body).toEqual(
      expect.arrayContaining([
        ['2024-04-03T00:00:00.000Z', ids.a, 'Acme, "the" company', 'sdk', '150', '150', '5', 'USD', "'=gold", 'eu'],
        ['2024-04-12T00:00:00.000Z', ids.a, 'Acme, "the" company', 'web', '100', '100', '10', 'USD', "'=gold", 'eu'],
        ['2024-04-08T00:00:00.000Z', ids.b, expect.any(String), 'sdk', '700', '700', '90', 'USD', '', ''],
      ]),
    )
    expect(body).toHaveLength(3)
  })

  it('a source filter: each row costs its share of its customer’s window', async () => {
    const rows = await exported({ feature_ids: [ids.calls], sources: ['web'], window_size: 'DAY' })
    // Only A's web calls of 12 April remain; that day's 10.00 was all theirs.
    expect(rows.slice(1).map((r) => [r[0], r[2], r[9], r[11]])).toEqual([['2024-04-12T00:00:00.000Z', ids.a, '100', '10']])
  })

  it('property columns, and one customer only', async () => {
    const rows = await exported({ external_customer_id: ids.a, feature_ids: [ids.tokens], group_by: ['properties.model'] })
    expect(rows[0]).toContain('properties.model')
    const at = rows[0].indexOf('properties.model')
    // 2.80 over large 900 and small 900.
    expect(rows.slice(1).map((r) => [r[at], r[at + 2], r[at + 3]]).sort()).toEqual([
      ['large', '900', '1.4'],
      ['small', '900', '1.4'],
    ])
  })

  it('refuses bad input with the error body before any CSV', async () => {
    const bad = await h.http('POST', '/v1/events/analytics/export', { body: { ...april, group_by: ['colour'] } })
    expect(bad.status).toBe(400)
    expect(bad.body.details).toHaveProperty('group_by')
    const unknown = await h.http('POST', '/v1/events/analytics/export', { body: { ...april, feature_ids: ['feat_nope'] } })
    expect(unknown.status).toBe(404)
    expect(unknown.body.details).toEqual({ feature_ids: ['feat_nope'] })
    expect((await h.http('POST', '/v1/events/analytics/export', { body: { ...april, format: 'xlsx' } })).status).toBe(400)
  })

  it('a client that leaves mid-export stops the query', async () => {
    // 300,000 usage rows of 30,000 customers over ten minutes, written straight into meter_usage (its rollups follow).
    const meterId = await readyMeter(h, { name: 'bulk', event_name: 'bulk', aggregation: { type: 'COUNT' } })
    const feature = (await created(h, '/v1/features', { name: 'Bulk', type: 'metered', meter_id: meterId })).id
    const revision = (await h.http('GET', `/v1/meters/${meterId}`)).body.ready_revision
    const { tenantId, environments } = h.tenant
    await h.running.deps.ch.client.command({
      query: `INSERT INTO meter_usage (tenant_id, environment_id, meter_id, revision, external_customer_id, timestamp, event_id, value, group_value, unique_value)
              SELECT '${tenantId}', '${environments.production}', '${meterId}', ${revision}, concat('bulk-', toString(number % 30000)),
                     toDateTime64('2024-04-02 00:00:00', 3, 'UTC') + toIntervalMinute(intDiv(number, 30000)), concat('bulk-', toString(number)), 1, '', ''
              FROM numbers(300000)`,
    })
    const body = { start_time: '2024-04-02T00:00:00Z', end_time: '2024-04-03T00:00:00Z', feature_ids: [feature], window_size: 'MINUTE' }
    expect(await leaveMidExport(h, '/v1/events/analytics/export', body)).toBeLessThan(150_000)
    expect((await h.http('GET', '/v1/health')).status).toBe(200)
  }, 120_000)
})

describe('the invariant: a closed period costs what its finalized invoice bills', () => {
  it('per line, to the cent, for flat, tiered, package, allowance, daily allowance and commitment prices', async () => {
    clock.set('2024-05-02T00:00:00Z')
    const run = await h.http('POST', '/v1/jobs/billing-run/run')
    expect(run.body.summary.failed, JSON.stringify(run.body.summary.errors)).toBe(0)
    for (const [customerId, sub] of [[ids.a, ids.subA], [ids.b, ids.subB], [ids.c, ids.subC]]) {
      const invoice = (await h.http('GET', `/v1/invoices?subscription_id=${sub}&billing_reason=SUBSCRIPTION_CYCLE`)).body.items[0]
      expect(invoice.invoice_status).toBe('FINALIZED')
      const lines: Record<string, string> = {}
      for (const l of invoice.line_items.filter((x: any) => x.meter_id)) lines[l.meter_id] = Number(l.amount).toFixed(2)
      const r = await ok({ external_customer_id: customerId, group_by: ['source'], window_size: 'WEEK' })
      const features = byFeature(r.items)
      const meterOf: Record<string, string> = { [ids.calls]: ids.callsMeter, [ids.tokens]: ids.tokensMeter, [ids.images]: ids.imagesMeter, [ids.queries]: ids.queriesMeter }
      const analytic: Record<string, string> = {}
      for (const [f, cost] of Object.entries(features)) analytic[meterOf[f]] = cost
      expect(analytic).toEqual(lines)
      for (const item of r.items) expect(item.points.reduce((s: number, p: any) => s + Number(p.cost) * 100, 0)).toBeCloseTo(Number(item.total_cost) * 100, 6)
    }
    expect(Object.values(byFeature((await ok({ external_customer_id: ids.a })).items))).toEqual(expect.arrayContaining(['15.00', '2.80', '15.00']))
    expect(byFeature((await ok({ external_customer_id: ids.c })).items)).toEqual({ [ids.queries]: '8.00' })
  })
})

describe('bad input and scoping', () => {
  it('an unknown feature is 404 naming feature_ids', async () => {
    const r = await analytics({ feature_ids: [ids.calls, 'feat_nope'] })
    expect(r.status).toBe(404)
    expect(r.body).toMatchObject({ code: 'not_found', http_status_code: 404, details: { feature_ids: ['feat_nope'] } })
  })

  it.each([
    ['end_time', { start_time: '2024-05-01T00:00:00Z', end_time: '2024-04-01T00:00:00Z' }],
    ['limit', { limit: 1001 }],
    ['group_by', { group_by: ['colour'] }],
    ['expand', { expand: ['everything'] }],
    ['window_size', { window_size: 'MINUTE' }],
  ])('%s: 400 naming the field', async (field, body) => {
    const r = await analytics(body)
    expect(r.status, JSON.stringify(r.body)).toBe(400)
    expect(r.body.code).toBe('validation_error')
    expect(JSON.stringify(r.body.details)).toContain(field)
  })

  it('another tenant sees neither the customer nor the usage', async () => {
    const other = (await h.newTenant()).apiKey
    expect((await analytics({ external_customer_id: ids.a }, other)).status).toBe(404)
    const env = await analytics({}, other)
    expect(env.status).toBe(200)
    expect(env.body.items).toEqual([])
    expect(env.body.total_cost).toBe('0')
  })

  it('the sandbox of the same tenant sees neither', async () => {
    const sandbox = await h.http('POST', '/v1/secrets/api/keys', { body: { name: 'sandbox reader', roles: ['read'], environment_id: h.tenant.environments.sandbox } })
    expect(sandbox.status).toBe(201)
    expect((await analytics({ external_customer_id: ids.a }, sandbox.body.api_key)).status).toBe(404)
    const env = await analytics({ feature_ids: [ids.calls] }, sandbox.body.api_key)
    expect(env.status).toBe(404)
    expect(env.body.details).toEqual({ feature_ids: [ids.calls] })
    expect((await analytics({}, sandbox.body.api_key)).body.items).toEqual([])
  })

  it('lines in two currencies are a validation_error naming external_customer_id', async () => {
    const eur = await plan(h, { prices: [usagePrice(ids.callsMeter, '0.10', { currency: 'EUR' })] })
    const c = await customer(h)
    await subscribed(h, { customer_id: c.id, plan_id: eur.id, currency: 'EUR', collection_method: 'send_invoice', start_date: '2024-04-01T00:00:00Z' })
    const r = await analytics({ feature_ids: [ids.calls] })
    expect(r.status, JSON.stringify(r.body)).toBe(400)
    expect(r.body.details).toHaveProperty('external_customer_id')
    expect(r.body.message).toMatch(/EUR, USD/)
    // One customer's answer stays in its currency.
    expect((await ok({ external_customer_id: c.external_id, feature_ids: [ids.calls] })).currency).toBe('EUR')
  })
})

describe('include_children', () => {
  it("rolls in the usage and lines of the customer's child subscriptions", async () => {
    const common = { plan_id: ids.callsPlan, collection_method: 'send_invoice', start_date: '2024-04-01T00:00:00Z' }
    const parent = await customer(h)
    const child = await customer(h)
    const parentSub = await subscribed(h, { customer_id: parent.id, ...common })
    await subscribed(h, { customer_id: child.id, parent_subscription_id: parentSub.id, ...common })
    await sendEvents(parent.external_id, 'api_call', 'sdk', '2024-04-20T10:00:00Z', 10)
    await sendEvents(child.external_id, 'api_call', 'sdk', '2024-04-21T10:00:00Z', 40)
    // The parent alone: 10 calls, 1.00; with its child's 40 calls on the child's own line at 0.10: 5.00.
    const alone = await ok({ external_customer_id: parent.external_id, feature_ids: [ids.calls] })
    expect(alone.items.map((i: any) => [i.total_usage, i.total_cost])).toEqual([['10', '1']])
    const family = await ok({ external_customer_id: parent.external_id, feature_ids: [ids.calls], include_children: true })
    expect(family.items.map((i: any) => [i.total_usage, i.event_count, i.total_cost])).toEqual([['50', 50, '5']])
    expect(family.items[0].subscription_id).toBeNull()
  })
})

describe('MAX and LATEST meters', () => {
  it("price the running value: a window costs what the period's maximum or latest value added (or took back)", async () => {
    const seatsMeter = await readyMeter(h, { name: 'seats', event_name: 'seats', aggregation: { type: 'MAX', field: 'n' } })
    const storageMeter = await readyMeter(h, { name: 'storage', event_name: 'storage', aggregation: { type: 'LATEST', field: 'gb' } })
    const seats = (await created(h, '/v1/features', { name: 'Seats', type: 'metered', meter_id: seatsMeter })).id
    const storage = (await created(h, '/v1/features', { name: 'Storage', type: 'metered', meter_id: storageMeter })).id
    const p = await plan(h, { prices: [usagePrice(seatsMeter, '2.00'), usagePrice(storageMeter, '1.00')] })
    const c = await customer(h)
    await subscribed(h, { customer_id: c.id, plan_id: p.id, collection_method: 'send_invoice', start_date: '2024-04-01T00:00:00Z' })
    await sendEvents(c.external_id, 'seats', 'app', '2024-04-02T10:00:00Z', 1, { n: 3 })
    await sendEvents(c.external_id, 'seats', 'app', '2024-04-10T10:00:00Z', 1, { n: 5 })
    await sendEvents(c.external_id, 'seats', 'app', '2024-04-20T10:00:00Z', 1, { n: 4 })
    await sendEvents(c.external_id, 'storage', 'app', '2024-04-05T10:00:00Z', 1, { gb: 10 })
    await sendEvents(c.external_id, 'storage', 'app', '2024-04-25T10:00:00Z', 1, { gb: 7 })
    const r = await ok({ external_customer_id: c.external_id, feature_ids: [seats, storage], window_size: 'DAY' })
    const costs = (feature: string) => r.items.find((i: any) => i.feature_id === feature).points.filter((x: any) => x.cost !== '0').map((x: any) => [x.timestamp.slice(0, 10), x.cost])
    // Seats: the maximum of April is 5 × 2.00 = 10.00: 3 seats on 2 April (6.00), 5 on 10 April (+4.00), 4 on 20 April (+0).
    expect(costs(seats)).toEqual([['2024-04-02', '6'], ['2024-04-10', '4']])
    // Storage: the latest value is billed: 10 GB on 5 April (10.00), then 7 GB on 25 April (−3.00): 7.00.
    expect(costs(storage)).toEqual([['2024-04-05', '10'], ['2024-04-25', '-3']])
    expect(r.total_cost).toBe('17')
  })
})

describe('billing records read again after a write', () => {
  it('a subscription created after a request is priced by the next one (records are cached only until a write of the process)', async () => {
    const c = await customer(h)
    await sendEvents(c.external_id, 'api_call', 'sdk', '2024-04-22T10:00:00Z', 30)
    const before = await ok({ external_customer_id: c.external_id, feature_ids: [ids.calls] })
    expect(before.items.map((i: any) => [i.total_usage, i.total_cost])).toEqual([['30', '0']])
    await subscribed(h, { customer_id: c.id, plan_id: ids.callsPlan, collection_method: 'send_invoice', start_date: '2024-04-01T00:00:00Z' })
    // 30 calls × 0.10 = 3.00.
    const after = await ok({ external_customer_id: c.external_id, feature_ids: [ids.calls] })
    expect(after.items.map((i: any) => [i.total_usage, i.total_cost])).toEqual([['30', '3']])
    expect(after.total_cost).toBe('3')
  })
})

describe('an environment export in batches of customers', () => {
  it('120 customers at 5,000 minute windows (three statements of 50 customers): every customer once, whole, in order', async () => {
    const meter = await readyMeter(h, { name: 'pings', event_name: 'ping', aggregation: { type: 'COUNT' } })
    const feature = (await created(h, '/v1/features', { name: 'Pings', type: 'metered', meter_id: meter })).id
    const start = Date.parse('2024-04-20T00:00:00Z')
    // 120 customers (three statements' worth), customer k sending k % 3 + 1 events in minute k and one in minute 4,000.
    const events = Array.from({ length: 120 }, (_, k) => [
      ...Array.from({ length: (k % 3) + 1 }, (_, i) => ({ at: start + k * 60_000 + i * 1000, n: i })),
      { at: start + 4000 * 60_000, n: 9 },
    ].map(({ at, n }) => ({ event_id: `ping-${k}-${n}`, event_name: 'ping', external_customer_id: `pinger-${String(k).padStart(3, '0')}`, timestamp: new Date(at).toISOString(), properties: {} }))).flat()
    expect((await h.http('POST', '/v1/events/bulk', { body: { events } })).status).toBe(202)
    const res = await h.http('POST', '/v1/events/analytics/export', {
      body: { start_time: new Date(start).toISOString(), end_time: new Date(start + 5000 * 60_000).toISOString(), feature_ids: [feature], window_size: 'MINUTE', format: 'csv' },
    })
    expect(res.status, String(res.body)).toBe(200)
    const rows = (parse(res.body as string) as string[][]).slice(1)
    expect(rows).toHaveLength(240)
    const customers = rows.map((r) => r[2])
    // Each customer's two rows together, the customers in order across the statements.
    expect([...new Set(customers)]).toEqual(Array.from({ length: 120 }, (_, k) => `pinger-${String(k).padStart(3, '0')}`))
    expect(customers.every((c, i) => i % 2 === 1 || customers[i + 1] === c)).toBe(true)
    expect(rows.filter((r) => r[2] === 'pinger-005').map((r) => [r[0], r[9]])).toEqual([
      [new Date(start + 5 * 60_000).toISOString(), '3'],
      [new Date(start + 4000 * 60_000).toISOString(), '1'],
    ])
    expect(rows.reduce((n, r) => n + Number(r[9]), 0)).toBe(120 + 40 * (1 + 2 + 3))
  })
})
