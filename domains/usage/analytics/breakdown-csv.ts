// The analytics export's rows as CSV written by ClickHouse (docs/analytics.md, "Which path writes an export"):
// streamBreakdown's read plan (breakdownPlan: the same parts over rollups and raw rows, boundaries from core/periods
// bound as parameters), but the window values, the split of each customer's window cost and every cell computed in
// the statement, and the records streamed as bytes (ClickHouse.streamCsv, TabSeparatedRaw), never parsed here. Its
// output equals what the JavaScript path writes through core/csv.ts byte for byte (domains/analytics/export-paths.test.ts).
import type { CsvPiece } from '../../../core/csv.ts'
import { U } from '../../../core/usage.ts'
import type { ClickHouse } from '../../../infra/clickhouse.ts'
import { csvTextSql } from '../../../infra/ch-csv.ts'
import { sqlString, sqlStringArray } from '../../../infra/ch-literals.ts'
import { breakdownPlan, type AnalyticsMeter, type BreakdownPart, type PropertyBreakdownQuery } from './store.ts'

/**
 * Aggregations whose window value is a sum of slice values without a division (core/usage sliceValue): exact in
 * Decimal256 as in decimal.js. AVG and WEIGHTED_SUM round a quotient to 12 places: the JavaScript path's.
 */
export const SQL_AGGREGATIONS: ReadonlySet<string> = new Set(['COUNT', 'SUM', 'SUM_WITH_MULTIPLIER', 'MIN', 'MAX', 'COUNT_UNIQUE', 'LATEST'])

/** Multiplier places at most: usage is then Decimal256 of 12 + these places, products exact. */
export const MAX_MULTIPLIER_PLACES = 24

/** The cells the statement puts around the ones it computes, each already as core/csv.ts writes it. */
export interface BreakdownCsvCells {
  /** Per meter, one per feature of it (its rows repeated per feature, in this order): `meter_id,meter_name,feature_id,feature_name`. */
  meters: Map<string, string[]>
  /** Per customer of the query (external id): `customer_id,external_customer_id,customer_name`, and `,metadata…` (one per column). */
  customers: Map<string, { head: string; tail: string }>
  currency: string
  /**
   * With a currency: per meter and customer, its cost of each window in minor units (signed integer text), split over
   * the customer's rows of the window by usage as allocateByUsage does; absent, or a customer not there: costs 0.
   * `unfiltered` (a request filtered on sources or properties): per meter and customer, its usage of each window
   * without the filter (decimal text), which the rows' shares are taken against: what the rows do not use of it is
   * one more group of the split, after them, whose part is not written (analytics splitByUsage's rest).
   */
  costs?: { places: number; windows: Map<string, Map<string, string[]>>; unfiltered?: Map<string, Map<string, string[]>> }
}

const multiplierOf = (m: AnalyticsMeter) => new U(m.aggregation.multiplier ?? 1)

/** Aggregations whose values are whole numbers: summed as UInt64, whose text ClickHouse writes ~15× faster than a Decimal256's. */
const WHOLE = new Set(['COUNT', 'COUNT_UNIQUE'])

/** A slice row's value as core/usage sliceValue computes it: UInt64 when every meter's is whole (`scale` 0), else Decimal256(scale). */
function valueSql(m: AnalyticsMeter, scale: number): string {
  const d = (measure: string) => (scale === 0 ? `toUInt64(${measure})` : `toDecimal256(${measure}, ${scale})`)
  switch (m.aggregation.type) {
    case 'COUNT':
      return d('events')
    case 'SUM':
    case 'MIN':
    case 'MAX':
      return d(m.aggregation.type.toLowerCase())
    case 'SUM_WITH_MULTIPLIER': {
      const k = multiplierOf(m)
      return d(`toDecimal256(sum, 12) * toDecimal256(${sqlString(k.toFixed())}, ${k.decimalPlaces()})`)
    }
    case 'COUNT_UNIQUE':
      return d('uniques')
    case 'LATEST':
      return d('latest')
    default:
      throw new RangeError(`breakdownCsv: ${m.aggregation.type} is written by the JavaScript path`)
  }
}

