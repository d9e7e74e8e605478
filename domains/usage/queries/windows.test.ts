// Window sizes, billing-anchor months and time zones through the HTTP query, with hand-computed windows.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { readyMeter, send, usage } from '../../../test/usage-helpers.ts'

let h: Harness
let meter: string

const nonZero = (results: { window_size: string; value: string }[]) => Object.fromEntries(results.filter((r) => r.value !== '0').map((r) => [r.window_size, Number(r.value)]))

beforeAll(async () => {
  h = await startHarness({ env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0' } })
  meter = await readyMeter(h, { name: 'calls', event_name: 'call', aggregation: { type: 'COUNT' } })
})
afterAll(() => h?.stop())

describe('all ten window sizes (UTC)', () => {
  // 2024-03-04 is a Monday. Each instant sits on or just before a boundary of some size.
  const instants = [
    '2024-03-04T00:00:00.000Z', '2024-03-04T00:14:59.999Z', '2024-03-04T00:15:00.000Z', '2024-03-04T00:29:59.999Z',
    '2024-03-04T00:30:00.000Z', '2024-03-04T00:59:59.999Z', '2024-03-04T01:00:00.000Z', '2024-03-04T02:59:59.999Z',
    '2024-03-04T03:00:00.000Z', '2024-03-04T05:59:59.999Z', '2024-03-04T06:00:00.000Z', '2024-03-04T11:59:59.999Z',
    '2024-03-04T12:00:00.000Z', '2024-03-04T23:59:59.999Z', '2024-03-05T00:00:00.000Z', '2024-03-10T23:59:59.999Z',
    '2024-03-11T00:00:00.000Z', '2024-03-31T23:59:59.999Z', '2024-04-01T00:00:00.000Z',
  ]
  beforeAll(() => send(h, instants.map((at, i) => ({ id: `w${i}`, at })), { customer: 'sizes', name: 'call' }))
  const day = { external_customer_id: 'sizes', start_time: '2024-03-04T00:00:00Z', end_time: '2024-03-05T00:00:00Z' }
  const t = (hhmm: string) => `2024-03-04T${hhmm}:00.000Z`

  it.each([
    ['MINUTE', 1440, { [t('00:00')]: 1, [t('00:14')]: 1, [t('00:15')]: 1, [t('00:29')]: 1, [t('00:30')]: 1, [t('00:59')]: 1, [t('01:00')]: 1, [t('02:59')]: 1, [t('03:00')]: 1, [t('05:59')]: 1, [t('06:00')]: 1, [t('11:59')]: 1, [t('12:00')]: 1, [t('23:59')]: 1 }],
    ['15MIN', 96, { [t('00:00')]: 2, [t('00:15')]: 2, [t('00:30')]: 1, [t('00:45')]: 1, [t('01:00')]: 1, [t('02:45')]: 1, [t('03:00')]: 1, [t('05:45')]: 1, [t('06:00')]: 1, [t('11:45')]: 1, [t('12:00')]: 1, [t('23:45')]: 1 }],
    ['30MIN', 48, { [t('00:00')]: 4, [t('00:30')]: 2, [t('01:00')]: 1, [t('02:30')]: 1, [t('03:00')]: 1, [t('05:30')]: 1, [t('06:00')]: 1, [t('11:30')]: 1, [t('12:00')]: 1, [t('23:30')]: 1 }],
    ['HOUR', 24, { [t('00:00')]: 6, [t('01:00')]: 1, [t('02:00')]: 1, [t('03:00')]: 1, [t('05:00')]: 1, [t('06:00')]: 1, [t('11:00')]: 1, [t('12:00')]: 1, [t('23:00')]: 1 }],
    ['3HOUR', 8, { [t('00:00')]: 8, [t('03:00')]: 2, [t('06:00')]: 1, [t('09:00')]: 1, [t('12:00')]: 1, [t('21:00')]: 1 }],
    ['6HOUR', 4, { [t('00:00')]: 10, [t('06:00')]: 2, [t('12:00')]: 1, [t('18:00')]: 1 }],
    ['12HOUR', 2, { [t('00:00')]: 12, [t('12:00')]: 2 }],
    ['DAY', 1, { [t('00:00')]: 14 }],
  ])('%s: %i windows over one day', async (size, count, expected) => {
    const r = await usage(h, { meter_id: meter, ...day, window_size: size })
    expect(r.results).toHaveLength(count as number)
    expect(nonZero(r.results)).toEqual(expected)
    expect(r.value).toBe('14')
  })

  it('WEEK windows start on Monday', async () => {
    const r = await usage(h, { meter_id: meter, external_customer_id: 'sizes', start_time: '2024-03-01T00:00:00Z', end_time: '2024-04-08T00:00:00Z', window_size: 'WEEK' })
    expect(r.results.map((w) => [w.window_size, w.start, w.value])).toEqual([
      ['2024-02-26T00:00:00.000Z', '2024-03-01T00:00:00.000Z', '0'],
      ['2024-03-04T00:00:00.000Z', '2024-03-04T00:00:00.000Z', '16'],
      ['2024-03-11T00:00:00.000Z', '2024-03-11T00:00:00.000Z', '1'],
      ['2024-03-18T00:00:00.000Z', '2024-03-18T00:00:00.000Z', '0'],
      ['2024-03-25T00:00:00.000Z', '2024-03-25T00:00:00.000Z', '1'],
      ['2024-04-01T00:00:00.000Z', '2024-04-01T00:00:00.000Z', '1'],
    ])
  })

  it('MONTH windows without an anchor are calendar months', async () => {
    const r = await usage(h, { meter_id: meter, external_customer_id: 'sizes', start_time: '2024-03-01T00:00:00Z', end_time: '2024-05-01T00:00:00Z', window_size: 'MONTH' })
    expect(r.results.map((w) => [w.window_size, w.end, w.value])).toEqual([
      ['2024-03-01T00:00:00.000Z', '2024-04-01T00:00:00.000Z', '18'],
      ['2024-04-01T00:00:00.000Z', '2024-05-01T00:00:00.000Z', '1'],
    ])
  })
})

describe('billing-anchor months', () => {
  // [anchor, next boundary, the one after]: same day and time of day, clamped to the month's last day.
  const cases: [string, string, string, string][] = [
    ['day 1 at 08:00', '2024-01-01T08:00:00.000Z', '2024-02-01T08:00:00.000Z', '2024-03-01T08:00:00.000Z'],
    ['day 15 at 23:59:59', '2024-01-15T23:59:59.000Z', '2024-02-15T23:59:59.000Z', '2024-03-15T23:59:59.000Z'],
    ['day 28 at 12:00', '2024-01-28T12:00:00.000Z', '2024-02-28T12:00:00.000Z', '2024-03-28T12:00:00.000Z'],
    ['day 29 at 06:30 (leap year)', '2024-01-29T06:30:00.000Z', '2024-02-29T06:30:00.000Z', '2024-03-29T06:30:00.000Z'],
    ['day 30 at 06:30, clamped in February', '2024-01-30T06:30:00.000Z', '2024-02-29T06:30:00.000Z', '2024-03-30T06:30:00.000Z'],
    ['day 31 at 18:45:30, clamped then back to 31', '2024-01-31T18:45:30.000Z', '2024-02-29T18:45:30.000Z', '2024-03-31T18:45:30.000Z'],
    ['day 31 in a common year', '2023-01-31T18:45:30.000Z', '2023-02-28T18:45:30.000Z', '2023-03-31T18:45:30.000Z'],
    ['day 29 in a common year', '2023-01-29T10:00:00.000Z', '2023-02-28T10:00:00.000Z', '2023-03-29T10:00:00.000Z'],
  ]
  const before = (iso: string) => new Date(new Date(iso).getTime() - 1).toISOString()

  it.each(cases)('%s', async (_label, anchor, b1, b2) => {
    const customer = `anchor-${anchor}`
    // One event just before the first boundary, two on it and after it, one just before the second.
    await send(h, [
      { id: `${customer}-a`, at: anchor },
      { id: `${customer}-b`, at: before(b1) },
      { id: `${customer}-c`, at: b1 },
      { id: `${customer}-d`, at: before(b2) },
      { id: `${customer}-e`, at: b2 },
    ], { customer, name: 'call' })
    const r = await usage(h, { meter_id: meter, external_customer_id: customer, start_time: anchor, end_time: b2, window_size: 'MONTH', billing_anchor: anchor })
    expect(r.results).toEqual([
      { window_size: anchor, start: anchor, end: b1, value: '2' },
      { window_size: b1, start: b1, end: b2, value: '2' },
    ])
    expect(r.value).toBe('4')
  })

  it('ignores billing_anchor for other window sizes', async () => {
    const customer = 'anchor-2024-01-15T23:59:59.000Z'
    const r = await usage(h, { meter_id: meter, external_customer_id: customer, start_time: '2024-02-15T00:00:00Z', end_time: '2024-02-17T00:00:00Z', window_size: 'DAY', billing_anchor: '2024-01-15T23:59:59Z' })
    // 23:59:58.999 and 23:59:59 on Feb 15 both fall in the calendar day of Feb 15.
    expect(r.results.map((w) => [w.window_size, w.value])).toEqual([
      ['2024-02-15T00:00:00.000Z', '2'],
      ['2024-02-16T00:00:00.000Z', '0'],
    ])
  })
})

describe('time zones', () => {
  it('DAY windows follow local midnight across the DST change (New York, 23-hour day)', async () => {
    await send(h, [
      { id: 'ny-1', at: '2024-03-10T04:59:59.999Z' }, // Mar 9, 23:59:59.999 EST
      { id: 'ny-2', at: '2024-03-10T05:00:00.000Z' }, // Mar 10, 00:00 EST
      { id: 'ny-3', at: '2024-03-11T03:59:59.999Z' }, // Mar 10, 23:59:59.999 EDT
      { id: 'ny-4', at: '2024-03-11T04:00:00.000Z' }, // Mar 11, 00:00 EDT
    ], { customer: 'ny', name: 'call' })
    const r = await usage(h, { meter_id: meter, external_customer_id: 'ny', start_time: '2024-03-09T05:00:00Z', end_time: '2024-03-12T04:00:00Z', window_size: 'DAY', timezone: 'America/New_York' })
    expect(r.results).toEqual([
      { window_size: '2024-03-09T05:00:00.000Z', start: '2024-03-09T05:00:00.000Z', end: '2024-03-10T05:00:00.000Z', value: '1' },
      { window_size: '2024-03-10T05:00:00.000Z', start: '2024-03-10T05:00:00.000Z', end: '2024-03-11T04:00:00.000Z', value: '2' },
      { window_size: '2024-03-11T04:00:00.000Z', start: '2024-03-11T04:00:00.000Z', end: '2024-03-12T04:00:00.000Z', value: '1' },
    ])
  })

  it('HOUR windows in a zone with a half-hour offset (Kolkata) start at :30 UTC', async () => {
    await send(h, [{ id: 'in-1', at: '2024-03-04T00:29:59.999Z' }, { id: 'in-2', at: '2024-03-04T00:30:00.000Z' }], { customer: 'in', name: 'call' })
    const r = await usage(h, { meter_id: meter, external_customer_id: 'in', start_time: '2024-03-03T23:30:00Z', end_time: '2024-03-04T01:30:00Z', window_size: 'HOUR', timezone: 'Asia/Kolkata' })
    expect(r.results.map((w) => [w.window_size, w.value])).toEqual([
      ['2024-03-03T23:30:00.000Z', '1'],
      ['2024-03-04T00:30:00.000Z', '1'],
    ])
  })
})

describe('the whole environment over a range cut inside its first and last hour', () => {
  // [Feb 15 23:30, Mar 1 00:30): the days at both ends reach outside the range and each hour inside it is cut,
  // so hours read nothing and raw rows take both ends (the plan once added an hourly source with no range: `AND ()`).
  it('counts every customer’s events at both ends and in the whole days between', async () => {
    const cut = await readyMeter(h, { name: 'cut ends', event_name: 'cut.call', aggregation: { type: 'COUNT' } })
    await send(h, [
      { id: 'cut-a', at: '2024-02-15T23:29:59.999Z', customer: 'cut-1' },
      { id: 'cut-b', at: '2024-02-15T23:30:00.000Z', customer: 'cut-1' },
      { id: 'cut-c', at: '2024-02-20T12:00:00.000Z', customer: 'cut-2' },
      { id: 'cut-d', at: '2024-03-01T00:29:59.999Z', customer: 'cut-2' },
      { id: 'cut-e', at: '2024-03-01T00:30:00.000Z', customer: 'cut-1' },
    ], { customer: 'cut-1', name: 'cut.call' })
    const r = await usage(h, { meter_id: cut, start_time: '2024-02-15T23:30:00Z', end_time: '2024-03-01T00:30:00Z' })
    expect(r.value).toBe('3')
  })
})
