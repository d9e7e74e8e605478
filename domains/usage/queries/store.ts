// ClickHouse SQL of usage queries: one statement, one aggregate per (slice, group). Slices are given in order
// (computed in TypeScript); each row goes to the last slice starting at or before it. Whole days come from the
// per-day rollup, the hours of days a slice boundary cuts from the per-hour one, and so on down to raw rows for
// the minutes a boundary cuts.
import type { ClickHouse } from '../../../infra/clickhouse.ts'
import { chDateTime, LONG_QUERY, sqlString, sqlStringArray } from '../../../infra/ch-literals.ts'
import { sliceSql } from '../../../infra/ch-slices.ts'
import type { Scope } from '../../../core/scope.ts'
import { DAY, HOUR, MINUTE, type Measure, type Slice } from '../../../core/usage.ts'
import { planSources, type PlannedSource, type Range } from '../../../core/analytics/sources.ts'

export interface SliceQuery {
  scope: Scope
  meterId: string
  revision: number
  externalCustomerIds?: string[]
  /** The slices, tiling the query range in order (core/usage slicesOf). */
  slices: readonly Slice[]
  /** 'raw' ignores the rollups (reconciliation, property filters). */
  source: 'views' | 'raw'
  /** What to compute (core/usage measuresOf). */
  measures: readonly Measure[]
  /** One aggregate per customer as well (billing runs read many customers at once). */
  byCustomer?: boolean
  /** Only rows of events whose properties match (key → allowed values); forces the raw source. */
  eventFilter?: Omit<EventSelection, 'scope' | 'externalCustomerIds'>
}

/** One aggregate per (slice, group); only the requested measures are present, as decimal text. */
export interface SliceRow extends Partial<Record<Measure, string>> {
  slice: number
  group_value: string
  /** byCustomer queries only. */
  customer?: string
}

// The rollups, coarsest first: one row per unit and group holds the merged states of the unit's rows.
const ROLLUPS = [
  { table: 'meter_usage_1d', time: 'day', unit: DAY },
  { table: 'meter_usage_1h', time: 'hour', unit: HOUR },
  { table: 'meter_usage_1m', time: 'minute', unit: MINUTE },
] as const

// Each measure as read from a rollup (by its time column), as computed from raw rows, and as merged per slice.
const MEASURE_SQL: Record<Measure, { view: (time: string) => string; raw: string; merge: string }> = {
  // Raw rows of cancelled events have a cancel row (sign -1) beside them (sql/clickhouse/0010): the additive measures
  // sum the sign; a cancel row repeats its original's value, group and instant, so min, max, uniques and latest ignore it.
  events: { view: () => 'toUInt64(events)', raw: 'toUInt64(sum(sign))', merge: 'sum' },
  sum: { view: () => 'toDecimal128(value_sum, 12)', raw: 'sum(value * sign)', merge: 'sum' },
  min: { view: () => 'toDecimal128(value_min, 12)', raw: 'min(value)', merge: 'min' },
  max: { view: () => 'toDecimal128(value_max, 12)', raw: 'max(value)', merge: 'max' },
  valueMs: {
    view: (time) => `toDecimal256(value_sum, 12) * (toUnixTimestamp64Milli(${time}) - {base:Int64}) + value_ms_sum`,
    raw: 'sum(toDecimal256(value, 12) * sign * (toUnixTimestamp64Milli(timestamp) - {base:Int64}))',
    merge: 'sum',
  },
  uniques: { view: () => 'uniques', raw: 'uniqExactState(unique_value)', merge: 'uniqExactMerge' },
  latest: { view: () => 'latest', raw: 'argMaxState(value, (timestamp, event_id))', merge: 'argMaxMerge' },
}

/**
 * ClickHouse compiles an expression the fourth time it sees its shape, inside that query: 25-30 ms more, once
 * per query shape and process, for aggregations over at most thousands of rollup rows where compiled code
 * gains nothing measurable (a raw recount of a million rows: within 5%). On the statement, not the session.
 */
const NO_JIT = 'compile_expressions = 0, compile_aggregate_expressions = 0'
/**
 * Our tables have no projections: looking for one to use (the implicit min-max-count one included) cost 0.3-0.5 ms
 * of a 4 ms rollup read on chDB.
 */
