// Meter usage queries over HTTP with hand-computed expectations: every aggregation, filters, group_by,
// bucket_size, and the same numbers from the per-minute views and from a raw recount.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { readyMeter, send, usage } from '../../../test/usage-helpers.ts'
import { meterUsage, meterUsageByCustomer } from './service.ts'

let h: Harness
const meters: Record<string, string> = {}

// Day one (2024-03-01, UTC) and one event the next day. e6 has no tokens: value meters skip it.
const EVENTS = [
  { id: 'e1', at: '2024-03-01T00:10:00.000Z', props: { tokens: 10, user: 'a', model: 'gpt', region: 'eu' } },
  { id: 'e2', at: '2024-03-01T00:20:30.500Z', props: { tokens: '2.5', user: 'b', model: 'claude', region: 'us' } },
  { id: 'e7', at: '2024-03-01T00:40:00.000Z', props: { tokens: 4, user: 'b', model: 'gpt', region: 'eu' } },
  { id: 'e3', at: '2024-03-01T01:05:00.000Z', props: { tokens: 7, user: 'a', model: 'gpt', region: 'eu' } },
  { id: 'e4', at: '2024-03-01T01:59:59.999Z', props: { tokens: 1, user: 'c', model: 'gpt', region: 'us' } },
  { id: 'e6', at: '2024-03-01T03:00:00.000Z', props: { user: 'd' } },
  { id: 'e5', at: '2024-03-02T12:00:00.000Z', props: { tokens: 100, user: 'a', model: 'gpt', region: 'eu' } },
]
const RANGE = { start_time: '2024-03-01T00:00:00Z', end_time: '2024-03-03T00:00:00Z', external_customer_id: 'acme' }