/** A part's rows: their window, keys, events and value. */
function partRows(part: BreakdownPart, keys: string[], scale: number): string {
  const value =
    part.meters.length === 1
      ? valueSql(part.meters[0], scale)
      : `multiIf(${part.meters.map((m) => `meter_id = ${sqlString(m.meterId)}, ${valueSql(m, scale)}`).join(', ')}, ${valueSql(part.meters[0], scale)})`
  // Unbucketed, a window is one slice.
  const window = part.sliceWindows.every((w, i) => w === i) ? 'slice' : `[${part.sliceWindows.join(',')}][slice + 1]`
  return `SELECT ${window} AS w, ${keys.join(', ')}, toUInt64(events) AS events, ${value} AS v FROM (${part.sql})`
}

/**
 * Each customer's window cost split over its rows of the window (the other keys in the stream's order), as
 * core/analytics allocateByUsage: weights |usage| (all 1 when none has usage), floors of units × weight / total, the
 * units left to the largest remainders, then the larger weight, then the earlier row. Exact in Int256. With
 * `costs.unfiltered`, what the unfiltered usage has beyond the rows' is one more group, last on ties, not written.
 */
function withCosts(rows: string, keys: string[], others: string[], scale: number, costs: NonNullable<BreakdownCsvCells['costs']>): string {
  // Only the windows that cost something: the rest split 0 (a hash lookup per row, not an index into every window).
  const ids: string[] = []
  const units: string[] = []
  // With a filter, each such window's unfiltered usage in the weights' unit (|usage| × 10^scale, whole).
  const unfiltered: string[] = []
  const unit = new U(10).pow(scale)
  for (const [meterId, customers] of costs.windows) {
    for (const [customer, windows] of customers) {
      const all = costs.unfiltered?.get(meterId)?.get(customer)
      windows.forEach((u, w) => {
        if (u === '0') return
        ids.push(`${meterId}\u0000${customer}\u0000${w}`)
        units.push(u)
        if (costs.unfiltered) unfiltered.push(new U(all?.[w] ?? 0).abs().times(unit).toFixed(0))
      })
    }
  }
  const key = "concat(meter_id, '\\0', customer, '\\0', toString(w))"
  const lookup = (values: string[]) => (ids.length === 0 ? "'0'" : `transform(${key}, ${sqlStringArray(ids)}, ${sqlStringArray(values)}, '0')`)
  const g = 'PARTITION BY meter_id, customer, w'
  const row = ['w', ...keys, 'event_count', 'usage'].join(', ')
  const weight = scale === 0 ? 'toInt256(usage)' : `toInt256(abs(usage) * toInt256('1${'0'.repeat(scale)}'))`
  const costAndWeight = `toInt256(${lookup(units)}) AS signed, ${weight} AS aw`
  if (!costs.unfiltered) {
    // Grouped by nothing but the customer, a window has one row, which takes the whole cost: no sort, no split.
    if (others.length === 0) return `SELECT ${row}, toInt256(${lookup(units)}) AS cost_units FROM (${rows})`
    return split(`SELECT ${row}, ${costAndWeight} FROM (${rows})`, false)
  }
  // Filtered: what the unfiltered usage has beyond the rows' weighs one more group, ordered after them on ties (the
  // rest, not written). It is not a row: its weight, floor and remainder are the partition's, from the same steps.
  return split(`SELECT ${row}, ${costAndWeight}, toInt256(${lookup(unfiltered)}) AS a FROM (${rows})`, true)

  /** The rows of `weighed` (row, signed, aw, and a with `rest`) with their part of `signed`. */
  function split(weighed: string, rest: boolean): string {
    const whole = rest ? ['if(a > own, a - own, toInt256(0)) AS r', 'greatest(top0, r) AS top', 'own + r AS total', 'n0 + 1 AS n'] : ['top0 AS top', 'own AS total', 'n0 AS n']
    // The rest's weight, floor and remainder, and whether it ranks before the row (a larger remainder, or an equal one and a larger weight).
    const restPart = rest ? ', if(top = 0, toInt256(1), r) AS rw, intDiv(abs(signed) * rw, wsum) AS rfl, abs(signed) * rw - rfl * wsum AS rrem' : ''
    const restFloor = rest ? ' - rfl' : ''
    const restFirst = rest ? ' + if(rrem > rem OR (rrem = rem AND rw > wt), 1, 0)' : ''
    // Two window steps (one sort each): the partition's weights, then its rows by remainder, whose order both the
    // units left and the rank are read in. Each step keeps only the columns still needed: it holds the batch's rows.
    return `SELECT ${row}, sign(signed) * (fl + if(rank <= left, 1, 0)) AS cost_units FROM (
      SELECT ${row}, signed, fl, abs(signed) - sum(fl) OVER ordered${restFloor} AS left, row_number() OVER ordered${restFirst} AS rank FROM (
        SELECT ${row}, signed, if(top = 0, toInt256(1), aw) AS wt, if(top = 0, toInt256(n), total) AS wsum,
          intDiv(abs(signed) * wt, wsum) AS fl, abs(signed) * wt - fl * wsum AS rem${restPart} FROM (
          SELECT ${row}, signed, aw, ${whole.join(', ')} FROM (
            SELECT ${row}, signed, aw${rest ? ', a' : ''}, max(aw) OVER (${g}) AS top0, sum(aw) OVER (${g}) AS own, count() OVER (${g}) AS n0 FROM (${weighed})
          )
        )
      )
      WINDOW ordered AS (${g} ORDER BY rem DESC, wt DESC${others.map((k) => `, ${k}`).join('')} ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
    )`
  }
}

