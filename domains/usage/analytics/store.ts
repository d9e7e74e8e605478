// ClickHouse reads of usage analytics (docs/analytics.md): usage and event counts of meters grouped by source, by
// customer and by window, for one customer, some, or the whole environment; the same grouped by event properties from
// raw rows; and streams of those groups and of raw events for CSV exports. Over 400 lines: the pages and the
// streams share one statement builder, which keeps their numbers equal.
//
// Exact like the usage-by-meter query: window and bucket boundaries come from core/periods (slices), each source of
// rows reads whole units no boundary cuts (core/analytics/sources), raw rows take the rest, and values are computed
// from merged states per slice by core/usage, per the meter's aggregation. Which tables:
//   - the whole environment, not by customer: meter_usage_by_source_env_1h (no customer column) + raw rows;
//   - customers given or grouped, by or filtered on source: meter_usage_by_source_1h + raw rows;
//   - customers given or grouped, source not involved: meter_usage_1d/_1h/_1m + raw rows (days and minutes there);
//   - properties grouped or filtered, or `read: 'raw'` (reconciliation): raw rows only.
// Raw rows are meter_usage's (the value) joined to events (the source and properties) by customer and id when a
// source or property is needed.
import type { ClickHouse } from '../../../infra/clickhouse.ts'
import { chDateTime, LONG_QUERY, sqlString, sqlStringArray } from '../../../infra/ch-literals.ts'
import { sliceSql } from '../../../infra/ch-slices.ts'
import { neutralizedSql } from '../../../infra/ch-csv.ts'
import { planSources, type PlannedSource, type Range } from '../../../core/analytics/sources.ts'
import type { MeterRules } from '../../../core/meters.ts'
import type { WindowSize } from '../../../core/periods.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Decimal } from '../../../core/money.ts'
import { DAY, HOUR, MINUTE, isAdditive, measuresOf, queryWindows, sliceValue, slicesOf, U, windowValues, type Measure, type Slice, type SliceAggregate } from '../../../core/usage.ts'
import { NOT_CANCELLED } from '../corrections/store.ts'

/** A meter as analytics reads it. */
export interface AnalyticsMeter {
  meterId: string
  /** The revision to read: the meter's ready revision. */
  revision: number
  /** The meter's event name: raw reads find its events' source and properties by it. */
  eventName: string
  aggregation: Pick<MeterRules['aggregation'], 'type' | 'multiplier' | 'bucketSize'>
}

type BreakdownKey = 'source' | 'external_customer_id'

export interface BreakdownQuery {
  scope: Scope
  meters: AnalyticsMeter[]
  /** Only these customers (external ids); absent: the whole environment. */
  externalCustomerIds?: string[]
  /** Only events of these sources ('' for events sent without one). */
  sources?: string[]
  start: Date
  end: Date
  /** Each group's usage per window of this size (points); absent: the range as a whole. */
  windowSize?: WindowSize
  /** MONTH windows from this instant's day and time of day (core/periods). */
  billingAnchor?: Date
  /** IANA zone of DAY, WEEK and MONTH windows; default UTC. */
  timeZone?: string
  /** Groups besides the meter (always a group). */
  groupBy?: BreakdownKey[]
  /** 'raw' ignores the rollups and recounts raw rows (reconciliation); default 'views'. */
  read?: 'views' | 'raw'
  /** Groups per page: default 50, at most 1000. */
  limit?: number
  offset?: number
}

export interface PropertyBreakdownQuery extends Omit<BreakdownQuery, 'groupBy'> {
  /** Only events whose property's text (strings as they are, numbers and booleans as JSON writes them) is one of the values. */
  propertyFilters?: Record<string, string[]>
  /** Any of 'source', 'external_customer_id' and 'properties.<name>'. */
  groupBy?: string[]
}

interface BreakdownPoint {
  /** The aligned start of the window (may precede the range); [start, end) is its part in the range. */
  windowStart: Date
  start: Date
  end: Date
  eventCount: string
  usage: string
}

export interface BreakdownGroup {
  meterId: string
  /** Grouped by source: the events' source ('' when sent without one). */
  source?: string
  /** Grouped by customer. */
  externalCustomerId?: string
  /** Grouped by properties: each property's text, null where the event has no such string, number or boolean. */
  properties?: Record<string, string | null>
  /** Events the meter counted (a value meter does not count an event without its property). */
  eventCount: string
  /** The meter's aggregation over the range: exact decimal text (AVG and WEIGHTED_SUM to 12 places). */
  usage: string
  /** With a window size: every window of the range in order, those without events at 0. */
  points?: BreakdownPoint[]
}

export interface BreakdownPage {
  /** In order of meter id, then source, customer and properties. */
  groups: BreakdownGroup[]
  /** Groups in all pages. */
  total: number
}

/** One exported line: a group's usage in one window (or the range), only where it has events. */
export interface BreakdownRow {
  meterId: string
  source?: string
  externalCustomerId?: string
  properties?: Record<string, string | null>
  windowStart: Date
  start: Date
  end: Date
  eventCount: string
  usage: string
}

