// ClickHouse SQL of usage queries: one aggregate per (slice, group). Slices are given as their start
// instants (ascending, computed in TypeScript); an ASOF JOIN puts each row in the last slice starting at or
// before it. Whole minutes come from the per-minute view, minutes a slice boundary splits from raw rows.
import { chDateTime, type ClickHouse } from '../../infra/clickhouse.ts'
import { LONG_QUERY, sqlDateTimeArray, sqlStringArray } from '../../infra/ch-literals.ts'
import type { Scope } from '../../core/scope.ts'
import type { Measure } from '../../core/usage.ts'

export interface SliceQuery {
  scope: Scope
  meterId: string
  revision: number
  externalCustomerIds?: string[]
  /** Slice starts, ascending; the first is the query start. */
  starts: Date[]
  end: Date
  /** Hours read from minutes, minutes read from raw rows (core/usage splitUnits). */
  splitHours: Date[]
  splitMinutes: Date[]
  /** 'raw' ignores the view (reconciliation, property filters). */
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

// Each measure as read from a rollup (by its time column), as computed from raw rows, and as merged per slice.
const MEASURE_SQL: Record<Measure, { view: (time: string) => string; raw: string; merge: string }> = {
  events: { view: () => 'toUInt64(events)', raw: 'count()', merge: 'sum' },
  sum: { view: () => 'toDecimal128(value_sum, 12)', raw: 'sum(value)', merge: 'sum' },
  min: { view: () => 'toDecimal128(value_min, 12)', raw: 'min(value)', merge: 'min' },
  max: { view: () => 'toDecimal128(value_max, 12)', raw: 'max(value)', merge: 'max' },
  valueMs: {
    view: (time) => `toDecimal256(value_sum, 12) * (toUnixTimestamp64Milli(${time}) - {base:Int64}) + value_ms_sum`,
    raw: 'sum(toDecimal256(value, 12) * (toUnixTimestamp64Milli(timestamp) - {base:Int64}))',
    merge: 'sum',
  },
  uniques: { view: () => 'uniques', raw: 'uniqExactState(unique_value)', merge: 'uniqExactMerge' },
  latest: { view: () => 'latest', raw: 'argMaxState(value, (timestamp, event_id))', merge: 'argMaxMerge' },
}

/** Beyond this many cut units, the finer source is read for the whole range (a long OR of ranges costs more). */
const MAX_SPLITS = 64
/** Up to this many slices a row finds its slice by counting starts; beyond, by an ASOF JOIN. */
const INLINE_SLICES = 32

function scoped(q: SliceQuery, params: Record<string, unknown>): string {
  params.tenant = q.scope.tenantId
  params.env = q.scope.environmentId
  params.meter = q.meterId
  params.rev = q.revision
  let sql = 'tenant_id = {tenant:String} AND environment_id = {env:String} AND meter_id = {meter:String} AND revision = {rev:UInt32}'
  if (q.externalCustomerIds) sql += ` AND external_customer_id IN ${sqlStringArray(q.externalCustomerIds)}`
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
  return `AND event_id IN (SELECT id FROM events WHERE ${eventWhere({ ...q.eventFilter, scope: q.scope, externalCustomerIds: q.externalCustomerIds }, params)})`
}

// `col` within one of the units starting at `units`, as ranges the primary key can use.
function within(col: string, units: Date[], length: string, name: string, params: Record<string, unknown>): string {
  return `(${units
    .map((u, i) => {
      params[`${name}${i}`] = chDateTime(u)
      return `(${col} >= {${name}${i}:DateTime64(3, 'UTC')} AND ${col} < {${name}${i}:DateTime64(3, 'UTC')} + INTERVAL ${length})`
    })
    .join(' OR ')})`
}

export async function sliceAggregates(ch: ClickHouse, q: SliceQuery): Promise<SliceRow[]> {
  const starts = sqlDateTimeArray(q.starts)
  const params: Record<string, unknown> = {
    start: chDateTime(q.starts[0]),
    end: chDateTime(q.end),
    base: q.starts[0].getTime(),
  }
  const where = scoped(q, params)
  const measures = q.measures.map((m) => ({ m, ...MEASURE_SQL[m] }))
  const range = "timestamp >= {start:DateTime64(3, 'UTC')} AND timestamp < {end:DateTime64(3, 'UTC')}"
  const keys = q.byCustomer ? 'group_value, external_customer_id AS customer' : 'group_value'
  const raw = (only: string) => `SELECT 1 AS k, timestamp AS t, ${keys}, ${measures.map((x) => `${x.raw} AS ${x.m}`).join(', ')}
    FROM meter_usage WHERE ${where} AND ${range} ${only} GROUP BY timestamp, ${q.byCustomer ? 'group_value, customer' : 'group_value'}`
  const rollup = (table: string, time: string, only: string) => `SELECT 1 AS k, ${time} AS t, ${keys}, ${measures.map((x) => `${x.view(time)} AS ${x.m}`).join(', ')}
    FROM ${table} WHERE ${where} AND ${only}`
  const notIn = (col: string, units: Date[], name: string) => {
    if (units.length === 0) return ''
    params[name] = units.map(chDateTime)
    return `AND ${col} NOT IN {${name}:Array(DateTime64(3, 'UTC'))}`
  }
  const parts: string[] = []
  if (q.source === 'raw' || q.eventFilter !== undefined || q.splitMinutes.length > MAX_SPLITS) parts.push(raw(filterSql(q, params)))
  else {
    const hours = q.splitHours.length <= MAX_SPLITS
    if (hours) {
      parts.push(rollup('meter_usage_1h', 'hour', `hour >= toDateTime64(toStartOfHour({start:DateTime64(3, 'UTC')}), 3, 'UTC') AND hour < {end:DateTime64(3, 'UTC')} ${notIn('hour', q.splitHours, 'sh')}`))
    }
    if (!hours || q.splitHours.length > 0) {
      const minutes = hours ? `AND ${within('minute', q.splitHours, '1 HOUR', 'h', params)}` : ''
      parts.push(rollup('meter_usage_1m', 'minute', `minute >= toDateTime64(toStartOfMinute({start:DateTime64(3, 'UTC')}), 3, 'UTC') AND minute < {end:DateTime64(3, 'UTC')} ${minutes} ${notIn('minute', q.splitMinutes, 'sm')}`))
    }
    if (q.splitMinutes.length > 0) parts.push(raw(`AND ${within('timestamp', q.splitMinutes, '1 MINUTE', 'm', params)}`))
  }
  const inline = q.starts.length <= INLINE_SLICES
  const slice = inline ? `toUInt32(arrayCount(s -> s <= u.t, ${starts}) - 1)` : 'b.slice'
  const join = inline
    ? ''
    : `ASOF INNER JOIN (SELECT 1 AS k, toUInt32(n - 1) AS slice, starts[n] AS s
                       FROM (SELECT ${starts} AS starts, arrayJoin(range(1, length(starts) + 1)) AS n)) AS b
        ON u.k = b.k AND u.t >= b.s`
  const rs = await ch.client.query({
    query: `SELECT ${slice} AS slice, u.group_value AS group_value, ${q.byCustomer ? 'u.customer AS customer, ' : ''}
        ${measures.map((x) => `toString(${x.merge}(u.${x.m})) AS ${x.m}`).join(', ')}
      FROM (${parts.join(' UNION ALL ')}) AS u ${join}
      GROUP BY slice, group_value${q.byCustomer ? ', customer' : ''}
      ORDER BY slice, group_value`,
    query_params: params,
    format: 'JSONEachRow',
    clickhouse_settings: LONG_QUERY,
  })
  return rs.json<SliceRow>()
}
