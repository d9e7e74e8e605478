// Usage breakdowns (sql/clickhouse/0005_usage_breakdowns.sql, domains/usage/analytics/store.ts) on chDB: batches
// written the way the aggregator writes them, some before migration 0005 (filled by its join), the rest after it
// (through its views), one of them twice with the same token. Every read is compared with a recount in memory of the
// events sent (core/usage aggregateRows, the test oracle of the usage query): every aggregation, by source, by
// customer, both, for one customer, two or the whole environment, ranges cut at the millisecond, windows of minutes,
// hours, days (UTC and Kolkata) and anchored months, bucketed and group_by meters; property groups and filters; pages
// of groups; the streams.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { resolveEvent, type MeterRules } from '../../../core/meters.ts'
import type { UsageEvent } from '../../../core/events.ts'
import type { WindowSize } from '../../../core/periods.ts'
import { aggregateRows, isAdditive, queryWindows, slicesOf, U, windowValues, type CalendarOptions, type TimedRow } from '../../../core/usage.ts'
import { openClickHouse, type ClickHouse } from '../../../infra/clickhouse.ts'
import { SQL_DIR, splitStatements } from '../../../infra/migrate.ts'
import { testConfig } from '../../../test/harness.ts'
import {
  propertyBreakdown,
  streamBreakdown,
  streamEvents,
  usageBreakdown,
  type AnalyticsMeter,
  type BreakdownGroup,
  type BreakdownPage,
  type BreakdownQuery,
  type PropertyBreakdownQuery,
} from './store.ts'
import { batchLine, expiresText, insertBatch } from '../../../aggregator/store.ts'

const scope = { tenantId: 'ten_breakdowns', environmentId: 'env_breakdowns' }
const NAME = 'llm.call'

const OTHER = 'embedding.call'
const rule = (id: string, aggregation: MeterRules['aggregation'], filters: MeterRules['filters'] = [], eventName = NAME): MeterRules => ({ id, revision: 1, eventName, filters, aggregation })
const METERS: MeterRules[] = [
  rule('m_count', { type: 'COUNT' }),
  rule('m_sum', { type: 'SUM', field: 'v' }),
  rule('m_avg', { type: 'AVG', field: 'v' }),
  rule('m_min', { type: 'MIN', field: 'v' }),
  rule('m_max', { type: 'MAX', field: 'v' }),
  rule('m_unique', { type: 'COUNT_UNIQUE', field: 'user' }),
  rule('m_latest', { type: 'LATEST', field: 'v' }),
  rule('m_mult', { type: 'SUM_WITH_MULTIPLIER', field: 'v', multiplier: '2.5' }),
  rule('m_weighted', { type: 'WEIGHTED_SUM', field: 'v' }),
  rule('m_max_by_user', { type: 'MAX', field: 'v', groupBy: 'user' }),
  rule('m_max_hourly', { type: 'MAX', field: 'v', bucketSize: 'HOUR' }),
  rule('m_sum_gpt', { type: 'SUM', field: 'v' }, [{ key: 'model', values: ['gpt-4o'] }]),
  // Another event name in a slicing of its own (a part of its own in the statement).
  rule('m_other_daily', { type: 'MAX', field: 'v', bucketSize: 'DAY' }, [], OTHER),
]
const analyticsMeters = (ids?: string[]): AnalyticsMeter[] =>
  METERS.filter((m) => !ids || ids.includes(m.id)).map((m) => ({ meterId: m.id, revision: m.revision, eventName: m.eventName, aggregation: m.aggregation }))

// ---- the events -----------------------------------------------------------------------------------------------

/** A deterministic generator (mulberry32). */
function random(seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const FROM = Date.parse('2024-02-28T00:00:00Z')
const TO = Date.parse('2024-03-02T06:00:00Z')
const CUSTOMERS = ['c1', 'c2', 'c3', 'c4', 'c5']
const SOURCES = ['api', 'sdk', '', "it's"]
const rnd = random(7)
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]