export interface EventExportQuery {
  scope: Scope
  start: Date
  end: Date
  externalCustomerIds?: string[]
  eventNames?: string[]
  sources?: string[]
}

/** A stored event as exported: its properties as their JSON text. */
export interface ExportedEvent {
  id: string
  external_customer_id: string
  customer_id: string
  event_name: string
  source: string
  timestamp: Date
  received_at: Date
  properties: string
}

const DEFAULT_LIMIT = 50
const MAX_LIMIT = 1000

// ---- what a query reads -------------------------------------------------------------------------------------

interface Rollup {
  table: string
  time: string
  unit: number
  /** Has external_customer_id; has source. */
  customer: boolean
  source: boolean
  /** Its `latest` state is keyed by (timestamp, event_id) as a tuple (0001-0003) or as one string (0005). */
  latestKey: 'tuple' | 'string'
}

const ENV_BY_SOURCE: readonly Rollup[] = [{ table: 'meter_usage_by_source_env_1h', time: 'hour', unit: HOUR, customer: false, source: true, latestKey: 'string' }]
const BY_SOURCE: readonly Rollup[] = [{ table: 'meter_usage_by_source_1h', time: 'hour', unit: HOUR, customer: true, source: true, latestKey: 'string' }]
const PLAIN: readonly Rollup[] = [
  { table: 'meter_usage_1d', time: 'day', unit: DAY, customer: true, source: false, latestKey: 'tuple' },
  { table: 'meter_usage_1h', time: 'hour', unit: HOUR, customer: true, source: false, latestKey: 'tuple' },
  { table: 'meter_usage_1m', time: 'minute', unit: MINUTE, customer: true, source: false, latestKey: 'tuple' },
]

/** The latest row's key as one string that sorts as (timestamp, event_id): 8 big-endian bytes of milliseconds, then the id. */
const LATEST_STRING_KEY = (ts: string, id: string) => `concat(reverse(reinterpretAsFixedString(toUInt64(toUnixTimestamp64Milli(${ts})))), ${id})`

interface Grouping {
  source: boolean
  customer: boolean
  /** Property names grouped by, in order. */
  properties: string[]
}

/** A statement's plan: the rollups (none: raw rows only), and whether raw rows need their events (source, properties). */
interface Layout {
  rollups: readonly Rollup[]
  joinEvents: boolean
  latestKey: 'tuple' | 'string'
  customers: number
}

function layoutOf(q: PropertyBreakdownQuery, g: Grouping): Layout {
  const filters = q.propertyFilters !== undefined && Object.keys(q.propertyFilters).length > 0
  const needSource = g.source || q.sources !== undefined
  const perCustomer = g.customer || q.externalCustomerIds !== undefined
  if (g.properties.length > 0 || filters || q.read === 'raw') return { rollups: [], joinEvents: needSource || g.properties.length > 0 || filters, latestKey: 'string', customers: Infinity }
  if (!perCustomer) return { rollups: ENV_BY_SOURCE, joinEvents: needSource, latestKey: 'string', customers: Infinity }
  const customers = q.externalCustomerIds?.length ?? Infinity
  if (needSource) return { rollups: BY_SOURCE, joinEvents: true, latestKey: 'string', customers }
  return { rollups: PLAIN, joinEvents: false, latestKey: 'tuple', customers }
}

// Each measure as read from a rollup (by its time column), as computed from raw rows (`m.`), and as merged per slice.
const MEASURE_SQL: Record<Measure, { view: (time: string) => string; raw: (latestKey: Layout['latestKey']) => string; merge: string }> = {
  // Cancel rows (sign -1, sql/clickhouse/0010) take back their originals' additive measures; the others ignore them.
  events: { view: () => 'toUInt64(events)', raw: () => 'toUInt64(sum(m.sign))', merge: 'sum' },
  sum: { view: () => 'toDecimal128(value_sum, 12)', raw: () => 'sum(m.value * m.sign)', merge: 'sum' },
  min: { view: () => 'toDecimal128(value_min, 12)', raw: () => 'min(m.value)', merge: 'min' },
  max: { view: () => 'toDecimal128(value_max, 12)', raw: () => 'max(m.value)', merge: 'max' },
  valueMs: {
    view: (time) => `toDecimal256(value_sum, 12) * (toUnixTimestamp64Milli(${time}) - {base:Int64}) + value_ms_sum`,
    raw: () => 'sum(toDecimal256(m.value, 12) * m.sign * (toUnixTimestamp64Milli(m.timestamp) - {base:Int64}))',
    merge: 'sum',
  },
  uniques: { view: () => 'uniques', raw: () => 'uniqExactState(m.unique_value)', merge: 'uniqExactMerge' },
  latest: {
    view: () => 'latest',
    raw: (key) => (key === 'tuple' ? 'argMaxState(m.value, (m.timestamp, m.event_id))' : `argMaxState(m.value, ${LATEST_STRING_KEY('m.timestamp', 'm.event_id')})`),
    merge: 'argMaxMerge',
  },
}
const MEASURES: readonly Measure[] = ['events', 'sum', 'min', 'max', 'valueMs', 'uniques', 'latest']

