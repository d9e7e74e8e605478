// The meter backfill fills the usage breakdowns by source: a meter created after its events, and a meter whose filters
// change, count the stored events in meter_usage and in the breakdowns through one insert (meter_usage_backfill), and
// a page of it inserted again (a rerun after a crash) is dropped by every table.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { resolveEvent, type MeterRules } from '../core/meters.ts'
import { startHarness, type Harness } from '../test/harness.ts'
import { readyMeter } from '../test/usage-helpers.ts'
import { usageBreakdown, type AnalyticsMeter, type BreakdownGroup } from '../domains/usage/analytics/store.ts'
import { insertMeterUsage } from './store.ts'

let h: Harness
const START = new Date('2024-03-01T00:00:00Z')
const END = new Date('2024-03-03T00:00:00Z')

interface Sent {
  event_id: string
  event_name: string
  external_customer_id: string
  source?: string
  timestamp: string
  properties: Record<string, unknown>
}

const EVENTS: Sent[] = Array.from({ length: 400 }, (_, i) => ({
  event_id: `bf-${i}`,
  event_name: 'storage',
  external_customer_id: `cust-${i % 3}`,
  ...(i % 4 === 3 ? {} : { source: ['api', 'sdk', 'batch'][i % 4] }),
  // Every 7 minutes and some seconds from Mar 1, 00:00:17: minutes and hours a range can cut.
  timestamp: new Date(START.getTime() + 17_000 + i * 427_000).toISOString(),
  properties: { gb: (i % 9) + 0.25, region: i % 5 === 0 ? 'eu' : 'us' },
}))