const NO_PROJECTIONS = 'optimize_use_projections = 0, optimize_use_implicit_projections = 0'
/**
 * Queries up to this size fit ClickHouse's default max_query_size (256 KiB) with the FORMAT clause the client
 * appends; only longer ones raise it (on chDB a setting given with a query is a SET statement of its own).
 */
const DEFAULT_MAX_QUERY_BYTES = 256_000

function scoped(q: SliceQuery, params: Record<string, unknown>): string {
  params.tenant = q.scope.tenantId
  params.env = q.scope.environmentId
  params.meter = q.meterId
  params.rev = q.revision
  let sql = 'tenant_id = {tenant:String} AND environment_id = {env:String} AND meter_id = {meter:String} AND revision = {rev:UInt32}'
  const ids = q.externalCustomerIds
  // One customer's `=` plans a little faster than IN of one.
  if (ids) sql += ids.length === 1 ? ` AND external_customer_id = ${sqlString(ids[0])}` : ` AND external_customer_id IN ${sqlStringArray(ids)}`
  return sql
}

export interface EventSelection {
  scope: Scope
  externalCustomerIds?: string[]
  eventName: string
  properties: Record<string, string[]>
}

// Conditions on the events table; {start} and {end} are bound by the caller.
function eventWhere(q: EventSelection, params: Record<string, unknown>): string {
  params.tenant = q.scope.tenantId
  params.env = q.scope.environmentId
  params.event_name = q.eventName
  const parts = ['tenant_id = {tenant:String}', 'environment_id = {env:String}', 'event_name = {event_name:String}',
    "timestamp >= {start:DateTime64(3, 'UTC')}", "timestamp < {end:DateTime64(3, 'UTC')}"]
  if (q.externalCustomerIds) parts.push(`external_customer_id IN ${sqlStringArray(q.externalCustomerIds)}`)
  Object.entries(q.properties).forEach(([key, values], i) => {
    params[`fk${i}`] = key
    params[`fv${i}`] = values
    // A property compares as its text: strings as they are, numbers and booleans as JSON writes them.
    parts.push(`if(JSONType(properties, {fk${i}:String}) = 'String', JSONExtractString(properties, {fk${i}:String}), JSONExtractRaw(properties, {fk${i}:String})) IN {fv${i}:Array(String)}`)
  })
  return parts.join(' AND ')
}

export interface RangeEventRow {
  id: string
  timestamp: string
  properties: string
}

/** Events of a selection in [start, end), at most `limit` (the caller asks one more to detect overflow). */
export async function eventsInRange(ch: ClickHouse, q: EventSelection, start: Date, end: Date, limit: number): Promise<RangeEventRow[]> {
  const params: Record<string, unknown> = { start: chDateTime(start), end: chDateTime(end), limit }
  const rs = await ch.client.query({
    query: `SELECT id, timestamp, properties FROM events WHERE ${eventWhere(q, params)} LIMIT {limit:UInt32}`,
    query_params: params,
    format: 'JSONEachRow',
  })
  return rs.json<RangeEventRow>()
}

function filterSql(q: SliceQuery, params: Record<string, unknown>): string {
  if (!q.eventFilter) return ''
  params.start = chDateTime(q.slices[0].start)
  params.end = chDateTime(q.slices[q.slices.length - 1].end)
  return `AND event_id IN (SELECT id FROM events WHERE ${eventWhere({ ...q.eventFilter, scope: q.scope, externalCustomerIds: q.externalCustomerIds }, params)})`
}

/** A planned source (core/analytics/sources) with the rollup it reads, if any. */
type Source = Omit<PlannedSource, 'rollup'> & { rollup?: (typeof ROLLUPS)[number] }

/** Up to this many ranges, a source's rows are selected by the ranges themselves; beyond, by units. */
const PLAIN_RANGES = 4

// `col` in one of the ranges, the bounds computed here: the primary key uses them.
function anyRange(col: string, ranges: Range[], name: string, params: Record<string, unknown>): string {
  return `(${ranges
    .map(([from, to], i) => {
      params[`${name}${i}a`] = chDateTime(new Date(from))
      params[`${name}${i}b`] = chDateTime(new Date(to))
      return `(${col} >= {${name}${i}a:DateTime64(3, 'UTC')} AND ${col} < {${name}${i}b:DateTime64(3, 'UTC')})`
    })
    .join(' OR ')})`
}