/** Settings of every statement (api usage store: no expression compilation, no projection analysis). */
const STATEMENT_SETTINGS = 'compile_expressions = 0, compile_aggregate_expressions = 0, optimize_use_projections = 0, optimize_use_implicit_projections = 0'
const DEFAULT_MAX_QUERY_BYTES = 256_000
/** Up to this many ranges, a source's rows are selected by the ranges themselves; beyond, by units. */
const PLAIN_RANGES = 4

/** One read of the statement: meters sharing a slicing (bucket size), over the windows or over the whole range. */
interface Part {
  index: number
  kind: 'windows' | 'whole'
  meters: AnalyticsMeter[]
  windows: { windowStart: Date; start: Date; end: Date }[]
  slices: Slice[]
  measures: Measure[]
}

/** `col` in one of the ranges, the bounds bound as parameters (the primary key uses them). */
function anyRange(col: string, ranges: readonly Range[], name: string, params: Record<string, unknown>): string {
  return `(${ranges
    .map(([from, to], i) => {
      params[`${name}${i}a`] = chDateTime(new Date(from))
      params[`${name}${i}b`] = chDateTime(new Date(to))
      return `(${col} >= {${name}${i}a:DateTime64(3, 'UTC')} AND ${col} < {${name}${i}b:DateTime64(3, 'UTC')})`
    })
    .join(' OR ')})`
}

/** A source's rows by time: its few ranges, or the overall bounds, the units within and not the units cut. */
function timeWhere(source: PlannedSource, col: string, name: string, params: Record<string, unknown>): string {
  const { ranges, within, cut } = source
  if (ranges.length <= PLAIN_RANGES) return anyRange(col, ranges, name, params)
  let sql = anyRange(col, [[ranges[0][0], ranges[ranges.length - 1][1]]], `${name}all`, params)
  if (within) sql += ` AND ${anyRange(col, within.starts.map((u) => [u.getTime(), u.getTime() + within.unit]), `${name}w`, params)}`
  if (cut && cut.starts.length > 0) {
    params[`${name}cut`] = cut.starts.map(chDateTime)
    sql += ` AND ${col} NOT IN {${name}cut:Array(DateTime64(3, 'UTC'))}`
  }
  return sql
}

const metersIn = (meters: readonly AnalyticsMeter[], prefix = ''): string =>
  meters.length === 1
    ? `${prefix}meter_id = ${sqlString(meters[0].meterId)} AND ${prefix}revision = ${meters[0].revision}`
    : `(${prefix}meter_id, ${prefix}revision) IN (${meters.map((m) => `(${sqlString(m.meterId)}, ${m.revision})`).join(', ')})`

// A property as meter filters compare it, and as grouped: strings as they are, numbers and booleans as JSON writes them.
const propertyText = (key: string) =>
  `if(JSONType(properties, ${key}) = 'String', JSONExtractString(properties, ${key}), JSONExtractRaw(properties, ${key}))`
const propertyGroup = (key: string) =>
  `multiIf(JSONType(properties, ${key}) = 'String', JSONExtractString(properties, ${key}), JSONType(properties, ${key}) IN ('Int64', 'UInt64', 'Double', 'Bool'), JSONExtractRaw(properties, ${key}), NULL)`

interface Statement {
  q: PropertyBreakdownQuery
  grouping: Grouping
  layout: Layout
  params: Record<string, unknown>
  /** Key columns of every part's rows, in order (meter_id first). */
  keys: string[]
}

const SCOPE_WHERE = 'tenant_id = {tenant:String} AND environment_id = {env:String}'
const customerIn = (q: PropertyBreakdownQuery, col: string) => {
  const customers = q.externalCustomerIds
  return customers ? (customers.length === 1 ? ` AND ${col} = ${sqlString(customers[0])}` : ` AND ${col} IN ${sqlStringArray(customers)}`) : ''
}
const sourceIn = (q: PropertyBreakdownQuery, col: string) => (q.sources ? ` AND ${col} IN ${sqlStringArray(q.sources)}` : '')

/** A rollup source of a part: its table, its group key columns (as the statement names them) and its WHERE conditions. */
function rollupOf(st: Statement, part: Part, source: PlannedSource, i: number): { r: Rollup; keys: string[]; where: string } {
  const { q, grouping, layout, params } = st
  const r = layout.rollups[source.rollup!]
  const keys = ['meter_id', ...(grouping.source ? ['source'] : []), ...(grouping.customer ? ['external_customer_id AS customer'] : [])]
  const where = `${SCOPE_WHERE} AND ${metersIn(part.meters)}${r.customer ? customerIn(q, 'external_customer_id') : ''}${r.source ? sourceIn(q, 'source') : ''}
        AND ${timeWhere(source, r.time, `p${part.index}s${i}_`, params)}`
  return { r, keys, where }
}

