// The daily rollup (meter_usage_1d) over HTTP: months of whole days, a billing-anchored month whose boundaries
// cut a day, an hour and a minute (read from days, hours, minutes and raw rows at once), every aggregation by
// hand and the same as a raw recount; and the migration's backfill giving the rows the view gives.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SQL_DIR, splitStatements } from '../../../infra/migrate.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { readyMeter, send, usage } from '../../../test/usage-helpers.ts'
import { meterUsage, meterUsageByCustomer, type MeterUsageQuery } from './service.ts'

let h: Harness
const meters: Record<string, string> = {}
const ANCHOR = '2024-02-15T12:34:56.789Z'
const PERIOD = { start_time: ANCHOR, end_time: '2024-03-15T12:34:56.789Z', window_size: 'MONTH', billing_anchor: ANCHOR }

// r1's events around the period [Feb 15 12:34:56.789, Mar 15 12:34:56.789): e1 a millisecond before it, e9 at its end.
const R1 = [
  { id: 'e1', at: '2024-02-15T12:34:56.788Z', props: { v: 1000, user: 'z' } },
  { id: 'e2', at: '2024-02-15T12:34:56.789Z', props: { v: 1, user: 'a' } }, // cut minute: raw rows
  { id: 'e3', at: '2024-02-15T12:35:10.000Z', props: { v: 2, user: 'b' } }, // cut hour: minutes
  { id: 'e4', at: '2024-02-15T18:00:00.000Z', props: { v: 4, user: 'a' } }, // cut day: hours
  { id: 'e5', at: '2024-02-20T10:00:00.000Z', props: { v: 8, user: 'c' } }, // whole day
  { id: 'e6', at: '2024-03-01T00:00:00.000Z', props: { v: 16, user: 'b' } }, // whole day
  { id: 'e10', at: '2024-03-15T09:00:00.000Z', props: { v: 256, user: 'a' } }, // cut day: hours
  { id: 'e7', at: '2024-03-15T12:00:00.000Z', props: { v: 32, user: 'd' } }, // cut hour: minutes
  { id: 'e8', at: '2024-03-15T12:34:56.788Z', props: { v: 64, user: 'e' } }, // cut minute: raw rows, the latest
  { id: 'e9', at: '2024-03-15T12:34:56.789Z', props: { v: 128, user: 'f' } }, // the end: out
]