beforeAll(async () => {
  h = await startHarness({ env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0' } })
  for (let i = 0; i < EVENTS.length; i += 100) {
    const res = await h.http('POST', '/v1/events/bulk', { body: { events: EVENTS.slice(i, i + 100) } })
    expect(res.status, JSON.stringify(res.body)).toBe(202)
  }
})
afterAll(() => h?.stop())

const scope = () => ({ tenantId: h.tenant.tenantId, environmentId: h.tenant.environments.production })

async function meter(id: string): Promise<{ analytics: AnalyticsMeter; rules: MeterRules }> {
  const m = (await h.http('GET', `/v1/meters/${id}`)).body
  const aggregation = { type: m.aggregation.type, field: m.aggregation.field ?? undefined }
  return {
    analytics: { meterId: id, revision: m.ready_revision, eventName: m.event_name, aggregation },
    rules: { id, revision: m.ready_revision, eventName: m.event_name, filters: m.filters ?? [], aggregation },
  }
}

/** The breakdown of the events sent, by source and customer, counted here. */
function recount(rules: MeterRules, start: Date, end: Date): Omit<BreakdownGroup, 'points'>[] {
  const groups = new Map<string, { n: number; sum: number; max: number }>()
  for (const e of EVENTS) {
    const at = new Date(e.timestamp)
    if (at < start || at >= end) continue
    const [row] = resolveEvent([rules], { eventName: e.event_name, properties: e.properties }).rows
    if (!row) continue
    const key = JSON.stringify([e.source ?? '', e.external_customer_id])
    const g = groups.get(key) ?? { n: 0, sum: 0, max: -Infinity }
    groups.set(key, { n: g.n + 1, sum: g.sum + Number(row.value), max: Math.max(g.max, Number(row.value)) })
  }
  return [...groups]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([key, g]) => {
      const [source, customer] = JSON.parse(key) as string[]
      return { meterId: rules.id, source, externalCustomerId: customer, eventCount: String(g.n), usage: String(rules.aggregation.type === 'MAX' ? g.max : rules.aggregation.type === 'SUM' ? g.sum : g.n) }
    })
}

// A range cut inside an hour at both ends: whole hours from the breakdown rollup, the rest from raw rows.
const RANGE = { start: new Date('2024-03-01T02:30:00Z'), end: new Date('2024-03-02T19:45:30Z') }

describe('the meter backfill and the breakdowns', () => {
  it('fills the breakdowns of a meter created after its events, once, rerun or not', async () => {
    const sum = await meter(await readyMeter(h, { name: 'GB', event_name: 'storage', aggregation: { type: 'SUM', field: 'gb' } }))
    const max = await meter(await readyMeter(h, { name: 'GB max', event_name: 'storage', aggregation: { type: 'MAX', field: 'gb' } }))
    for (const m of [sum, max]) {
      const q = { scope: scope(), meters: [m.analytics], ...RANGE, groupBy: ['source', 'external_customer_id'] as ('source' | 'external_customer_id')[] }
      const views = await usageBreakdown(h.running.deps.ch, q)
      expect(views.groups).toEqual(recount(m.rules, RANGE.start, RANGE.end))
      // The whole environment reads the customer-less rollup; every event is there.
      const env = await usageBreakdown(h.running.deps.ch, { scope: scope(), meters: [m.analytics], start: START, end: END })
      expect(env.groups.map((g) => g.eventCount)).toEqual([String(EVENTS.length)])
    }

    // The backfill's page inserted again with its token (a rerun after a crash between the insert and the progress
    // record): dropped by meter_usage and by both breakdowns. One page held every event, in primary-key order.
    const before = await counts(sum.analytics.meterId)
    expect(before).toEqual({ raw: '400', byCustomer: '400', env: '400' })
    const page = [...EVENTS].sort((a, b) => (a.external_customer_id < b.external_customer_id ? -1 : a.external_customer_id > b.external_customer_id ? 1 : a.timestamp < b.timestamp ? -1 : 1))
    const rows = page.map((e) => ({
      tenant_id: scope().tenantId,
      environment_id: scope().environmentId,
      external_customer_id: e.external_customer_id,
      source: e.source ?? '',
      timestamp: e.timestamp.replace('T', ' ').replace('Z', ''),
      event_id: e.event_id,
      row: resolveEvent([sum.rules], { eventName: e.event_name, properties: e.properties }).rows[0],
    }))
    await insertMeterUsage(h.running.deps.ch, rows, `backfill:${sum.analytics.meterId}:1:${page[0].event_id}:${page[page.length - 1].event_id}:${page.length}`)
    expect(await counts(sum.analytics.meterId)).toEqual(before)
  })

  it('fills the new revision of a meter whose filters change', async () => {
    const id = await readyMeter(h, { name: 'EU GB', event_name: 'storage', aggregation: { type: 'SUM', field: 'gb' }, filters: [{ key: 'region', values: ['eu'] }] })
    const eu = await meter(id)
    expect(eu.analytics.revision).toBe(1)
    const changed = await h.http('PUT', `/v1/meters/${id}`, { body: { filters: [{ key: 'region', values: ['us'] }] } })
    expect(changed.status, JSON.stringify(changed.body)).toBe(200)
    let us = await meter(id)
    for (let i = 0; i < 200 && us.analytics.revision !== 2; i++) {
      await new Promise((r) => setTimeout(r, 100))
      us = await meter(id)
    }
    expect(us.analytics.revision).toBe(2)
    for (const m of [eu, us]) {
      const views = await usageBreakdown(h.running.deps.ch, { scope: scope(), meters: [m.analytics], ...RANGE, groupBy: ['source', 'external_customer_id'] })
      expect(views.groups).toEqual(recount(m.rules, RANGE.start, RANGE.end))
      const raw = await usageBreakdown(h.running.deps.ch, { scope: scope(), meters: [m.analytics], ...RANGE, groupBy: ['source', 'external_customer_id'], read: 'raw' })
      expect(raw.groups).toEqual(views.groups)
    }
  })
})

async function counts(meterId: string): Promise<{ raw: string; byCustomer: string; env: string }> {
  const rs = await h.running.deps.ch.client.query({
    query: `SELECT (SELECT toString(count()) FROM meter_usage WHERE meter_id = {m:String}) AS raw,
                   (SELECT toString(sum(events)) FROM meter_usage_by_source_1h WHERE meter_id = {m:String}) AS byCustomer,
                   (SELECT toString(sum(events)) FROM meter_usage_by_source_env_1h WHERE meter_id = {m:String}) AS env`,
    query_params: { m: meterId },
    format: 'JSONEachRow',
  })
  const [row] = await rs.json<{ raw: string; byCustomer: string; env: string }>()
  return row
}