/** The rows of one source of a part: `SELECT 1 AS k, <time> AS t, keys…, measures…`. */
function sourceSql(st: Statement, part: Part, source: PlannedSource, i: number): string {
  const { q, grouping, layout, params } = st
  const name = `p${part.index}s${i}_`
  if (source.rollup !== undefined) {
    const { r, keys, where } = rollupOf(st, part, source, i)
    return `SELECT 1 AS k, ${r.time} AS t, ${keys.join(', ')}, group_value, ${part.measures.map((m) => `${MEASURE_SQL[m].view(r.time)} AS ${m}`).join(', ')}
      FROM ${r.table}
      WHERE ${where}`
  }
  const keys = [
    'm.meter_id AS meter_id',
    ...(grouping.source ? ['e.source AS source'] : []),
    ...(grouping.customer ? ['m.external_customer_id AS customer'] : []),
    ...grouping.properties.map((_, k) => `e.p${k} AS p${k}`),
    'm.group_value AS group_value',
  ]
  const groupBy = ['t', 'meter_id', ...(grouping.source ? ['source'] : []), ...(grouping.customer ? ['customer'] : []), ...grouping.properties.map((_, k) => `p${k}`), 'group_value']
  let join = ''
  if (layout.joinEvents) {
    params[`p${part.index}_names`] = [...new Set(part.meters.map((m) => m.eventName))]
    const extracted = grouping.properties.map((_, k) => `, ${propertyGroup(`{pk${k}:String}`)} AS p${k}`).join('')
    const filters = Object.keys(q.propertyFilters ?? {})
      .map((_, k) => ` AND ${propertyText(`{fk${k}:String}`)} IN {fv${k}:Array(String)}`)
      .join('')
    join = `INNER JOIN (
        SELECT external_customer_id, id, source${extracted} FROM events
        WHERE ${SCOPE_WHERE} AND event_name IN {p${part.index}_names:Array(String)}${customerIn(q, 'external_customer_id')}${sourceIn(q, 'source')}${filters}
          AND ${timeWhere(source, 'timestamp', name, params)}
      ) AS e ON m.external_customer_id = e.external_customer_id AND m.event_id = e.id`
  }
  return `SELECT 1 AS k, m.timestamp AS t, ${keys.join(', ')}, ${part.measures.map((x) => `${MEASURE_SQL[x].raw(layout.latestKey)} AS ${x}`).join(', ')}
      FROM meter_usage AS m ${join}
      WHERE m.${SCOPE_WHERE.replace(' AND ', ' AND m.')} AND ${metersIn(part.meters, 'm.')}${customerIn(q, 'm.external_customer_id')}
        AND ${timeWhere(source, 'm.timestamp', name, params)}
      GROUP BY ${groupBy.join(', ')}`
}

/**
 * One part's aggregates: `SELECT part, slice, keys…, group_value, measures… (as text)`, one row per (slice, group
 * key, group_value). Measures the part's meters do not need are ''.
 */
function partSql(st: Statement, part: Part): string {
  const sources: PlannedSource[] =
    st.layout.rollups.length === 0
      ? [{ ranges: [[part.slices[0].start.getTime(), part.slices[part.slices.length - 1].end.getTime()]] }]
      : planSources(part.slices, st.layout.rollups.map((r) => r.unit), st.layout.customers)
  const starts = part.slices.map((s) => s.start)
  const slicing = sliceSql(starts, part.slices[part.slices.length - 1].end)
  const groupBy = `GROUP BY slice, ${st.keys.join(', ')}, group_value`
  // One rollup, slices by arithmetic (a month by day over whole hours, mostly): merged in one level. A subquery of
  // its rows grouped again cost ~4 of a 20 ms month-by-day read of one customer on chDB.
  if (sources.length === 1 && sources[0].rollup !== undefined && slicing.join === '') {
    const { r, keys, where } = rollupOf(st, part, sources[0], 0)
    const measures = MEASURES.map((m) => (part.measures.includes(m) ? `toString(${MEASURE_SQL[m].merge}(${MEASURE_SQL[m].view(r.time)})) AS ${m}` : `'' AS ${m}`))
    return `SELECT toUInt32(${part.index}) AS part, ${slicing.of(r.time)} AS slice, ${keys.join(', ')}, group_value, ${measures.join(', ')}
    FROM ${r.table}
    WHERE ${where}
    ${groupBy}`
  }
  const keys = st.keys.map((k) => `u.${k} AS ${k}`)
  const measures = MEASURES.map((m) => (part.measures.includes(m) ? `toString(${MEASURE_SQL[m].merge}(u.${m})) AS ${m}` : `'' AS ${m}`))
  return `SELECT toUInt32(${part.index}) AS part, ${slicing.of('u.t')} AS slice, ${keys.join(', ')}, u.group_value AS group_value, ${measures.join(', ')}
    FROM (${sources.map((s, i) => sourceSql(st, part, s, i)).join('\n UNION ALL \n')}) AS u ${slicing.join}
    ${groupBy}`
}

const validRange = (q: { start: Date; end: Date }) => {
  if (!(q.start instanceof Date) || Number.isNaN(q.start.getTime()) || !(q.end instanceof Date) || Number.isNaN(q.end.getTime())) throw new RangeError('start and end must be valid dates')
  if (q.end <= q.start) throw new RangeError('end must be after start')
}

