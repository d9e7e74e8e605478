// The analytics export's two writers compared byte for byte on embedded engines: ClickHouse's (breakdownCsv, the
// path of most requests) and core/csv.ts's (the JavaScript rows every other request takes). Each case forces both
// paths on the same request and expects the same text, rows included (a case with no rows says so).
// April 2024, monthly subscriptions from 1 April: A pays calls (COUNT) at 0.10 and tokens (SUM of n) graduated 1000
// at 0.002 then 0.001 (window costs with thirds of a cent to split); B has no subscription; `ghost,"1"` and `=ghost`
// send events without a customer record; 120 more customers make a MINUTE export run in several batches, and 5 more
// on A's plan make one whose costs are computed in several batches.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../core/clock.ts'
import { csvHeader } from '../../core/csv.ts'
import { created, customer, plan, subscribed, usagePrice } from '../../test/catalog.ts'
import { eventLogOf } from '../../infra/event-log.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { readyMeter } from '../../test/usage-helpers.ts'
import { analyticsExport, exportPath, type AnalyticsExportRequest, type ExportPath } from './export.ts'
import { resolveRequest } from './service.ts'

let h: Harness
const clock = fixedClock('2024-04-30T00:00:00Z')
const features: Record<string, string> = {}
const ids = {} as Record<'a' | 'b', string>
const ghosts = ['ghost,"1"', '=ghost']
const MANY = 120
const PRICED = 5
const minutesStart = Date.parse('2024-04-20T00:00:00Z')

// Meters of every aggregation the SQL path writes, and AVG (the JavaScript path's).
const METERS: Record<string, Record<string, unknown>> = {
  calls: { type: 'COUNT' },
  tokens: { type: 'SUM', field: 'n' },
  scaled: { type: 'SUM_WITH_MULTIPLIER', field: 'n', multiplier: '0.125' },
  low: { type: 'MIN', field: 'n' },
  peak: { type: 'MAX', field: 'n' },
  peakByRegion: { type: 'MAX', field: 'n', group_by: 'region' },
  hourlyPeak: { type: 'MAX', field: 'n', bucket_size: 'HOUR' },
  models: { type: 'COUNT_UNIQUE', field: 'model' },
  last: { type: 'LATEST', field: 'n' },
  mean: { type: 'AVG', field: 'n' },
}

async function send(events: Record<string, unknown>[]) {
  for (let i = 0; i < events.length; i += 1000) {
    const res = await h.http('POST', '/v1/events/bulk', { body: { events: events.slice(i, i + 1000) } })
    expect(res.status, JSON.stringify(res.body)).toBe(202)
    expect(res.body.failed ?? []).toEqual([])
  }
}

let seq = 0
const event = (customer: string, at: string, source: string, props: Record<string, unknown>) => ({
  event_id: `e${++seq}`,
  event_name: 'use',
  external_customer_id: customer,
  source,
  timestamp: at,
  properties: props,
})

