// Usage of a meter over a range, by window: the one computation behind POST /v1/events/usage/meter and
// the billing engine's invoice lines, so every read path gives the same number. Window and bucket
// boundaries come from core/periods (billing-anchor months included) and reach SQL as parameters. A
// failing store throws: an outage never reads as zero usage.
import { AppError, serviceUnavailable, validationError } from '../../../core/errors.ts'
import type { UsageEvent } from '../../../core/events.ts'
import { resolveUsage, type AggregationType, type MeterRules } from '../../../core/meters.ts'
import type { Decimal } from '../../../core/money.ts'
import type { WindowSize } from '../../../core/periods.ts'
import type { Scope } from '../../../core/scope.ts'
import {
  aggregateRows,
  isAdditive,
  measuresOf,
  queryWindows,
  slicesOf,
  sliceValue,
  U,
  windowValues,
  type CalendarOptions,
  type SliceAggregate,
  type TimedRow,
} from '../../../core/usage.ts'
import type { Deps } from '../../../infra/deps.ts'
import { fromChDateTime } from '../../../infra/ch-literals.ts'
import { requireCustomer } from '../../customers/service.ts'
import { getMeter, queryRules, type Meter } from '../../catalog/meters/service.ts'
import * as store from './store.ts'
import type { AnalyticsMeter } from '../analytics/store.ts'

export interface UsageQuery {
  /** Internal customer id; resolved to its external id. */
  customerId?: string
  externalCustomerId?: string
  start: Date
  end: Date
  windowSize?: WindowSize
  /** MONTH windows run from this instant's day and time of day (clamped to short months). */
  billingAnchor?: Date
  timeZone?: string
  /** Property filters applied at query time: key → allowed values. */
  filters?: Record<string, string[]>
}

export interface MeterUsageQuery extends UsageQuery {
  meterId: string
  /** 'raw' recounts from meter_usage rows, ignoring the daily, hourly and per-minute rollups (reconciliation). */
  source?: 'views' | 'raw'
  /**
   * The range is a billing period, read for its billed quantity: a meter whose usage never resets
   * (reset_usage NEVER) is then read from the beginning, everything up to the period's end.
   */
  billed?: boolean
}

interface UsageWindowResult {
  windowStart: Date
  start: Date
  end: Date
  value: Decimal
  /** group_by meters: each group's value. */
  groups: Map<string, Decimal>
}

export interface UsageResult {
  meterId?: string
  eventName: string
  type: AggregationType
  value: Decimal
  results: UsageWindowResult[]
}

/** Events a meter-less query reads at most; beyond it, create a meter (its rows are pre-aggregated). */
const AD_HOC_LIMIT = 1_000_000

function checkRange(q: UsageQuery): void {
  if (Number.isNaN(q.start.getTime())) throw validationError('start_time', 'must be a date-time')
  if (Number.isNaN(q.end.getTime())) throw validationError('end_time', 'must be a date-time')
  if (q.end <= q.start) throw validationError('end_time', 'must be after start_time')
}

async function customers(deps: Deps, scope: Scope, q: UsageQuery): Promise<string[] | undefined> {
  if (q.customerId) {
    const c = await requireCustomer(deps, scope, q.customerId)
    if (q.externalCustomerId !== undefined && q.externalCustomerId.trim() !== c.external_id) {
      throw validationError('external_customer_id', `does not belong to customer ${q.customerId}`)
    }
    return [c.external_id]
  }
  return q.externalCustomerId === undefined ? undefined : [q.externalCustomerId.trim()]
}

function calendar(q: UsageQuery): CalendarOptions {
  return { billingAnchor: q.billingAnchor, timeZone: q.timeZone }
}

/** Per-slice aggregates for the given slices, by customer ('' when the query is not per customer). */
type SliceSource = (slices: ReturnType<typeof slicesOf>) => Promise<Map<string, SliceAggregate[]>>

/**
 * Window values and, for aggregations whose windows do not add up, the total over the whole range, for
 * each of `keys` (customers, or the single '' of a query over all of them). A key without rows gets 0s.
 */
async function compute(rules: MeterRules, q: UsageQuery, read: SliceSource, keys: readonly string[]): Promise<Map<string, Pick<UsageResult, 'value' | 'results'>>> {
  const cal = calendar(q)
  let windows
  try {
    windows = queryWindows(q.start, q.end, q.windowSize, cal)
  } catch (err) {
    throw validationError(q.timeZone !== undefined && /time zone/.test((err as Error).message) ? 'timezone' : 'window_size', (err as Error).message)
  }
  const base = q.start.getTime()
  const valueRules = rules.aggregation
  const slices = slicesOf(windows, rules.aggregation.bucketSize, cal)
  const perSlice = await read(slices)
  const separate = windows.length > 1 && !isAdditive(rules.aggregation.type)
  const whole = separate ? slicesOf(queryWindows(q.start, q.end, undefined, cal), rules.aggregation.bucketSize, cal) : []
  const wholeAggregates = separate ? await read(whole) : new Map<string, SliceAggregate[]>()
  return new Map(
    keys.map((key) => {
      const perWindow = windowValues(valueRules, slices, perSlice.get(key) ?? [], windows.length, base)
      const results = windows.map((w, i) => ({ ...w, ...perWindow[i] }))
      const value = separate
        ? windowValues(valueRules, whole, wholeAggregates.get(key) ?? [], 1, base)[0].value
        : perWindow.reduce((acc, w) => acc.plus(w.value), new U(0))
      return [key, { value, results }]
    }),
  )
}