function groupingOf(groupBy: readonly string[] | undefined, allowProperties: boolean): Grouping {
  const g: Grouping = { source: false, customer: false, properties: [] }
  for (const key of groupBy ?? []) {
    if (key === 'source') g.source = true
    else if (key === 'external_customer_id') g.customer = true
    else if (allowProperties && key.startsWith('properties.') && key.length > 'properties.'.length) {
      const name = key.slice('properties.'.length)
      if (!g.properties.includes(name)) g.properties.push(name)
    } else throw new RangeError(`cannot group by ${JSON.stringify(key)}`)
  }
  return g
}

/** The statement's parts: per bucket size, the windows' slices, and the whole range for aggregations whose windows do not add up. */
function partsOf(q: PropertyBreakdownQuery, withWhole: boolean): Part[] {
  const cal = { billingAnchor: q.billingAnchor, timeZone: q.timeZone }
  const windows = queryWindows(q.start, q.end, q.windowSize, cal)
  const whole = queryWindows(q.start, q.end, undefined, cal)
  const byBucket = new Map<string, AnalyticsMeter[]>()
  for (const m of q.meters) {
    const bucket = m.aggregation.bucketSize ?? ''
    byBucket.set(bucket, [...(byBucket.get(bucket) ?? []), m])
  }
  const parts: Part[] = []
  const measuresFor = (meters: AnalyticsMeter[]) => MEASURES.filter((x) => x === 'events' || meters.some((m) => measuresOf(m.aggregation.type).includes(x)))
  for (const [bucket, meters] of byBucket) {
    const bucketSize = (bucket || undefined) as WindowSize | undefined
    parts.push({ index: parts.length, kind: 'windows', meters, windows, slices: slicesOf(windows, bucketSize, cal), measures: measuresFor(meters) })
    const separate = meters.filter((m) => !isAdditive(m.aggregation.type))
    if (withWhole && windows.length > 1 && separate.length > 0) {
      parts.push({ index: parts.length, kind: 'whole', meters: separate, windows: whole, slices: slicesOf(whole, bucketSize, cal), measures: measuresFor(separate) })
    }
  }
  return parts
}

function statementOf(q: PropertyBreakdownQuery, grouping: Grouping): Statement {
  validRange(q)
  if (q.meters.length === 0) throw new RangeError('at least one meter is needed')
  const params: Record<string, unknown> = { tenant: q.scope.tenantId, env: q.scope.environmentId, base: q.start.getTime() }
  grouping.properties.forEach((name, k) => (params[`pk${k}`] = name))
  Object.entries(q.propertyFilters ?? {}).forEach(([key, values], k) => {
    params[`fk${k}`] = key
    params[`fv${k}`] = values
  })
  const keys = ['meter_id', ...(grouping.source ? ['source'] : []), ...(grouping.customer ? ['customer'] : []), ...grouping.properties.map((_, k) => `p${k}`)]
  return { q, grouping, layout: layoutOf(q, grouping), params, keys }
}

const finish = (sql: string) => `${sql} SETTINGS ${STATEMENT_SETTINGS}`
const longQuery = (sql: string) => (Buffer.byteLength(sql) < DEFAULT_MAX_QUERY_BYTES ? undefined : LONG_QUERY)

// ---- rows back to values ------------------------------------------------------------------------------------

type Row = { part: number; slice: number; group_value: string; meter_id: string; source?: string; customer?: string } & Record<Measure, string> & Record<string, unknown>

const ZERO = new U(0)
const aggregateOf = (r: Row): SliceAggregate => {
  const n = (v: string) => (v === '' || v === undefined ? ZERO : new U(v))
  return { slice: r.slice, group: r.group_value, events: n(r.events), sum: n(r.sum), min: n(r.min), max: n(r.max), valueMs: n(r.valueMs), uniques: n(r.uniques), latest: n(r.latest) }
}

const keyOf = (st: Statement, r: Row): string => JSON.stringify(st.keys.map((k) => r[k] ?? null))

function groupFields(st: Statement, r: Row): Pick<BreakdownGroup, 'meterId' | 'source' | 'externalCustomerId' | 'properties'> {
  const g: Pick<BreakdownGroup, 'meterId' | 'source' | 'externalCustomerId' | 'properties'> = { meterId: r.meter_id }
  if (st.grouping.source) g.source = r.source
  if (st.grouping.customer) g.externalCustomerId = r.customer
  if (st.grouping.properties.length > 0) g.properties = Object.fromEntries(st.grouping.properties.map((name, k) => [name, (r[`p${k}`] as string | null) ?? null]))
  return g
}

const rulesOf = (m: AnalyticsMeter) => ({ type: m.aggregation.type, multiplier: m.aggregation.multiplier })

/** Events per window of a part's aggregates. */
function windowEvents(part: Part, aggregates: readonly SliceAggregate[]): Decimal[] {
  const out = part.windows.map(() => new U(0))
  for (const a of aggregates) out[part.slices[a.slice].window] = out[part.slices[a.slice].window].plus(a.events)
  return out
}

