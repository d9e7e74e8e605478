// The analytics export's reconciliation column set over HTTP on embedded engines, on the real clock (the dedup window
// is measured from now): a customer's calls of last month, one sent twice, one dead-lettered, billed on a finalized
// invoice; the CSV's reconciliation row must carry the reconciliation report's numbers.
import { parse } from 'csv-parse/sync'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { customer, plan, subscribed, usagePrice } from '../../test/catalog.ts'
import { leaveMidExport } from '../../test/exports.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { readyMeter } from '../../test/usage-helpers.ts'

let h: Harness
const now = new Date()
const month = (offset: number) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + offset, 1))
const [periodStart, periodEnd] = [month(-1), month(0)]
const day = (n: number) => new Date(periodStart.getTime() + (n - 1) * 86_400_000 + 10 * 3_600_000).toISOString()
const range = { start_time: periodStart.toISOString(), end_time: periodEnd.toISOString() }
const ids = {} as Record<'meter' | 'feature' | 'customer' | 'external', string>
const NUMBERS = ['received', 'stored', 'duplicates', 'rejected', 'corrected', 'counted', 'billed', 'adjusted', 'unsettled', 'billed_quantity']

beforeAll(async () => {
  h = await startHarness({ env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0', INVOICE_GRACE_PERIOD_MINUTES: '0' } })
  ids.meter = await readyMeter(h, { name: 'Calls', event_name: 'call', aggregation: { type: 'COUNT' } })
  ids.feature = (await h.http('POST', '/v1/features', { body: { name: 'Calls', type: 'metered', meter_id: ids.meter } })).body.id
  const p = await plan(h, { prices: [usagePrice(ids.meter, '0.10', { display_name: 'Calls' })] })
  const c = await customer(h, { name: '=Calls, "inc"' })
  ids.customer = c.id
  ids.external = c.external_id
  await subscribed(h, { customer_id: c.id, plan_id: p.id, collection_method: 'send_invoice', start_date: periodStart.toISOString() })
  const event = (id: string, at: string) => ({ event_id: id, event_name: 'call', external_customer_id: c.external_id, source: 'sdk', timestamp: at })
  // Three calls on days 2, 2 and 5; c1 sent again (a duplicate).
  expect((await h.http('POST', '/v1/events/bulk', { body: { events: [event('c1', day(2)), event('c2', day(2)), event('c3', day(5))] } })).status).toBe(202)
  expect((await h.http('POST', '/v1/events', { body: event('c1', day(2)) })).status).toBe(202)
  // A record the aggregator dead-letters, as it records it (direct mode has no dead-letter path to send one through).
  const { tenantId, environments } = h.tenant
  const at = day(7).replace('T', ' ').replace('Z', '')
  await h.running.deps.ch.client.command({
    query: `INSERT INTO event_batches (kind, tenant_id, environment_id, id, external_customer_id, event_name, timestamp, received_at, reason, expires_at)
            VALUES ('rejected', '${tenantId}', '${environments.production}', 'bad-1', '${c.external_id}', 'call', '${at}', '${at}', 'properties is not an object', now() + INTERVAL 35 DAY)`,
  })
  expect((await h.http('POST', '/v1/jobs/billing-run/run')).status).toBe(200)
}, 120_000)
afterAll(() => h?.stop())

const exported = async (body: Record<string, unknown>) => {
  const res = await h.http('POST', '/v1/events/analytics/export', { body: { ...range, format: 'csv', ...body } })
  expect(res.status, String(res.body)).toBe(200)
  return parse(res.body as string) as string[][]
}

describe('the reconciliation column set of the analytics export', () => {
  it('one row per customer and meter over the range after the window rows, with the report’s numbers', async () => {
    const report = await h.http('GET', `/v1/customers/${ids.customer}/usage/reconciliation?start_time=${range.start_time}&end_time=${range.end_time}&meter_ids=${ids.meter}`)
    expect(report.status, JSON.stringify(report.body)).toBe(200)
    const m = report.body.meters[0]
    // 3 stored + 1 duplicate + 1 rejected received, none corrected; the 3 counted, on the finalized invoice, none adjusted or unsettled.
    expect(NUMBERS.map((n) => String(m[n]))).toEqual(['5', '3', '1', '1', '0', '3', '3', '0', '0', '3'])
    for (const body of [{ external_customer_id: ids.external }, {}]) {
      const rows = await exported({ ...body, feature_ids: [ids.feature], window_size: 'DAY', columns: ['reconciliation'] })
      const header = rows[0]
      expect(header.slice(-11)).toEqual(['row_type', ...NUMBERS])
      const col = (row: string[], name: string) => row[header.indexOf(name)]
      // Day 2 (2 calls, 0.20) and day 5 (1 call, 0.10), their reconciliation cells empty; then the range's row.
      expect(rows.slice(1).map((r) => [col(r, 'row_type'), r[0], col(r, 'usage'), col(r, 'cost'), col(r, 'received')])).toEqual([
        ['usage', day(2).slice(0, 10) + 'T00:00:00.000Z', '2', '0.2', ''],
        ['usage', day(5).slice(0, 10) + 'T00:00:00.000Z', '1', '0.1', ''],
        ['reconciliation', range.start_time, '', '', '5'],
      ])
      const recon = rows[3]
      expect(NUMBERS.map((n) => col(recon, n))).toEqual(NUMBERS.map((n) => String(m[n])))
      // The customer's name is quoted (RFC 4180) and neutralized against formulas, as on window rows.
      expect([col(recon, 'customer_id'), col(recon, 'external_customer_id'), col(recon, 'customer_name'), col(recon, 'meter_id'), col(recon, 'feature_id')]).toEqual([
        ids.customer,
        ids.external,
        `'=Calls, "inc"`,
        ids.meter,
        ids.feature,
      ])
    }
  })

  it('without the set, the columns are as before; an unknown set is 400 naming columns', async () => {
    expect((await exported({ feature_ids: [ids.feature] }))[0]).not.toContain('row_type')
    const bad = await h.http('POST', '/v1/events/analytics/export', { body: { ...range, columns: ['everything'] } })
    expect(bad.status).toBe(400)
    expect(JSON.stringify(bad.body.details)).toContain('columns')
  })
})

describe('a client that leaves during the reconciliation rows', () => {
  it('stops the export before the remaining customers’ reports', async () => {
    // 300 customers with one ping each and ~1 KB of metadata a row, so a 64 KiB piece holds ~50 rows: the window rows
    // fill ~6 pieces, the reconciliation rows (one report per customer) ~6 more.
    const meter = await readyMeter(h, { name: 'Pings', event_name: 'ping', aggregation: { type: 'COUNT' } })
    const feature = (await h.http('POST', '/v1/features', { body: { name: 'Pings', type: 'metered', meter_id: meter } })).body.id
    const filler = (k: number) => `${k}`.padEnd(250, 'x')
    const metadata = { m1: filler(1), m2: filler(2), m3: filler(3), m4: filler(4) }
    const externals: string[] = []
    for (let batch = 0; batch < 300; batch += 25) {
      const made = await Promise.all(Array.from({ length: 25 }, () => customer(h, { metadata })))
      externals.push(...made.map((c) => c.external_id))
    }
    const events = externals.map((external, k) => ({ event_id: `ping-${k}`, event_name: 'ping', external_customer_id: external, timestamp: day(3) }))
    expect((await h.http('POST', '/v1/events/bulk', { body: { events } })).status).toBe(202)
    const body = { ...range, format: 'csv', feature_ids: [feature], window_size: 'DAY', columns: ['reconciliation'], metadata_columns: Object.keys(metadata) }
    // ClickHouse statements run in this process so far (each report runs several).
    const statements = async () => {
      const rs = await h.running.deps.ch.client.query({ query: "SELECT value FROM system.events WHERE event = 'SelectQuery'", format: 'JSONEachRow' })
      return Number((await rs.json<{ value: string }>())[0].value)
    }
    let before = await statements()
    const whole = await h.http('POST', '/v1/events/analytics/export', { body })
    expect(whole.status).toBe(200)
    expect(parse(whole.body as string).filter((r: string[]) => r.includes('reconciliation'))).toHaveLength(300)
    const wholeStatements = (await statements()) - before
    // The client reads until the first reconciliation row and leaves: of the 600 rows, the service had sent the
    // pieces read and the one ahead, and it ran the reports of those pieces only.
    before = await statements()
    const sent = await leaveMidExport(h, '/v1/events/analytics/export', body, (text) => text.includes(',reconciliation,'))
    expect(sent).toBeGreaterThan(300)
    expect(sent).toBeLessThan(450)
    expect((await statements()) - before).toBeLessThan(wholeStatements / 2)
    expect((await h.http('GET', '/v1/health')).status).toBe(200)
  }, 120_000)
})