const ZERO = new U(0)

// Measures the aggregation does not need were not read: they stay 0 and are never looked at.
function fromRow(r: store.SliceRow): SliceAggregate {
  const n = (v: string | undefined) => (v === undefined ? ZERO : new U(v))
  return { slice: r.slice, group: r.group_value, events: n(r.events), sum: n(r.sum), min: n(r.min), max: n(r.max), valueMs: n(r.valueMs), uniques: n(r.uniques), latest: n(r.latest) }
}

function byKey(rows: store.SliceRow[]): Map<string, SliceAggregate[]> {
  const out = new Map<string, SliceAggregate[]>()
  for (const r of rows) {
    const key = r.customer ?? ''
    const list = out.get(key)
    if (list) list.push(fromRow(r))
    else out.set(key, [fromRow(r)])
  }
  return out
}

/** A meter queryable now: not_found for an unknown meter, service_unavailable while it is first backfilled. */
async function readyRules(deps: Deps, scope: Scope, meterId: string): Promise<{ meter: Meter; rules: MeterRules }> {
  const meter = await getMeter(deps, scope, meterId)
  if (meter.ready_revision === 0) {
    throw serviceUnavailable(`meter ${meter.id} is still counting the events stored before it was created; retry shortly`, { meter_id: meter.id, backfill: meter.backfill }, 2)
  }
  return { meter, rules: queryRules(meter) }
}

function meterSource(deps: Deps, scope: Scope, meter: Meter, rules: MeterRules, q: MeterUsageQuery, externalCustomerIds: string[] | undefined, byCustomer: boolean): SliceSource {
  const hasFilters = q.filters !== undefined && Object.keys(q.filters).length > 0
  return async (slices) =>
    byKey(
      await store.sliceAggregates(deps.ch, {
        scope,
        meterId: meter.id,
        revision: rules.revision,
        externalCustomerIds,
        slices,
        source: q.source ?? 'views',
        measures: measuresOf(rules.aggregation.type),
        eventFilter: hasFilters ? { eventName: meter.event_name, properties: q.filters! } : undefined,
        byCustomer,
      }),
    )
}

/** Where usage that never resets is counted from: all of it (Flexprice reads it from the zero time too). */
const BEGINNING = new Date(0)

const billedRange = <Q extends MeterUsageQuery>(meter: Meter, q: Q): Q => (q.billed && meter.reset_usage === 'NEVER' ? { ...q, start: BEGINNING } : q)

/**
 * A meter as the analytics store reads it (its ready revision), its group_by property, and the range a read of `q`
 * covers: from the beginning for a billed read of a reset_usage NEVER meter, as meterUsage reads it.
 */
export async function analyticsRead(deps: Deps, scope: Scope, q: Pick<MeterUsageQuery, 'meterId' | 'start' | 'end' | 'billed'>): Promise<{ meter: AnalyticsMeter; groupBy?: string; start: Date; end: Date }> {
  checkRange(q)
  const { meter, rules } = await readyRules(deps, scope, q.meterId)
  const { start, end } = billedRange(meter, q)
  return { meter: { meterId: meter.id, revision: rules.revision, eventName: meter.event_name, aggregation: rules.aggregation }, groupBy: rules.aggregation.groupBy, start, end }
}

/** Usage of a stored meter. Throws not_found for an unknown meter, service_unavailable while it is first backfilled. */
export async function meterUsage(deps: Deps, scope: Scope, query: MeterUsageQuery): Promise<UsageResult> {
  checkRange(query)
  const { meter, rules } = await readyRules(deps, scope, query.meterId)
  const q = billedRange(meter, query)
  const read = meterSource(deps, scope, meter, rules, q, await customers(deps, scope, q), false)
  const result = (await compute(rules, q, read, [''])).get('')!
  return { meterId: meter.id, eventName: meter.event_name, type: rules.aggregation.type, ...result }
}

/**
 * The same usage for many customers (by external id) in one query per range: what a billing run reads.
 * Each customer's result equals meterUsage for that customer alone.
 */