/** A group's values from its rows in each part. */
function groupOf(st: Statement, parts: readonly Part[], meter: AnalyticsMeter, rows: readonly Row[]): BreakdownGroup {
  const base = st.q.start.getTime()
  const byPart = new Map<number, SliceAggregate[]>()
  for (const r of rows) {
    const list = byPart.get(r.part)
    if (list) list.push(aggregateOf(r))
    else byPart.set(r.part, [aggregateOf(r)])
  }
  const win = parts.find((p) => p.kind === 'windows' && p.meters.includes(meter))!
  const whole = parts.find((p) => p.kind === 'whole' && p.meters.includes(meter))
  const aggregates = byPart.get(win.index) ?? []
  const values = windowValues(rulesOf(meter), win.slices, aggregates, win.windows.length, base)
  const events = windowEvents(win, aggregates)
  const eventCount = events.reduce((a, b) => a.plus(b), new U(0))
  let usage: Decimal
  if (whole) usage = windowValues(rulesOf(meter), whole.slices, byPart.get(whole.index) ?? [], 1, base)[0].value
  else if (win.windows.length === 1) usage = values[0].value
  else usage = values.reduce((a, w) => a.plus(w.value), new U(0))
  const group: BreakdownGroup = { ...groupFields(st, rows[0]), eventCount: eventCount.toFixed(), usage: usage.toFixed() }
  if (st.q.windowSize) group.points = win.windows.map((w, i) => ({ ...w, eventCount: events[i].toFixed(), usage: values[i].value.toFixed() }))
  return group
}

// ---- reads --------------------------------------------------------------------------------------------------

type RankedRow = Row & { g: string | number; group_count: string | number }

/** Rows of a rollup read, up to this many, are ranked into groups here; more, by window functions in the statement. */
const FEW_ROWS = 10_000

/**
 * Every row of a rollup read with few rows (tens of groups by windows, as they mostly are), in key order and ranked
 * here: the window functions of rankedRows cost ~2.6 ms of a 9 ms month-by-day read on chDB. Undefined when there are
 * more: the rollup rows are then aggregated again there, cheap next to a raw read (which goes there directly).
 */
async function fewRows(ch: ClickHouse, st: Statement, parts: readonly string[]): Promise<RankedRow[] | undefined> {
  // One part is ordered as it is: a SELECT of it costs ~1.5 ms more on chDB.
  const rowsOf = parts.length === 1 ? parts[0] : `SELECT * FROM (${parts.join('\n UNION ALL \n')})`
  const sql = finish(`${rowsOf} ORDER BY ${st.keys.join(', ')} LIMIT ${FEW_ROWS + 1}`)
  const rows = await (await ch.client.query({ query: sql, query_params: st.params, format: 'JSONEachRow', clickhouse_settings: longQuery(sql) })).json<Row>()
  if (rows.length > FEW_ROWS) return undefined
  let g = 0
  let last: string | undefined
  const ranked = rows.map((r) => {
    const key = keyOf(st, r)
    if (key !== last) g++
    last = key
    return { ...r, g, group_count: 0 }
  })
  for (const r of ranked) r.group_count = g
  return ranked
}

/** Whether a statement reads rollups mostly: no slice shorter than their finest unit but the range's two cut ends. */
function fromRollups(st: Statement, parts: readonly Part[]): boolean {
  if (st.layout.rollups.length === 0) return false
  const unit = Math.min(...st.layout.rollups.map((r) => r.unit))
  return parts.every((p) => p.slices.filter((x) => x.end.getTime() - x.start.getTime() < unit).length <= 2)
}

/** The page's rows ranked by their groups' keys in the statement, and the last group's, which carries the count. */
async function rankedRows(ch: ClickHouse, st: Statement, union: string, offset: number, limit: number): Promise<RankedRow[]> {
  st.params.first = offset
  st.params.last = offset + limit
  const sql = finish(`SELECT * FROM (
      SELECT *, max(g) OVER () AS group_count FROM (
        SELECT *, dense_rank() OVER (ORDER BY ${st.keys.join(', ')}) AS g FROM (${union})
      )
    ) WHERE (g > {first:UInt64} AND g <= {last:UInt64}) OR g = group_count`)
  const rs = await ch.client.query({ query: sql, query_params: st.params, format: 'JSONEachRow', clickhouse_settings: longQuery(sql) })
  return rs.json<RankedRow>()
}

async function page(ch: ClickHouse, q: PropertyBreakdownQuery, grouping: Grouping): Promise<BreakdownPage> {
  const limit = q.limit ?? DEFAULT_LIMIT
  const offset = q.offset ?? 0
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new RangeError(`limit must be an integer from 1 to ${MAX_LIMIT}`)
  if (!Number.isInteger(offset) || offset < 0) throw new RangeError('offset must be a non-negative integer')
  const st = statementOf(q, grouping)
  const parts = partsOf(q, true)
  const sqls = parts.map((p) => partSql(st, p))
  const rows = (fromRollups(st, parts) ? await fewRows(ch, st, sqls) : undefined) ?? (await rankedRows(ch, st, sqls.join('\n UNION ALL \n'), offset, limit))
  const total = rows.length === 0 ? 0 : Number(rows[0].group_count)
  const byGroup = new Map<string, { g: number; rows: Row[] }>()
  for (const r of rows) {
    const g = Number(r.g)
    if (g <= offset || g > offset + limit) continue
    const key = keyOf(st, r)
    const entry = byGroup.get(key)
    if (entry) entry.rows.push(r)
    else byGroup.set(key, { g, rows: [r] })
  }
  const meters = new Map(q.meters.map((m) => [m.meterId, m]))
  const groups = [...byGroup.values()].sort((a, b) => a.g - b.g).map(({ rows: rs_ }) => groupOf(st, parts, meters.get(rs_[0].meter_id)!, rs_))
  return { groups, total }
}