beforeAll(async () => {
  h = await startHarness({ env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0' } })
  // Half the meters exist before the events (live resolution), half after (backfill).
  const define = async (key: string, aggregation: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
    meters[key] = await readyMeter(h, { name: key, event_name: 'llm', aggregation, ...extra })
  }
  await define('count', { type: 'COUNT' })
  await define('sum', { type: 'SUM', field: 'tokens' })
  await define('avg', { type: 'AVG', field: 'tokens' })
  await define('min', { type: 'MIN', field: 'tokens' })
  await send(h, EVENTS, { customer: 'acme', name: 'llm' })
  await send(h, [{ id: 'other-customer', at: '2024-03-01T00:10:00Z', props: { tokens: 1000 } }], { customer: 'zeta', name: 'llm' })
  await send(h, [{ id: 'other-name', at: '2024-03-01T00:10:00Z', props: { tokens: 1000 } }], { customer: 'acme', name: 'llm.v2' })
  await define('max', { type: 'MAX', field: 'tokens' })
  await define('unique', { type: 'COUNT_UNIQUE', field: 'user' })
  await define('latest', { type: 'LATEST', field: 'tokens' })
  await define('multiplied', { type: 'SUM_WITH_MULTIPLIER', field: 'tokens', multiplier: '0.5' })
  await define('weighted', { type: 'WEIGHTED_SUM', field: 'tokens' })
  await define('gpt', { type: 'COUNT' }, { filters: [{ key: 'model', values: ['gpt'] }] })
  await define('hourlyMax', { type: 'MAX', field: 'tokens', bucket_size: 'HOUR' })
  await define('hourlyMaxByRegion', { type: 'MAX', field: 'tokens', bucket_size: 'HOUR', group_by: 'region' })
  await define('sumByRegion', { type: 'SUM', field: 'tokens', group_by: 'region' })
})
afterAll(() => h?.stop())

describe('aggregations over the whole range', () => {
  it.each([
    ['count', 'COUNT', '7'],
    ['sum', 'SUM', '124.5'],
    ['avg', 'AVG', '20.75'], // 124.5 / 6 events with tokens
    ['min', 'MIN', '1'],
    ['max', 'MAX', '100'],
    ['unique', 'COUNT_UNIQUE', '4'], // a, b, c, d
    ['latest', 'LATEST', '100'],
    ['multiplied', 'SUM_WITH_MULTIPLIER', '62.25'],
    ['gpt', 'COUNT', '5'], // e1 e7 e3 e4 e5
    ['hourlyMax', 'MAX', '117'], // 00h 10 + 01h 7 + (3/2 12h) 100
    ['hourlyMaxByRegion', 'MAX', '120.5'], // 00h eu 10 + us 2.5, 01h eu 7 + us 1, 12h eu 100
  ])('%s (%s) = %s', async (key, type, value) => {
    const r = await usage(h, { meter_id: meters[key], ...RANGE })
    expect(r).toMatchObject({ event_name: 'llm', type, value })
  })

  it('WEIGHTED_SUM weighs each value by the part of the window left after it', async () => {
    // [00:00, 01:00): (10×3000000 + 2.5×2369500 + 4×1200000) / 3600000 = 11.3121527777…
    const r = await usage(h, { meter_id: meters.weighted, ...RANGE, end_time: '2024-03-01T01:00:00Z' })
    expect(r.value).toBe('11.312152777778')
  })

  it('group_by reports each group and sums them', async () => {
    const r = await usage(h, { meter_id: meters.sumByRegion, ...RANGE, window_size: 'DAY' })
    expect(r.value).toBe('124.5')
    expect(r.results.map((w) => [w.value, w.groups])).toEqual([
      ['24.5', { eu: '21', us: '3.5' }],
      ['100', { eu: '100' }],
    ])
  })
})

describe('windows', () => {
  it('DAY windows report each day, zero days included, half-open', async () => {
    const r = await usage(h, { meter_id: meters.sum, ...RANGE, start_time: '2024-02-29T00:00:00Z', window_size: 'DAY' })
    expect(r.results).toEqual([
      { window_size: '2024-02-29T00:00:00.000Z', start: '2024-02-29T00:00:00.000Z', end: '2024-03-01T00:00:00.000Z', value: '0' },
      { window_size: '2024-03-01T00:00:00.000Z', start: '2024-03-01T00:00:00.000Z', end: '2024-03-02T00:00:00.000Z', value: '24.5' },
      { window_size: '2024-03-02T00:00:00.000Z', start: '2024-03-02T00:00:00.000Z', end: '2024-03-03T00:00:00.000Z', value: '100' },
    ])
  })

  it('non-additive totals are computed over the whole range, not summed from windows', async () => {
    const max = await usage(h, { meter_id: meters.max, ...RANGE, window_size: 'HOUR' })
    expect(max.value).toBe('100')
    expect(max.results).toHaveLength(48)
    expect(max.results.filter((w) => w.value !== '0').map((w) => [w.window_size.slice(11, 13), w.value])).toEqual([
      ['00', '10'],
      ['01', '7'],
      ['12', '100'],
    ])
    const unique = await usage(h, { meter_id: meters.unique, ...RANGE, window_size: 'DAY' })
    expect([unique.value, unique.results.map((w) => w.value)]).toEqual(['4', ['4', '1']])
    const avg = await usage(h, { meter_id: meters.avg, ...RANGE, window_size: 'DAY' })
    expect([avg.value, avg.results.map((w) => w.value)]).toEqual(['20.75', ['4.9', '100']])
  })

  it('cuts inside a minute exactly: start and end with seconds and milliseconds', async () => {
    const at = (start: string, end: string) => usage(h, { meter_id: meters.count, external_customer_id: 'acme', start_time: start, end_time: end })
    expect((await at('2024-03-01T00:20:30.500Z', '2024-03-01T01:05:00.000Z')).value).toBe('2') // e2 e7; e3 at the end is out
    expect((await at('2024-03-01T00:20:30.501Z', '2024-03-01T01:05:00.001Z')).value).toBe('2') // e7 e3
    expect((await at('2024-03-01T01:59:59.999Z', '2024-03-01T02:00:00.000Z')).value).toBe('1') // e4 alone
  })
})

describe('query options', () => {
  it('filters by property at query time', async () => {
    const r = await usage(h, { meter_id: meters.sum, ...RANGE, filters: { model: ['claude'] } })
    expect(r.value).toBe('2.5')
    const n = await usage(h, { meter_id: meters.count, ...RANGE, filters: { region: ['eu'], model: ['gpt'] } })
    expect(n.value).toBe('4')
  })

  it('without a customer counts every customer of the environment', async () => {
    const { external_customer_id: _c, ...all } = RANGE
    expect((await usage(h, { meter_id: meters.count, ...all })).value).toBe('8')
  })

  it('gives the same numbers from the per-minute view and from a raw recount', async () => {
    const scope = { tenantId: h.tenant.tenantId, environmentId: h.tenant.environments.production }
    // Hourly rollup only; minutes of cut hours; and minutes cut by a start with seconds (raw rows).
    const shapes = [
      { start: '2024-03-01T00:00:00Z', windowSize: 'HOUR' as const },
      { start: '2024-03-01T00:00:00Z', windowSize: '15MIN' as const },
      { start: '2024-03-01T00:20:30.250Z', windowSize: 'DAY' as const },
    ]
    for (const key of Object.keys(meters)) {
      for (const shape of shapes) {
        const q = { meterId: meters[key], externalCustomerId: 'acme', start: new Date(shape.start), end: new Date('2024-03-03T00:00:00Z'), windowSize: shape.windowSize }
        const [views, raw] = await Promise.all([meterUsage(h.running.deps, scope, q), meterUsage(h.running.deps, scope, { ...q, source: 'raw' })])
        expect(views.results.map((w) => w.value.toFixed()), `${key} ${shape.windowSize}`).toEqual(raw.results.map((w) => w.value.toFixed()))
        expect(views.value.toFixed(), key).toBe(raw.value.toFixed())
      }
    }
  })

  it('reads many customers at once, each exactly as alone', async () => {
    const scope = { tenantId: h.tenant.tenantId, environmentId: h.tenant.environments.production }
    const range = { start: new Date('2024-03-01T00:00:00Z'), end: new Date('2024-03-03T00:00:00Z'), windowSize: 'DAY' as const }
    for (const key of ['sum', 'max', 'unique', 'hourlyMaxByRegion']) {
      const many = await meterUsageByCustomer(h.running.deps, scope, { meterId: meters[key], ...range, externalCustomerIds: ['acme', 'zeta', 'nobody'] })
      for (const customer of ['acme', 'zeta', 'nobody']) {
        const alone = await meterUsage(h.running.deps, scope, { meterId: meters[key], ...range, externalCustomerId: customer })
        expect(many.get(customer)!.results.map((w) => w.value.toFixed()), `${key} ${customer}`).toEqual(alone.results.map((w) => w.value.toFixed()))
        expect(many.get(customer)!.value.toFixed()).toBe(alone.value.toFixed())
      }
    }
    const sums = await meterUsageByCustomer(h.running.deps, scope, { meterId: meters.sum, ...range, externalCustomerIds: ['acme', 'zeta', 'nobody'] })
    expect([...sums].map(([c, r]) => [c, r.value.toFixed()])).toEqual([['acme', '124.5'], ['zeta', '1000'], ['nobody', '0']])
  })

  it('answers 400 naming the field for a bad range, window or time zone, and 404 for an unknown meter', async () => {
    const bad = async (body: Record<string, unknown>, field: string) => {
      const res = await h.http('POST', '/v1/events/usage/meter', { body: { meter_id: meters.count, ...RANGE, ...body } })
      expect(res.status).toBe(400)
      expect(Object.keys(res.body.details)).toEqual([field])
    }
    await bad({ end_time: RANGE.start_time }, 'end_time')
    await bad({ window_size: 'FORTNIGHT' }, 'window_size')
    await bad({ window_size: 'DAY', timezone: 'Mars/Olympus' }, 'timezone')
    expect((await h.http('POST', '/v1/events/usage/meter', { body: { ...RANGE, meter_id: 'meter_nope' } })).status).toBe(404)
  })
})

describe('POST /v1/events/usage (no stored meter)', () => {
  it('gives what the equivalent meter gives', async () => {
    const res = await h.http('POST', '/v1/events/usage', {
      body: { event_name: ' llm ', aggregation_type: 'MAX', property_name: 'tokens', bucket_size: 'HOUR', group_by: 'region', window_size: 'DAY', ...RANGE },
    })
    expect(res.status).toBe(200)
    expect(res.body.value).toBe('120.5')
    expect(res.body.results.map((w: { value: string }) => w.value)).toEqual(['20.5', '100'])
    const sum = await h.http('POST', '/v1/events/usage', { body: { event_name: 'llm', aggregation_type: 'SUM', property_name: 'tokens', filters: { model: ['gpt'] }, ...RANGE } })
    expect(sum.body.value).toBe('122')
  })
})