function makeEvents(n: number, offset: number): UsageEvent[] {
  const out: UsageEvent[] = []
  for (let i = 0; i < n; i++) {
    let at = FROM + Math.floor(rnd() * (TO - FROM))
    // Some on whole hours and minutes, some sharing their millisecond with the previous event (LATEST's tie-break by id).
    const shape = rnd()
    if (shape < 0.05) at -= at % 3_600_000
    else if (shape < 0.1) at -= at % 60_000
    else if (shape < 0.15 && out.length > 0) at = out[out.length - 1].timestamp.getTime()
    const props: Record<string, unknown> = { user: pick(['u1', 'u2', 'u3', 'u4']), model: pick(['gpt-4o', 'gpt-4o-mini', 'claude']) }
    const v = rnd()
    if (v < 0.06) props.v = 'not a number'
    else if (v > 0.94) delete props.user
    else props.v = v < 0.5 ? Math.floor(v * 1000) : `${Math.floor(v * 100)}.${Math.floor(rnd() * 1000)}`
    if (rnd() < 0.3) props.flag = rnd() < 0.5
    if (rnd() < 0.3) props.tier = Math.floor(rnd() * 3)
    out.push({
      id: `e-${String(offset + i).padStart(5, '0')}-${Math.floor(rnd() * 1e6)}`,
      ...scope,
      eventName: rnd() < 0.1 ? OTHER : NAME,
      externalCustomerId: pick(CUSTOMERS),
      customerId: '',
      source: pick(SOURCES),
      timestamp: new Date(at),
      receivedAt: new Date(TO),
      properties: props,
    })
  }
  return out
}

const BATCHES = [makeEvents(600, 0), makeEvents(700, 1000), makeEvents(500, 2000), makeEvents(400, 3000)]
const EVENTS = BATCHES.flat()

let ch: ClickHouse

async function applyMigrations(which: (file: string) => boolean): Promise<void> {
  const dir = join(SQL_DIR, 'clickhouse')
  for (const f of readdirSync(dir).filter((f) => f.endsWith('.sql') && which(f)).sort()) {
    for (const s of splitStatements(readFileSync(join(dir, f), 'utf8'))) await ch.client.command({ query: s })
  }
}

async function write(events: UsageEvent[], token: string): Promise<void> {
  const expires = expiresText(new Date(TO + 35 * 86_400_000))
  const lines = events.map((event) => batchLine({ kind: 'stored', event, rows: resolveEvent(METERS, event).rows }, expires))
  await insertBatch(ch, lines.join('\n'), token)
}

beforeAll(async () => {
  ch = await openClickHouse(testConfig())
  // Two batches stored before the breakdowns exist: migration 0005 fills them from meter_usage and events. (The batch
  // line writes today's columns: 0009's receipt column comes first; 0010 changes 0005's views, so it comes after them.)
  await applyMigrations((f) => f < '0005' || f.startsWith('0009'))
  await write(BATCHES[0], 'batch-0')
  await write(BATCHES[1], 'batch-1')
  await applyMigrations((f) => f >= '0005' && !f.startsWith('0009'))
  // The rest through the views; batch 2 retried with its token (a crash before the commit), counted once.
  await write(BATCHES[2], 'batch-2')
  await write(BATCHES[2], 'batch-2')
  await write(BATCHES[3], 'batch-3')
})
afterAll(() => ch?.close())

// ---- the oracle: a recount in memory ---------------------------------------------------------------------------

const propertyText = (v: unknown): string | null => (typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : null)

interface Resolved extends TimedRow {
  meter: MeterRules
  event: UsageEvent
}

const RESOLVED: Resolved[] = EVENTS.flatMap((event) =>
  resolveEvent(METERS, event).rows.map((row) => ({ meter: METERS.find((m) => m.id === row.meterId)!, event, at: event.timestamp.getTime(), eventId: event.id, value: row.value, groupValue: row.groupValue, uniqueValue: row.uniqueValue })),
)

type Oracle = Omit<BreakdownGroup, 'points'> & { points?: { start: string; eventCount: string; usage: string }[] }