/**
 * Usage and event counts of `meters` grouped by meter and by any of source and customer, one page of groups, with
 * points per window when `windowSize` is given. Reads the breakdown rollups and raw rows (see the file's head).
 */
export function usageBreakdown(ch: ClickHouse, q: BreakdownQuery): Promise<BreakdownPage> {
  return Promise.resolve().then(() => page(ch, q, groupingOf(q.groupBy, false)))
}

/**
 * The same, also grouped by event properties (`properties.<name>`) and filtered on them (`propertyFilters`), from raw
 * rows: meter_usage joined to events over the range. Its cost grows with the range's events, not with groups.
 */
export function propertyBreakdown(ch: ClickHouse, q: PropertyBreakdownQuery): Promise<BreakdownPage> {
  return Promise.resolve().then(() => page(ch, q, groupingOf(q.groupBy, true)))
}

/**
 * Every group's usage per window (or over the range), one row per group and window with events, in group order, as
 * ClickHouse produces them (ClickHouse.streamRows): an export never holds more than one group's rows. Aborting
 * `signal` or leaving the loop stops the query. `customerFirst` orders by meter and customer before source and properties.
 */
export async function* streamBreakdown(ch: ClickHouse, q: PropertyBreakdownQuery, options: { signal?: AbortSignal; customerFirst?: boolean } = {}): AsyncGenerator<BreakdownRow> {
  const grouping = groupingOf(q.groupBy, true)
  const st = statementOf(q, grouping)
  const parts = partsOf(q, false)
  // customerFirst: a customer's rows of a meter come together (an export splits the customer's cost over them).
  const order = options.customerFirst && grouping.customer ? ['meter_id', 'customer', ...st.keys.filter((k) => k !== 'meter_id' && k !== 'customer')] : st.keys
  const sql = finish(`SELECT * FROM (${parts.map((p) => partSql(st, p)).join('\n UNION ALL \n')}) ORDER BY ${order.join(', ')}, slice`)
  const meters = new Map(q.meters.map((m) => [m.meterId, m]))
  const partOf = new Map(parts.map((p) => [p.index, p]))
  const base = q.start.getTime()
  let current: { key: string; window: number; rows: Row[] } | undefined
  const flush = (c: NonNullable<typeof current>): BreakdownRow => {
    const first = c.rows[0]
    const part = partOf.get(first.part)!
    const meter = meters.get(first.meter_id)!
    const rules = rulesOf(meter)
    let value: Decimal = new U(0)
    let events: Decimal = new U(0)
    for (const a of c.rows.map(aggregateOf)) {
      value = value.plus(sliceValue(rules, a, part.slices[a.slice], base))
      events = events.plus(a.events)
    }
    return { ...groupFields(st, first), ...part.windows[c.window], eventCount: events.toFixed(), usage: value.toFixed() }
  }
  const rows = ch.streamRows<Row>({ query: sql, query_params: { ...st.params }, signal: options.signal, settings: longQuery(sql) })
  for await (const r of rows) {
    const key = keyOf(st, r)
    const window = partOf.get(r.part)!.slices[r.slice].window
    if (current && (current.key !== key || current.window !== window)) {
      yield flush(current)
      current = undefined
    }
    if (!current) current = { key, window, rows: [] }
    current.rows.push(r)
  }
  if (current) yield flush(current)
}

/** One part of a breakdown statement as breakdownCsv reads it: its aggregates' SQL, meters, and each slice's window. */
export interface BreakdownPart {
  /** `SELECT part, slice, keys…, group_value, measures… (as text)` (partSql). */
  sql: string
  meters: AnalyticsMeter[]
  sliceWindows: number[]
}

/**
 * streamBreakdown's read plan without its JavaScript half: the same statement's parts (rollups and raw rows, boundaries
 * bound as parameters), its key columns, windows and parameters, and how a statement over them ends and is sent
 * (`finish`, `settings`), for breakdownCsv, which computes the window values in ClickHouse itself.
 */
export function breakdownPlan(q: PropertyBreakdownQuery) {
  const st = statementOf(q, groupingOf(q.groupBy, true))
  const parts = partsOf(q, false)
  return {
    keys: st.keys,
    grouping: st.grouping,
    params: st.params,
    windows: parts[0].windows,
    parts: parts.map((p): BreakdownPart => ({ sql: partSql(st, p), meters: p.meters, sliceWindows: p.slices.map((x) => x.window) })),
    finish,
    settings: longQuery,
  }
}