/**
 * The rows of a source. chDB plans a few plain ranges faster than bounds with unit lists (1 ms of a 10 ms
 * billing-anchored month), but many ranges slower (a month of Kolkata days, 33 ranges of hours: 48 ms instead
 * of 37): then the bounds, the coarser units as ranges and the cut units as a NOT IN list.
 */
function sourceWhere(source: Source, name: string, params: Record<string, unknown>): string {
  const col = source.rollup?.time ?? 'timestamp'
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

// Which rows each rollup reads and which go to raw rows: core/analytics/sources, the plan the analytics reads use
// (it skips a rollup whose units left are all cut, where this file's own copy added a source with no range).
function viewSources(q: SliceQuery): Source[] {
  const planned = planSources(q.slices, ROLLUPS.map((r) => r.unit), q.externalCustomerIds?.length ?? Infinity)
  return planned.map(({ rollup, ...s }) => (rollup === undefined ? s : { ...s, rollup: ROLLUPS[rollup] }))
}

export async function sliceAggregates(ch: ClickHouse, q: SliceQuery): Promise<SliceRow[]> {
  const starts = q.slices.map((s) => s.start)
  const params: Record<string, unknown> = { base: starts[0].getTime() }
  const where = scoped(q, params)
  const measures = q.measures.map((m) => ({ m, ...MEASURE_SQL[m] }))
  const keys = q.byCustomer ? 'group_value, external_customer_id AS customer' : 'group_value'
  const groupKeys = q.byCustomer ? 'group_value, customer' : 'group_value'
  const raw = q.source === 'raw' || q.eventFilter !== undefined
  const sources: Source[] = raw ? [{ ranges: [[starts[0].getTime(), q.slices[q.slices.length - 1].end.getTime()]] }] : viewSources(q)
  const within = (source: Source, i: number) => sourceWhere(source, `r${i}_`, params)
  const slicing = sliceSql(starts, q.slices[q.slices.length - 1].end)
  const only = sources.length === 1 && slicing.join === '' ? sources[0].rollup : undefined
  let query: string
  if (only) {
    // One rollup (a window of whole units): aggregated directly, without a subquery.
    query = `SELECT ${slicing.of(only.time)} AS slice, ${keys}, ${measures.map((x) => `toString(${x.merge}(${x.view(only.time)})) AS ${x.m}`).join(', ')}
      FROM ${only.table} WHERE ${where} AND ${within(sources[0], 0)}
      GROUP BY slice, ${groupKeys}`
  } else {
    const parts = sources.map((source, i) => {
      const rollup = source.rollup
      return rollup
        ? `SELECT 1 AS k, ${rollup.time} AS t, ${keys}, ${measures.map((x) => `${x.view(rollup.time)} AS ${x.m}`).join(', ')}
          FROM ${rollup.table} WHERE ${where} AND ${within(source, i)}`
        : `SELECT 1 AS k, timestamp AS t, ${keys}, ${measures.map((x) => `${x.raw} AS ${x.m}`).join(', ')}
          FROM meter_usage WHERE ${where} AND ${within(source, i)} ${raw ? filterSql(q, params) : ''} GROUP BY timestamp, ${groupKeys}`
    })
    query = `SELECT ${slicing.of('u.t')} AS slice, u.group_value AS group_value, ${q.byCustomer ? 'u.customer AS customer, ' : ''}
        ${measures.map((x) => `toString(${x.merge}(u.${x.m})) AS ${x.m}`).join(', ')}
      FROM (${parts.join(' UNION ALL ')}) AS u ${slicing.join}
      GROUP BY slice, ${groupKeys}`
  }
  const sql = `${query} SETTINGS ${NO_JIT}, ${NO_PROJECTIONS}`
  const rs = await ch.client.query({
    query: sql,
    query_params: params,
    format: 'JSONEachRow',
    clickhouse_settings: Buffer.byteLength(sql) < DEFAULT_MAX_QUERY_BYTES ? undefined : LONG_QUERY,
  })
  // Sorted here rather than in SQL (a sorting step costs more there): groups keep a stable order in answers.
  return (await rs.json<SliceRow>()).sort((a, b) => a.slice - b.slice || (a.group_value < b.group_value ? -1 : a.group_value > b.group_value ? 1 : 0))
}