function expected(q: PropertyBreakdownQuery): Oracle[] {
  const cal: CalendarOptions = { billingAnchor: q.billingAnchor, timeZone: q.timeZone }
  const start = q.start.getTime()
  const end = q.end.getTime()
  const groupBy = q.groupBy ?? []
  const props = groupBy.filter((k) => k.startsWith('properties.')).map((k) => k.slice('properties.'.length))
  const groups = new Map<string, Resolved[]>()
  for (const r of RESOLVED) {
    if (!q.meters.some((m) => m.meterId === r.meter.id) || r.at < start || r.at >= end) continue
    if (q.externalCustomerIds && !q.externalCustomerIds.includes(r.event.externalCustomerId)) continue
    if (q.sources && !q.sources.includes(r.event.source)) continue
    if (q.propertyFilters && Object.entries(q.propertyFilters).some(([k, vs]) => !vs.includes(propertyText(r.event.properties[k]) ?? '\u0000'))) continue
    const key = JSON.stringify([
      r.meter.id,
      groupBy.includes('source') ? r.event.source : null,
      groupBy.includes('external_customer_id') ? r.event.externalCustomerId : null,
      ...props.map((p) => propertyText(r.event.properties[p])),
    ])
    const list = groups.get(key)
    if (list) list.push(r)
    else groups.set(key, [r])
  }
  const out: (Oracle & { sortKey: string })[] = []
  for (const [key, rows] of groups) {
    const meter = rows[0].meter
    const rules = { type: meter.aggregation.type, multiplier: meter.aggregation.multiplier }
    const windows = queryWindows(q.start, q.end, q.windowSize, cal)
    const slices = slicesOf(windows, meter.aggregation.bucketSize, cal)
    const values = windowValues(rules, slices, aggregateRows(rows, slices, start), windows.length, start)
    const counts = windows.map((w) => rows.filter((r) => r.at >= w.start.getTime() && r.at < w.end.getTime()).length)
    let usage
    if (windows.length === 1) usage = values[0].value
    else if (isAdditive(rules.type)) usage = values.reduce((a, w) => a.plus(w.value), new U(0))
    else {
      const whole = slicesOf(queryWindows(q.start, q.end, undefined, cal), meter.aggregation.bucketSize, cal)
      usage = windowValues(rules, whole, aggregateRows(rows, whole, start), 1, start)[0].value
    }
    const [, source, customer, ...p] = JSON.parse(key) as (string | null)[]
    const g: Oracle & { sortKey: string } = { sortKey: key, meterId: meter.id, eventCount: String(rows.length), usage: usage.toFixed() }
    if (groupBy.includes('source')) g.source = source!
    if (groupBy.includes('external_customer_id')) g.externalCustomerId = customer!
    if (props.length > 0) g.properties = Object.fromEntries(props.map((name, i) => [name, p[i]]))
    if (q.windowSize) g.points = windows.map((w, i) => ({ start: w.start.toISOString(), eventCount: String(counts[i]), usage: values[i].value.toFixed() }))
    out.push(g)
  }
  return out.map(({ sortKey: _k, ...g }) => g)
}

const comparable = (groups: BreakdownGroup[]): Oracle[] =>
  groups.map(({ points, ...g }) => ({ ...g, ...(points ? { points: points.map((p) => ({ start: p.start.toISOString(), eventCount: p.eventCount, usage: p.usage })) } : {}) }))
const byKey = (groups: Oracle[]) => [...groups].sort((a, b) => (JSON.stringify([a.meterId, a.source, a.externalCustomerId, a.properties]) < JSON.stringify([b.meterId, b.source, b.externalCustomerId, b.properties]) ? -1 : 1))

type Read = (ch: ClickHouse, q: never) => Promise<BreakdownPage>

async function allPages(q: BreakdownQuery | PropertyBreakdownQuery, read: Read, limit = 1000): Promise<{ groups: BreakdownGroup[]; totals: number[] }> {
  const groups: BreakdownGroup[] = []
  const totals: number[] = []
  for (let offset = 0; ; offset += limit) {
    const page = await read(ch, { ...q, limit, offset } as never)
    totals.push(page.total)
    groups.push(...page.groups)
    if (page.groups.length < limit) return { groups, totals }
  }
}

// ---- the reads --------------------------------------------------------------------------------------------------