const fromCh = (s: string): Date => new Date(`${s.replace(' ', 'T')}Z`)

/**
 * The external ids of the customers with usage of `meters` on the UTC days the range meets (meter_usage_1d), in
 * order: a superset of those with usage in the range itself, for reading an environment a batch of customers at a time.
 */
export async function customersWithUsage(ch: ClickHouse, q: Pick<BreakdownQuery, 'scope' | 'meters' | 'start' | 'end'>): Promise<string[]> {
  validRange(q)
  const rs = await ch.client.query({
    query: `SELECT DISTINCT external_customer_id AS id FROM meter_usage_1d
      WHERE tenant_id = {tenant:String} AND environment_id = {env:String} AND ${metersIn(q.meters)}
        AND day >= {from:DateTime64(3, 'UTC')} AND day < {to:DateTime64(3, 'UTC')}
      ORDER BY id`,
    query_params: { tenant: q.scope.tenantId, env: q.scope.environmentId, from: chDateTime(new Date(Math.floor(q.start.getTime() / DAY) * DAY)), to: chDateTime(q.end) },
    format: 'JSONEachRow',
  })
  return (await rs.json<{ id: string }>()).map((r) => r.id)
}

/**
 * Every stored event of [start, end) in an environment (optionally some customers, event names, sources), with its
 * properties as their JSON text, in the table's order (customer, event name, time, id: read in order, no sort), as
 * ClickHouse produces them. Aborting `signal` or leaving the loop stops the query.
 */
export async function* streamEvents(ch: ClickHouse, q: EventExportQuery, options: { signal?: AbortSignal } = {}): AsyncGenerator<ExportedEvent> {
  const { where, params } = eventsWhere(q)
  const sql = `SELECT id, external_customer_id, customer_id, event_name, source, toString(timestamp) AS at, toString(received_at) AS received, properties
    FROM events WHERE ${where}
    ORDER BY external_customer_id, event_name, timestamp, id
    SETTINGS optimize_read_in_order = 1`
  type Row = Omit<ExportedEvent, 'timestamp' | 'received_at'> & { at: string; received: string }
  for await (const { at, received, ...e } of ch.streamRows<Row>({ query: sql, query_params: params, signal: options.signal })) {
    yield { ...e, timestamp: fromCh(at), received_at: fromCh(received) }
  }
}

/** The events of an export query: its WHERE clause over `events` and the parameters it binds. */
function eventsWhere(q: EventExportQuery): { where: string; params: Record<string, unknown> } {
  validRange(q)
  const params: Record<string, unknown> = { tenant: q.scope.tenantId, env: q.scope.environmentId, start: chDateTime(q.start), end: chDateTime(q.end) }
  const where = ['tenant_id = {tenant:String}', 'environment_id = {env:String}', "timestamp >= {start:DateTime64(3, 'UTC')}", "timestamp < {end:DateTime64(3, 'UTC')}", NOT_CANCELLED]
  if (q.externalCustomerIds) where.push(`external_customer_id IN ${sqlStringArray(q.externalCustomerIds)}`)
  if (q.eventNames) where.push(`event_name IN ${sqlStringArray(q.eventNames)}`)
  if (q.sources) where.push(`source IN ${sqlStringArray(q.sources)}`)
  return { where: where.join(' AND '), params }
}

/** The columns of `eventsCsv`, in order. */
export const EVENT_CSV_COLUMNS = ['event_id', 'timestamp', 'received_at', 'external_customer_id', 'customer_id', 'event_name', 'source', 'properties'] as const

const isoInstant = (col: string) => `formatDateTime(${col}, '%Y-%m-%dT%H:%i:%S.%fZ')`

/**
 * streamEvents's events as CSV rows (EVENT_CSV_COLUMNS, no header) written by ClickHouse itself: instants in ISO 8601
 * with milliseconds, text cells neutralized as core/csv.ts does, properties as their JSON text (an object: `{` first,
 * nothing to neutralize). Passed through as
 * bytes, never parsed here: what makes a raw export run at ClickHouse's speed.
 */
export function eventsCsv(ch: ClickHouse, q: EventExportQuery, options: { signal?: AbortSignal } = {}): AsyncIterable<{ bytes: Uint8Array; rows: number }> {
  const { where, params } = eventsWhere(q)
  // Text cells neutralized as core/csv.ts does (infra/ch-csv.ts); ClickHouse's CSV then quotes every string.
  const cells = [neutralizedSql('id'), isoInstant('timestamp'), isoInstant('received_at'), neutralizedSql('external_customer_id'), neutralizedSql('customer_id'), neutralizedSql('event_name'), neutralizedSql('source'), 'properties']
  const sql = `SELECT ${cells.join(', ')}
    FROM events WHERE ${where}
    ORDER BY external_customer_id, event_name, timestamp, id
    SETTINGS optimize_read_in_order = 1`
  // Blocks of 8,192 rows (~1 MB of CSV) rather than 65,409: what a slow client keeps the server holding is a few blocks.
  return ch.streamCsv({ query: sql, query_params: params, signal: options.signal, settings: { max_block_size: '8192' } })
}