beforeAll(async () => {
  h = await startHarness({ clock, env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0', INVOICE_GRACE_PERIOD_MINUTES: '0' } })
  for (const [name, aggregation] of Object.entries(METERS)) {
    const meterId = await readyMeter(h, { name, event_name: 'use', aggregation })
    features[name] = (await created(h, '/v1/features', { name: `=${name}, "feature"`, type: 'metered', meter_id: meterId })).id
    features[`${name}Meter`] = meterId
  }
  // A second feature of the calls meter: its rows come twice, once per feature.
  features.calls2 = (await created(h, '/v1/features', { name: 'Calls again', type: 'metered', meter_id: features.callsMeter })).id
  const p = await plan(h, {
    prices: [
      usagePrice(features.callsMeter, '0.10', { display_name: 'Calls' }),
      usagePrice(features.tokensMeter, '0', { display_name: 'Tokens', billing_model: 'TIERED', tier_mode: 'SLAB', tiers: [{ up_to: 1000, unit_amount: '0.002' }, { up_to: null, unit_amount: '0.001' }] }),
    ],
  })
  const a = await customer(h, { name: 'Acme, "the" company', metadata: { tier: '=gold', region: 'eu\nwest', note: 'a,b' } })
  const b = await customer(h, { name: '-Bee' })
  ids.a = a.external_id
  ids.b = b.external_id
  await subscribed(h, { customer_id: a.id, plan_id: p.id, collection_method: 'send_invoice', start_date: '2024-04-01T00:00:00Z' })
  const events: Record<string, unknown>[] = []
  for (let c = 0; c < PRICED; c++) {
    const priced = await customer(h, { external_id: `priced-${c}`, name: `Priced ${c}` })
    await subscribed(h, { customer_id: priced.id, plan_id: p.id, collection_method: 'send_invoice', start_date: '2024-04-01T00:00:00Z' })
    // c + 1 calls from sdk in separate minutes, and one from web in the first of them: (c + 2) × 0.10.
    for (let k = 0; k <= c; k++) events.push(event(`priced-${c}`, new Date(minutesStart + (c * 101 + k * 997) * 60_000).toISOString(), 'sdk', { n: k }))
    events.push(event(`priced-${c}`, new Date(minutesStart + c * 101 * 60_000 + 30_000).toISOString(), 'web', { n: 1 }))
  }
  // A: 111 tokens from each of three sources on 3 April (333 × 0.002 = 0.666: 67 cents in thirds), calls on several days.
  for (const [source, model] of [['sdk', 'small'], ['=cmd', 'with\nnewline'], ['a,"b"', '-x']]) {
    events.push(event(ids.a, '2024-04-03T10:00:00Z', source, { n: 111, model, region: 'eu' }))
    events.push(event(ids.a, '2024-04-03T11:30:00Z', source, { n: 0, model: 5, region: 'us' }))
  }
  for (let i = 0; i < 7; i++) events.push(event(ids.a, `2024-04-${String(5 + i).padStart(2, '0')}T0${i}:15:00Z`, i % 2 ? 'sdk' : 'web', { n: 100 * i + 0.5, model: i % 3 ? 'large' : 'small', region: i % 2 ? 'eu' : 'us' }))
  events.push(event(ids.a, '2024-04-12T23:59:59.999Z', '', { n: -3.25 }))
  events.push(event(ids.b, '2024-04-03T09:00:00Z', 'sdk', { n: 7, model: 'small', region: 'eu' }))
  events.push(event(ids.b, '2024-04-28T09:00:00Z', '+web', { n: 2.000000000001, model: 'large' }))
  for (const g of ghosts) events.push(event(g, '2024-04-15T12:00:00Z', 'sdk', { n: 1, model: '@m' }))
  for (let c = 0; c < MANY; c++) {
    for (let k = 0; k < 3; k++) events.push(event(`many-${String(c).padStart(3, '0')}`, new Date(minutesStart + (c * 37 + k * 1013) * 60_000).toISOString(), k ? 'sdk' : 'web', { n: c + k, model: `m${k}` }))
  }
  await send(events)
  // Direct mode answered after its event log: the cases read ClickHouse, so the events must be inserted first.
  expect(await eventLogOf(h.running.deps)?.settled(60_000)).not.toBe(false)
}, 180_000)
afterAll(() => h?.stop())

const actor = () => ({ tenantId: h.tenant.tenantId, environmentId: h.tenant.environments.production, keyId: 'test', roles: ['admin' as const] })

function request(body: Partial<AnalyticsExportRequest> & { features: string[] }): AnalyticsExportRequest {
  const { features: names, ...rest } = body
  return {
    start: new Date('2024-04-01T00:00:00Z'),
    end: new Date('2024-05-01T00:00:00Z'),
    featureIds: names.map((n) => features[n]),
    groupBy: [],
    expand: [],
    includeChildren: false,
    limit: 50,
    offset: 0,
    metadataColumns: [],
    columnSets: [],
    ...rest,
  }
}

async function written(r: AnalyticsExportRequest, path: ExportPath): Promise<string> {
  const csv = analyticsExport(h.running.deps, actor(), r, { path })
  const parts: Buffer[] = [Buffer.from(csvHeader(csv.columns))]
  for await (const piece of csv.pieces(new AbortController().signal)) parts.push(Buffer.from(piece.bytes))
  return Buffer.concat(parts).toString('utf8')
}

/** Both paths' text of `r`: equal, with `rows` rows after the header. */
async function same(r: AnalyticsExportRequest, rows: number | 'some'): Promise<string> {
  const [sql, ts] = [await written(r, 'sql'), await written(r, 'ts')]
  expect(sql).toBe(ts)
  const count = ts.split('\r\n').length - 2
  if (rows === 'some') expect(count).toBeGreaterThan(0)
  else expect(count).toBe(rows)
  return ts
}

const SQL_FEATURES = ['calls', 'tokens', 'scaled', 'low', 'peak', 'peakByRegion', 'hourlyPeak', 'models', 'last']

describe('the analytics export written by ClickHouse equals the JavaScript rows byte for byte', () => {
  it('one priced customer per DAY by source, metadata with commas, quotes, newlines and a leading =', async () => {
    const text = await same(request({ features: ['calls', 'calls2', 'tokens'], externalCustomerId: ids.a, windowSize: 'DAY', groupBy: ['source'], metadataColumns: ['tier', 'region', 'note', 'absent'] }), 'some')
    // 333 tokens at 0.002 on 3 April: 67 cents over three rows of 111, the extra cent to the first in the stream's order.
    const april3 = text.split('\r\n').filter((l) => l.startsWith('2024-04-03') && l.includes(`'=tokens`))
    expect(april3.map((l) => l.split(',').slice(-8, -5))).toEqual([
      ['111', '0.23', 'USD'],
      ['111', '0.22', 'USD'],
      ['111', '0.22', 'USD'],
    ])
  })

  it('tokens by property and source: the cost of 3 April split with remainders and ties', async () => {
    await same(request({ features: ['tokens'], externalCustomerId: ids.a, windowSize: 'DAY', groupBy: ['properties.model', 'source'] }), 'some')
  })

  it('each aggregation the SQL path takes, the whole environment, by source, per DAY', async () => {
    for (const name of SQL_FEATURES) await same(request({ features: [name], windowSize: 'DAY', groupBy: ['source'] }), 'some')
  })

  it('every such meter together over the whole range, customers without a record among them', async () => {
    const text = await same(request({ features: SQL_FEATURES, metadataColumns: ['tier'] }), 'some')
    expect(text).toContain(`,"ghost,""1""",`)
    expect(text).toContain(`,'=ghost,`)
  })

  it('MINUTE windows over 120 customers: several batches of customers', async () => {
    const start = new Date(minutesStart)
    const end = new Date(start.getTime() + 5000 * 60_000)
    // Each customer's minutes with events within the 5,000 minutes (the priced customers' 15 all are, their web calls
    // sharing a minute with sdk), one row per meter each (50 customers a batch); by source, the priced web calls' 5 more.
    const within = Array.from({ length: MANY }, (_, c) => [0, 1, 2].filter((k) => c * 37 + k * 1013 < 5000).length).reduce((a, b) => a + b, 0) + (PRICED * (PRICED + 1)) / 2
    await same(request({ features: ['calls', 'tokens'], start, end, windowSize: 'MINUTE', groupBy: ['source'] }), (within + PRICED) * 2)
    // COUNT alone: whole numbers, summed as UInt64.
    await same(request({ features: ['calls'], start, end, windowSize: 'MINUTE' }), within)
  })

  it('MINUTE windows of 5 priced customers: their costs computed a batch of customers at a time, each right', async () => {
    const start = new Date(minutesStart)
    const end = new Date(start.getTime() + 5000 * 60_000)
    // 5 × 5,000 priced windows: more than one batch holds (20,000).
    const text = await same(request({ features: ['calls'], start, end, windowSize: 'MINUTE' }), 'some')
    const cost = new Map<string, number>()
    for (const line of text.split('\r\n').slice(1, -1)) {
      const cells = line.split(',')
      // window_start, customer_id, external_customer_id, …, cost, currency
      if (cells[2].startsWith('priced-')) cost.set(cells[2], (cost.get(cells[2]) ?? 0) + Math.round(Number(cells.at(-2)) * 100))
    }
    expect(Object.fromEntries(cost)).toEqual(Object.fromEntries(Array.from({ length: PRICED }, (_, c) => [`priced-${c}`, (c + 2) * 10])))
    // The analytics answer over the whole environment prices its units a batch at a time too (A's 5,000 windows and
    // these 25,000): 2 + 3 + 4 + 5 + 6 calls at 0.10, each in its minute.
    const res = await h.http('POST', '/v1/events/analytics', { body: { start_time: start.toISOString(), end_time: end.toISOString(), feature_ids: [features.calls], window_size: 'MINUTE' } })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body.total_cost).toBe('2')
    const points = (res.body.items as { points: { timestamp: string; cost: string }[] }[]).flatMap((i) => i.points).filter((p) => p.cost !== '0')
    expect(points.filter((p) => p.timestamp === new Date(minutesStart + 4 * 101 * 60_000).toISOString()).map((p) => p.cost)).toEqual(['0.2'])
    expect(points.reduce((a, p) => a + Math.round(Number(p.cost) * 100), 0)).toBe(200)
  })

  it('the same filtered on a source: each row its share of its customer’s minute, in every batch', async () => {
    const start = new Date(minutesStart)
    const r = request({ features: ['calls'], start, end: new Date(start.getTime() + 5000 * 60_000), windowSize: 'MINUTE', sources: ['web'] })
    const rows = (await same(r, 'some')).split('\r\n').slice(1, -1).map((line) => line.split(','))
    // Each priced customer's one web call shares its minute with one sdk call: 0.20, half of it the web row's.
    const priced = rows.filter((cells) => cells[2].startsWith('priced-')).map((cells) => [cells[0], cells[2], cells.at(-2)])
    expect(priced).toEqual(Array.from({ length: PRICED }, (_, c) => [new Date(minutesStart + c * 101 * 60_000).toISOString(), `priced-${c}`, '0.1']))
  })

  it('priced rows filtered on sources or properties: each its share of the unfiltered usage, the rest not written', async () => {
    // 3 April: 333 tokens cost 0.666; the sdk row's 111 of them is a third: 0.22 (the extra cent goes to the rest).
    const bySource = await same(request({ features: ['tokens'], externalCustomerId: ids.a, windowSize: 'DAY', sources: ['sdk'], groupBy: ['source'] }), 'some')
    expect(bySource.split('\r\n').filter((l) => l.startsWith('2024-04-03')).map((l) => l.split(',').slice(-3, -1))).toEqual([['111', '0.22']])
    // Two of the three sources: 0.23 and 0.22, as unfiltered (the rest, the third source's, gets 0.22 and is not written).
    const two = await same(request({ features: ['tokens'], externalCustomerId: ids.a, windowSize: 'DAY', sources: ['sdk', '=cmd'], groupBy: ['source'] }), 'some')
    expect(two.split('\r\n').filter((l) => l.startsWith('2024-04-03')).map((l) => l.split(',').at(-2)).sort()).toEqual(['0.22', '0.23'])
    // The n = 0 events alone (model 5): no usage of their own, the whole window's cost is the rest's.
    const none = await same(request({ features: ['tokens'], externalCustomerId: ids.a, windowSize: 'DAY', propertyFilters: { model: ['5'] }, groupBy: ['source'] }), 3)
    expect(none.split('\r\n').slice(1, -1).map((l) => l.split(',').at(-2))).toEqual(['0', '0', '0'])
    // Every customer, two meters, filtered on properties and grouped by another, per HOUR and over the whole range.
    for (const windowSize of ['HOUR', undefined] as const) {
      await same(request({ features: ['calls', 'tokens', 'peak', 'models'], windowSize, propertyFilters: { model: ['small', 'large', '5'] }, groupBy: ['properties.region'] }), 'some')
      await same(request({ features: ['calls', 'tokens'], windowSize, sources: ['web', 'sdk'], groupBy: [] }), 'some')
    }
  })

  it('MONTH windows from a billing anchor, and WEEK windows in a time zone', async () => {
    const range = { start: new Date('2024-03-01T00:00:00Z'), end: new Date('2024-06-01T00:00:00Z') }
    await same(request({ features: ['calls', 'tokens', 'peak'], ...range, windowSize: 'MONTH', billingAnchor: new Date('2024-01-10T06:00:00Z'), groupBy: ['source'] }), 'some')
    await same(request({ features: ['calls', 'hourlyPeak'], ...range, windowSize: 'WEEK', timeZone: 'America/New_York' }), 'some')
  })

  it('a customer without a subscription, filtered on sources and properties (no cost to share)', async () => {
    const r = request({ features: ['calls', 'tokens'], externalCustomerId: ids.b, windowSize: 'HOUR', sources: ['sdk', '+web'], propertyFilters: { model: ['small', 'large'] }, groupBy: ['properties.region'] })
    await same(r, 'some')
    const resolved = await resolveRequest(h.running.deps, actor(), r)
    expect(exportPath(r, resolved)).toBe('sql')
  })

  it('an empty range: the header alone', async () => {
    await same(request({ features: ['calls'], start: new Date('2023-01-01T00:00:00Z'), end: new Date('2023-02-01T00:00:00Z'), windowSize: 'DAY' }), 0)
  })

  it('which path a request takes', async () => {
    const pathOf = async (r: AnalyticsExportRequest) => exportPath(r, await resolveRequest(h.running.deps, actor(), r))
    expect(await pathOf(request({ features: SQL_FEATURES, windowSize: 'DAY' }))).toBe('sql')
    expect(await pathOf(request({ features: ['calls', 'mean'] }))).toBe('ts')
    expect(await pathOf(request({ features: ['calls'], columnSets: ['reconciliation'] }))).toBe('ts')
    // Filtered, priced: a row's cost is its share of the customer's unfiltered usage, split in the statement too.
    expect(await pathOf(request({ features: ['calls'], externalCustomerId: ids.a, sources: ['sdk'] }))).toBe('sql')
  })
})