/**
 * The export's records of `q` (grouped by customer, then its other keys) as CSV text ClickHouse wrote: per meter,
 * customer, feature, other keys and window, as the JavaScript path orders them. Every customer of
 * `q.externalCustomerIds` must be in `cells.customers`; every meter must be of SQL_AGGREGATIONS.
 */
export function breakdownCsv(ch: ClickHouse, q: PropertyBreakdownQuery, cells: BreakdownCsvCells, options: { signal?: AbortSignal } = {}): AsyncIterable<CsvPiece> {
  const plan = breakdownPlan(q)
  const places = Math.max(0, ...q.meters.filter((m) => m.aggregation.type === 'SUM_WITH_MULTIPLIER').map((m) => multiplierOf(m).decimalPlaces()))
  if (places > MAX_MULTIPLIER_PLACES) throw new RangeError(`breakdownCsv: a multiplier of more than ${MAX_MULTIPLIER_PLACES} places is written by the JavaScript path`)
  const scale = q.meters.every((m) => WHOLE.has(m.aggregation.type)) ? 0 : 12 + places
  const others = plan.keys.filter((k) => k !== 'meter_id' && k !== 'customer')
  const rows = `SELECT w, ${plan.keys.join(', ')}, sum(events) AS event_count, sum(v) AS usage FROM (
      ${plan.parts.map((p) => partRows(p, plan.keys, scale)).join('\n UNION ALL \n')}
    ) GROUP BY w, ${plan.keys.join(', ')}`
  const costs = cells.costs
  const priced = costs !== undefined && costs.windows.size > 0
  const costCell = !priced ? "'0'" : costs.places === 0 ? 'toString(cost_units)' : `toString(toDecimal256(cost_units, 0) * toDecimal256('0.${'0'.repeat(costs.places - 1)}1', ${costs.places}))`
  const customerIds = [...cells.customers.keys()]
  const customer = (part: 'head' | 'tail') => `transform(customer, ${sqlStringArray(customerIds)}, ${sqlStringArray(customerIds.map((c) => cells.customers.get(c)![part]))}, '')`
  const meterIds = [...cells.meters.keys()]
  const features = `multiIf(${meterIds.map((m) => `meter_id = ${sqlString(m)}, ${sqlStringArray(cells.meters.get(m)!)}`).join(', ')}, [])`
  const record = [
    `${sqlStringArray(plan.windows.map((w) => w.windowStart.toISOString()))}[w + 1]`,
    "','",
    customer('head'),
    "','",
    'feature',
    "','",
    plan.grouping.source ? csvTextSql('source') : "''",
    ...plan.grouping.properties.flatMap((_, k) => ["','", csvTextSql(`p${k}`)]),
    "','",
    'toString(event_count)',
    "','",
    'toString(usage)',
    "','",
    costCell,
    "','",
    sqlString(cells.currency),
    customer('tail'),
    "'\\r'",
  ]
  const sql = plan.finish(`SELECT concat(${record.join(', ')}) FROM (${priced ? withCosts(rows, plan.keys, others, scale, costs) : rows})
    ARRAY JOIN ${features} AS feature, arrayEnumerate(${features}) AS fidx
    ORDER BY meter_id, customer, fidx${others.map((k) => `, ${k}`).join('')}, w`)
  // Blocks of 8,192 rows, as the raw export: what a slow client keeps the server holding is a few blocks.
  return ch.streamCsv({ query: sql, query_params: plan.params, signal: options.signal, settings: { max_block_size: '8192', ...plan.settings(sql) }, format: 'TabSeparatedRaw' })
}