beforeAll(async () => {
  h = await startHarness({ env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0' } })
  const define = async (key: string, aggregation: Record<string, unknown>) => {
    meters[key] = await readyMeter(h, { name: key, event_name: 'disk', aggregation })
  }
  await define('count', { type: 'COUNT' })
  await define('sum', { type: 'SUM', field: 'v' })
  await send(h, R1, { customer: 'r1', name: 'disk' })
  await send(h, [{ id: 'r2-1', at: '2024-02-16T00:00:00.000Z', props: { v: 1000, user: 'a' } }], { customer: 'r2', name: 'disk' })
  // Defined after the events: their rows come from the meter backfill, through the same views.
  await define('max', { type: 'MAX', field: 'v' })
  await define('min', { type: 'MIN', field: 'v' })
  await define('unique', { type: 'COUNT_UNIQUE', field: 'user' })
  await define('latest', { type: 'LATEST', field: 'v' })
  await define('weighted', { type: 'WEIGHTED_SUM', field: 'v' })
})
afterAll(() => h?.stop())

const scope = () => ({ tenantId: h.tenant.tenantId, environmentId: h.tenant.environments.production })

describe('a billing-anchored month cutting a day, an hour and a minute at each end', () => {
  // In the period: e2 e3 e4 e5 e6 e10 e7 e8 = 1 + 2 + 4 + 8 + 16 + 256 + 32 + 64; r2 adds 1000 on Feb 16.
  // WEIGHTED_SUM: Σ v × (end − t) / 29 days = 57,571,358,966 / 2,505,600,000 for r1, with r2's
  // 1000 × 2,464,496,789 more for the environment.
  it.each([
    ['count', '8', '9'],
    ['sum', '383', '1383'],
    ['max', '256', '1000'],
    ['min', '1', '1'],
    ['unique', '5', '5'], // a b c d e (r2's user is a)
    ['latest', '64', '64'],
    ['weighted', '22.977074938538', '1006.572536704183'],
  ])('%s: r1 %s, the environment %s, from the rollups and from raw rows', async (key, r1, all) => {
    const one = await usage(h, { meter_id: meters[key], external_customer_id: 'r1', ...PERIOD })
    const env = await usage(h, { meter_id: meters[key], ...PERIOD })
    expect([one.value, one.results.map((w) => w.value)]).toEqual([r1, [r1]])
    expect(env.value).toBe(all)
    const q = { meterId: meters[key], start: new Date(PERIOD.start_time), end: new Date(PERIOD.end_time) }
    expect((await meterUsage(h.running.deps, scope(), { ...q, externalCustomerId: 'r1', source: 'raw' })).value.toFixed()).toBe(r1)
    expect((await meterUsage(h.running.deps, scope(), { ...q, source: 'raw' })).value.toFixed()).toBe(all)
    const many = await meterUsageByCustomer(h.running.deps, scope(), { ...q, externalCustomerIds: ['r1', 'r2'] })
    expect(many.get('r1')!.value.toFixed()).toBe(r1)
  })

  it('calendar months of whole days', async () => {
    const r = await usage(h, { meter_id: meters.sum, external_customer_id: 'r1', start_time: '2024-02-01T00:00:00Z', end_time: '2024-04-01T00:00:00Z', window_size: 'MONTH' })
    // February: e1..e5 = 1000 + 1 + 2 + 4 + 8; March: e6 e10 e7 e8 e9 = 16 + 256 + 32 + 64 + 128.
    expect([r.value, r.results.map((w) => w.value)]).toEqual(['1511', ['1015', '496']])
    const latest = await usage(h, { meter_id: meters.latest, external_customer_id: 'r1', start_time: '2024-02-01T00:00:00Z', end_time: '2024-04-01T00:00:00Z', window_size: 'MONTH' })
    expect([latest.value, latest.results.map((w) => w.value)]).toEqual(['128', ['8', '128']])
    const unique = await usage(h, { meter_id: meters.unique, start_time: '2024-02-01T00:00:00Z', end_time: '2024-04-01T00:00:00Z', window_size: 'MONTH' })
    expect([unique.value, unique.results.map((w) => w.value)]).toEqual(['7', ['4', '5']]) // z a b c | b a d e f
  })
})

describe('the rollups and a raw recount agree', () => {
  const shapes: (Omit<MeterUsageQuery, 'meterId'> & { label: string })[] = [
    { label: 'calendar months', start: new Date('2024-01-01T00:00:00Z'), end: new Date('2024-05-01T00:00:00Z'), windowSize: 'MONTH' },
    { label: 'anchored months', start: new Date('2024-01-15T12:34:56.789Z'), end: new Date('2024-04-15T12:34:56.789Z'), windowSize: 'MONTH', billingAnchor: new Date(ANCHOR) },
    { label: 'New York days', start: new Date('2024-02-10T05:00:00Z'), end: new Date('2024-03-20T04:00:00Z'), windowSize: 'DAY', timeZone: 'America/New_York' },
    { label: 'weeks from mid-day', start: new Date('2024-02-14T13:00:00Z'), end: new Date('2024-03-16T00:00:00Z'), windowSize: 'WEEK' },
  ]
  it.each(shapes)('$label, for r1 and for the environment, every aggregation', async ({ label: _l, ...shape }) => {
    for (const key of Object.keys(meters)) {
      for (const customer of ['r1', undefined]) {
        const q = { ...shape, meterId: meters[key], externalCustomerId: customer }
        const [views, raw] = [await meterUsage(h.running.deps, scope(), q), await meterUsage(h.running.deps, scope(), { ...q, source: 'raw' })]
        expect(views.results.map((w) => w.value.toFixed()), `${key} ${customer}`).toEqual(raw.results.map((w) => w.value.toFixed()))
        expect(views.value.toFixed(), `${key} ${customer}`).toBe(raw.value.toFixed())
      }
    }
  })
})

describe('migration 0003', () => {
  it("backfills the daily rows the view writes: the migration's INSERT over meter_usage_1h gives the same states", async () => {
    const { client } = h.running.deps.ch
    const backfill = splitStatements(readFileSync(join(SQL_DIR, 'clickhouse', '0003_usage_daily.sql'), 'utf8')).find((s) => s.startsWith('INSERT INTO meter_usage_1d'))!
    await client.command({ query: 'CREATE TABLE meter_usage_1d_check AS meter_usage_1d' })
    await client.command({ query: backfill.replace('INSERT INTO meter_usage_1d', 'INSERT INTO meter_usage_1d_check') })
    const merged = async (table: string) => {
      const rs = await client.query({
        query: `SELECT meter_id, external_customer_id, toString(day) AS day, toString(sum(events)) AS events, toString(sum(value_sum)) AS sum,
                       toString(min(value_min)) AS min, toString(max(value_max)) AS max, toString(sum(value_ms_sum)) AS ms,
                       toString(uniqExactMerge(uniques)) AS uniques, toString(argMaxMerge(latest)) AS latest
                FROM ${table} WHERE tenant_id = {t:String} GROUP BY meter_id, external_customer_id, day ORDER BY meter_id, external_customer_id, day`,
        query_params: { t: h.tenant.tenantId },
        format: 'JSONEachRow',
      })
      return rs.json()
    }
    const fromView = await merged('meter_usage_1d')
    expect(fromView.length).toBe(7 * 5) // 7 meters × (4 days of r1 + 1 of r2)
    expect(await merged('meter_usage_1d_check')).toEqual(fromView)
    await client.command({ query: 'DROP TABLE meter_usage_1d_check' })
  })
})