const at = (s: string) => new Date(s)
const SHAPES: { label: string; start: Date; end: Date; windowSize?: WindowSize; billingAnchor?: Date; timeZone?: string }[] = [
  { label: 'a range cut at the millisecond at both ends', start: at('2024-02-28T05:17:23.456Z'), end: at('2024-03-01T19:42:10.001Z') },
  { label: 'hours of a range cut at the second', start: at('2024-02-29T10:30:15.000Z'), end: at('2024-03-01T02:00:00.000Z'), windowSize: 'HOUR' },
  { label: 'UTC days', start: at('2024-02-28T00:00:00Z'), end: at('2024-03-02T00:00:00Z'), windowSize: 'DAY' },
  { label: 'Kolkata days (each cuts an hour)', start: at('2024-02-27T18:30:00Z'), end: at('2024-03-01T18:30:00Z'), windowSize: 'DAY', timeZone: 'Asia/Kolkata' },
  { label: 'minutes of two hours, cut at the second', start: at('2024-02-29T11:00:30Z'), end: at('2024-02-29T13:00:30Z'), windowSize: 'MINUTE' },
  { label: 'anchored months', start: at('2024-01-29T08:09:10.111Z'), end: at('2024-03-29T08:09:10.111Z'), windowSize: 'MONTH', billingAnchor: at('2024-01-29T08:09:10.111Z') },
]
const SCOPES: { label: string; externalCustomerIds?: string[] }[] = [{ label: 'the environment' }, { label: 'one customer', externalCustomerIds: ['c2'] }, { label: 'two customers', externalCustomerIds: ['c1', 'c4'] }]
const GROUPINGS: BreakdownQuery['groupBy'][] = [[], ['source'], ['external_customer_id'], ['source', 'external_customer_id']]

// Each read takes ~50-400 ms of chDB (twelve meters, two slicings, rollups and raw rows); a machine shared with
// other work needs more than the default minute for a test's dozen.
const SLOW = 300_000

describe('the breakdown rollups equal a recount of the events, every aggregation', () => {
  const cases = SHAPES.flatMap((shape) => SCOPES.map((s) => ({ ...shape, scopeLabel: s.label, externalCustomerIds: s.externalCustomerIds })))
  it.each(cases)('$label, $scopeLabel', async ({ label: _label, scopeLabel, ...shape }) => {
    for (const groupBy of GROUPINGS) {
      for (const sources of groupBy!.length === 1 ? [undefined, ['api'], ['', "it's"]] : [undefined, ['', "it's"]]) {
        const q: BreakdownQuery = { scope, meters: analyticsMeters(), ...shape, groupBy, sources }
        const { groups, totals } = await allPages(q, usageBreakdown)
        const context = `${scopeLabel}, by ${groupBy!.join('+') || 'meter'}, sources ${JSON.stringify(sources)}`
        expect(byKey(comparable(groups)), context).toEqual(byKey(expected(q)))
        expect(totals, context).toEqual([groups.length])
      }
    }
  }, SLOW)
})

describe('retries and rows from before the migration', () => {
  it('counts the retried batch once in every breakdown table, like meter_usage', async () => {
    const rs = await ch.client.query({
      query: `SELECT (SELECT toString(count()) FROM meter_usage WHERE tenant_id = {t:String}) AS raw,
                     (SELECT toString(sum(events)) FROM meter_usage_by_source_1h WHERE tenant_id = {t:String}) AS by_customer,
                     (SELECT toString(sum(events)) FROM meter_usage_by_source_env_1h WHERE tenant_id = {t:String}) AS env`,
      query_params: { t: scope.tenantId },
      format: 'JSONEachRow',
    })
    const n = String(RESOLVED.length)
    expect(await rs.json()).toEqual([{ raw: n, by_customer: n, env: n }])
  })
})