export async function meterUsageByCustomer(
  deps: Deps,
  scope: Scope,
  query: Omit<MeterUsageQuery, 'customerId' | 'externalCustomerId'> & { externalCustomerIds: string[] },
): Promise<Map<string, UsageResult>> {
  checkRange(query)
  const { meter, rules } = await readyRules(deps, scope, query.meterId)
  const q = billedRange(meter, query)
  const ids = [...new Set(q.externalCustomerIds.map((c) => c.trim()))]
  const results = await compute(rules, q, meterSource(deps, scope, meter, rules, q, ids, true), ids)
  return new Map([...results].map(([c, r]) => [c, { meterId: meter.id, eventName: meter.event_name, type: rules.aggregation.type, ...r }]))
}

/** A customer's range in meterUsageOverRanges. */
export interface CustomerRange {
  externalCustomerId: string
  start: Date
  end: Date
}

/**
 * Billed usage of many customers, each over its own range (each subscription has its own period), in one query
 * for an additive meter without buckets: every range's start and end cut the union of the ranges into windows,
 * one aggregate per (window, customer) is read, and each customer's windows inside its range are summed (for
 * these aggregations a sum of windows is the total). Other meters are read one query per distinct range. Each
 * value equals meterUsage for that customer and range; answered in the order of `ranges`.
 */
export async function meterUsageOverRanges(deps: Deps, scope: Scope, meterId: string, ranges: readonly CustomerRange[]): Promise<Decimal[]> {
  for (const r of ranges) checkRange(r)
  const { meter, rules } = await readyRules(deps, scope, meterId)
  const billed = ranges.map((r) => billedRange(meter, { meterId, billed: true, start: r.start, end: r.end, externalCustomerId: r.externalCustomerId.trim() }))
  const ids = [...new Set(billed.map((r) => r.externalCustomerId))]
  if (!isAdditive(rules.aggregation.type) || rules.aggregation.bucketSize) {
    const byRange = new Map<string, Map<string, Pick<UsageResult, 'value'>>>()
    for (const r of billed) {
      const key = `${r.start.getTime()}|${r.end.getTime()}`
      if (byRange.has(key)) continue
      const customers = [...new Set(billed.filter((o) => o.start.getTime() === r.start.getTime() && o.end.getTime() === r.end.getTime()).map((o) => o.externalCustomerId))]
      byRange.set(key, await compute(rules, r, meterSource(deps, scope, meter, rules, r, customers, true), customers))
    }
    return billed.map((r) => byRange.get(`${r.start.getTime()}|${r.end.getTime()}`)!.get(r.externalCustomerId)!.value)
  }
  const cuts = [...new Set(billed.flatMap((r) => [r.start.getTime(), r.end.getTime()]))].sort((a, b) => a - b)
  const windows = cuts.slice(1).map((end, i) => ({ windowStart: new Date(cuts[i]), start: new Date(cuts[i]), end: new Date(end) }))
  const slices = slicesOf(windows, undefined, {})
  const whole: MeterUsageQuery = { meterId, billed: true, start: new Date(cuts[0]), end: new Date(cuts.at(-1)!) }
  const perSlice = await meterSource(deps, scope, meter, rules, whole, ids, true)(slices)
  // Only the pieces that hold rows are added (windowValues would add a zero per piece: ranges × pieces in all).
  return billed.map((r) =>
    (perSlice.get(r.externalCustomerId) ?? []).reduce((acc, a) => {
      const slice = slices[a.slice]
      return slice.start >= r.start && slice.end <= r.end ? acc.plus(sliceValue(rules.aggregation, a, slice, cuts[0])) : acc
    }, new U(0)),
  )
}

export interface AdHocQuery extends UsageQuery {
  eventName: string
  aggregation: MeterRules['aggregation']
}

/** Usage by event name and aggregation without a stored meter: raw events resolved as a meter would. */
export async function eventUsage(deps: Deps, scope: Scope, q: AdHocQuery): Promise<UsageResult> {
  checkRange(q)
  const eventName = q.eventName.trim()
  if (!eventName) throw validationError('event_name', 'must not be blank')
  const rules: MeterRules = { id: 'ad-hoc', revision: 0, eventName, filters: [], aggregation: q.aggregation }
  const selection = { scope, externalCustomerIds: await customers(deps, scope, q), eventName, properties: q.filters ?? {} }
  const events = await store.eventsInRange(deps.ch, selection, q.start, q.end, AD_HOC_LIMIT + 1)
  if (events.length > AD_HOC_LIMIT) {
    throw new AppError('invalid_operation', `the range holds more than ${AD_HOC_LIMIT} events; narrow it or create a meter`, { limit: AD_HOC_LIMIT })
  }
  const rows: TimedRow[] = []
  for (const e of events) {
    const r = resolveUsage(rules, { eventName, properties: JSON.parse(e.properties) as UsageEvent['properties'] })
    if (r && 'row' in r) rows.push({ at: fromChDateTime(e.timestamp).getTime(), eventId: e.id, ...r.row })
  }
  const read: SliceSource = async (slices) => new Map([['', aggregateRows(rows, slices, q.start.getTime())]])
  return { eventName, type: q.aggregation.type, ...(await compute(rules, q, read, [''])).get('')! }
}