describe('property breakdowns from raw rows', () => {
  const range = { start: at('2024-02-28T05:17:23.456Z'), end: at('2024-03-01T19:42:10.001Z') }
  it.each<Partial<PropertyBreakdownQuery> & { label: string }>([
    { label: 'by model', groupBy: ['properties.model'] },
    { label: 'by model and flag (a boolean, often missing)', groupBy: ['properties.model', 'properties.flag'] },
    { label: 'by tier (a number) and source, users a and b only', groupBy: ['properties.tier', 'source'], propertyFilters: { user: ['u1', 'u2'] } },
    { label: 'by customer, gpt-4o only, per day', groupBy: ['external_customer_id'], propertyFilters: { model: ['gpt-4o'] }, windowSize: 'DAY' },
    { label: 'by model for one customer per hour, from sources api and none', groupBy: ['properties.model'], externalCustomerIds: ['c3'], sources: ['api', ''], windowSize: 'HOUR' },
  ])('$label', async ({ label: _l, ...shape }) => {
    const q: PropertyBreakdownQuery = { scope, meters: analyticsMeters(), ...range, ...shape }
    const { groups, totals } = await allPages(q, propertyBreakdown, 7)
    expect(byKey(comparable(groups))).toEqual(byKey(expected(q)))
    expect(new Set(totals)).toEqual(new Set([groups.length]))
  }, SLOW)

  it('refuses a grouping it does not know', async () => {
    await expect(usageBreakdown(ch, { scope, meters: analyticsMeters(), ...range, groupBy: ['properties.model' as 'source'] })).rejects.toThrow(RangeError)
    await expect(propertyBreakdown(ch, { scope, meters: analyticsMeters(), ...range, groupBy: ['meter'] })).rejects.toThrow(RangeError)
  })
})

describe('pages of groups', () => {
  it('returns every group once over pages of any size, in key order, with the same total', async () => {
    const q: BreakdownQuery = { scope, meters: analyticsMeters(['m_sum', 'm_latest', 'm_max_hourly']), start: at('2024-02-28T05:17:23.456Z'), end: at('2024-03-01T19:42:10.001Z'), windowSize: 'DAY', groupBy: ['source', 'external_customer_id'] }
    const all = (await usageBreakdown(ch, { ...q, limit: 1000 })).groups
    expect(all.length).toBe(3 * SOURCES.length * CUSTOMERS.length)
    const keys = all.map((g) => JSON.stringify([g.meterId, g.source, g.externalCustomerId]))
    expect(keys).toEqual([...keys].sort())
    for (const limit of [1, 7, 59, 60]) {
      const { groups, totals } = await allPages(q, usageBreakdown, limit)
      expect(groups).toEqual(all)
      expect(new Set(totals)).toEqual(new Set([all.length]))
    }
    const beyond = await usageBreakdown(ch, { ...q, offset: 1000 })
    expect(beyond).toEqual({ groups: [], total: all.length })
    const none = await usageBreakdown(ch, { ...q, externalCustomerIds: ['nobody'] })
    expect(none).toEqual({ groups: [], total: 0 })
  }, SLOW)

  it('pages the same when a rollup read has more rows than are ranked in memory (over 10,000: ranked in the statement)', async () => {
    const q: BreakdownQuery = { scope, meters: analyticsMeters(), start: at('2024-02-28T00:00:00Z'), end: at('2024-03-02T06:00:00Z'), windowSize: 'HOUR', groupBy: ['source', 'external_customer_id'] }
    const { groups, total } = await usageBreakdown(ch, { ...q, limit: 1000 })
    const rows = groups.reduce((n, g) => n + g.points!.filter((p) => p.eventCount !== '0').length, 0)
    expect(rows).toBeGreaterThan(10_000)
    expect(total).toBe(groups.length)
    // One meter alone has few rows (ranked in memory): the same groups as the many-row read's for it.
    const alone = await usageBreakdown(ch, { ...q, meters: analyticsMeters(['m_sum']), limit: 1000 })
    expect(alone.groups.length).toBeGreaterThan(0)
    expect(groups.filter((g) => g.meterId === 'm_sum')).toEqual(alone.groups)
    expect(await usageBreakdown(ch, { ...q, limit: 59, offset: 59 })).toEqual({ groups: groups.slice(59, 118), total })
  }, SLOW)

  it('refuses a limit outside 1..1000 and a negative offset', async () => {
    const q: BreakdownQuery = { scope, meters: analyticsMeters(['m_sum']), start: at('2024-02-28T00:00:00Z'), end: at('2024-03-01T00:00:00Z') }
    for (const bad of [{ limit: 0 }, { limit: 1001 }, { limit: 1.5 }, { offset: -1 }]) await expect(usageBreakdown(ch, { ...q, ...bad })).rejects.toThrow(RangeError)
    await expect(usageBreakdown(ch, { ...q, end: q.start })).rejects.toThrow(RangeError)
  })
})

describe('streams for exports', () => {
  it('streams one row per group and window with events, equal to the pages', async () => {
    const q: PropertyBreakdownQuery = { scope, meters: analyticsMeters(), start: at('2024-02-28T05:17:23.456Z'), end: at('2024-03-01T19:42:10.001Z'), windowSize: 'HOUR', timeZone: 'Asia/Kolkata', groupBy: ['external_customer_id', 'source'] }
    const rows = []
    for await (const r of streamBreakdown(ch, q)) rows.push(r)
    const fromPages = (await allPages(q, usageBreakdown)).groups.flatMap((g) =>
      g.points!.filter((p) => p.eventCount !== '0').map((p) => ({ meterId: g.meterId, source: g.source, externalCustomerId: g.externalCustomerId, ...p })),
    )
    expect(rows.length).toBe(fromPages.length)
    expect(rows).toEqual(fromPages)
  }, SLOW)

  it('streams whole-range rows grouped by a property', async () => {
    const q: PropertyBreakdownQuery = { scope, meters: analyticsMeters(['m_unique', 'm_avg']), start: at('2024-02-28T00:00:00Z'), end: at('2024-03-02T06:00:00Z'), groupBy: ['properties.model'] }
    const rows = []
    for await (const r of streamBreakdown(ch, q)) rows.push({ meterId: r.meterId, properties: r.properties, eventCount: r.eventCount, usage: r.usage, start: r.start.toISOString() })
    expect(rows).toEqual(byKey(expected(q)).map((g) => ({ ...g, start: q.start.toISOString() })))
  })

  it('streams every stored event of a range once, with its properties as JSON', async () => {
    const start = at('2024-02-29T00:00:00Z')
    const end = at('2024-03-01T00:00:00Z')
    const seen = new Map<string, { props: unknown; source: string; at: number }>()
    for await (const e of streamEvents(ch, { scope, start, end })) {
      expect(seen.has(e.id)).toBe(false)
      seen.set(e.id, { props: JSON.parse(e.properties), source: e.source, at: e.timestamp.getTime() })
    }
    const want = EVENTS.filter((e) => e.timestamp >= start && e.timestamp < end)
    expect(seen.size).toBe(want.length)
    for (const e of want) expect(seen.get(e.id)).toEqual({ props: e.properties, source: e.source, at: e.timestamp.getTime() })
    let c2 = 0
    for await (const e of streamEvents(ch, { scope, start, end, externalCustomerIds: ['c2'], sources: ['sdk'], eventNames: [NAME] })) {
      expect([e.external_customer_id, e.source]).toEqual(['c2', 'sdk'])
      c2++
    }
    expect(c2).toBe(want.filter((e) => e.externalCustomerId === 'c2' && e.source === 'sdk' && e.eventName === NAME).length)
  })

  it('stops on abort', async () => {
    const abort = new AbortController()
    let n = 0
    const reading = (async () => {
      for await (const _e of streamEvents(ch, { scope, start: new Date(FROM), end: new Date(TO) }, { signal: abort.signal })) if (++n === 10) abort.abort()
    })()
    await expect(reading).rejects.toMatchObject({ name: 'AbortError' })
    expect(n).toBe(10)
    const again = new AbortController()
    let m = 0
    const grouped = (async () => {
      for await (const _r of streamBreakdown(ch, { scope, meters: analyticsMeters(), start: new Date(FROM), end: new Date(TO), windowSize: 'HOUR' }, { signal: again.signal })) if (++m === 3) again.abort()
    })()
    await expect(grouped).rejects.toMatchObject({ name: 'AbortError' })
    expect(m).toBe(3)
  })
})
