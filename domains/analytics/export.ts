// The analytics export (POST /v1/events/analytics/export): one CSV row per customer, meter (its feature), source,
// property values and window with events. Each row's cost is the customer's cost of that meter and window (costs.ts,
// computed a batch of customers at a time, before the batch's rows) split over the customer's rows of the window by
// usage (allocateByUsage): the rows add up to the customer's line amounts. Two writers give the same bytes (export-paths.test.ts), chosen by exportPath:
// ClickHouse (usage analytics breakdownCsv: values, cost split and cells computed in the statement, its text passed
// through; ~12× faster), or this file from streamBreakdown's rows through core/csv.ts, which holds one customer's rows
// of one meter, the customers met, and the costs.
// With the reconciliation column set, the window rows are followed by one row per customer and meter over the whole
// range: the numbers of the usage reconciliation report (invoicing's usageReconciliation, one call per customer).
import { csvCell, csvPieces, type CsvColumn, type CsvPiece, type CsvValue } from '../../core/csv.ts'
import { AppError } from '../../core/errors.ts'
import { runs } from '../../core/runs.ts'
import { D, minorUnits, roundMoney, type Decimal } from '../../core/money.ts'
import type { Actor } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import { findCustomerByExternalId, listCustomers, type CustomerRow } from '../customers/service.ts'
import { usageReconciliation } from '../invoicing/reconciliation/service.ts'
import { breakdownCsv, MAX_MULTIPLIER_PLACES, SQL_AGGREGATIONS, type BreakdownCsvCells } from '../usage/analytics/breakdown-csv.ts'
import { customersWithUsage, streamBreakdown, type BreakdownRow } from '../usage/analytics/store.ts'
import type { Meter } from '../catalog/meters/service.ts'
import { pricedCustomers, PRICED_WINDOWS_A_BATCH, type CostPlan, type Costs } from './costs.ts'
import { breakdownKeys, costPlanOf, customerCostsOf, isFiltered, resolveRequest, splitByUsage, unfilteredUsage, windowsOf, type AnalyticsRequest, type Resolved } from './service.ts'

/** Column sets an export may add to its columns. */
export const COLUMN_SETS = ['reconciliation'] as const

export interface AnalyticsExportRequest extends AnalyticsRequest {
  /** Customer metadata keys, one column each. */
  metadataColumns: string[]
  columnSets: (typeof COLUMN_SETS)[number][]
}

export interface AnalyticsExport {
  filename: string
  columns: CsvColumn[]
  pieces(signal: AbortSignal): AsyncIterable<CsvPiece>
}

/** Who writes an export's rows: ClickHouse ('sql', breakdownCsv) or this file through core/csv.ts ('ts'). */
export type ExportPath = 'sql' | 'ts'

/**
 * The path of a request: ClickHouse's unless a row needs what only this file computes — the reconciliation rows, or
 * an aggregation that divides (AVG, WEIGHTED_SUM: quotients rounded by decimal.js).
 */
export function exportPath(r: AnalyticsExportRequest, resolved: Resolved): ExportPath {
  if (r.columnSets.includes('reconciliation')) return 'ts'
  const exact = (m: Meter) =>
    SQL_AGGREGATIONS.has(m.aggregation.type) && (m.aggregation.type !== 'SUM_WITH_MULTIPLIER' || new D(m.aggregation.multiplier ?? 1).decimalPlaces() <= MAX_MULTIPLIER_PLACES)
  return resolved.meters.every(exact) ? 'sql' : 'ts'
}

const NUMBER = 'number' as const

/** The reconciliation set: a row's kind, then the report's numbers (empty on window rows). */
const RECONCILIATION: CsvColumn[] = [
  { name: 'row_type' },
  ...['received', 'stored', 'duplicates', 'rejected', 'corrected', 'counted', 'billed', 'adjusted', 'unsettled', 'billed_quantity'].map((name) => ({ name, kind: NUMBER })),
]

/** What a row of usage is about, and one column per grouped property: the first columns of this export and of the cost export. */
export const groupColumns = (keys: string[]): CsvColumn[] => [
  { name: 'window_start' },
  { name: 'customer_id' },
  { name: 'external_customer_id' },
  { name: 'customer_name' },
  { name: 'meter_id' },
  { name: 'meter_name' },
  { name: 'feature_id' },
  { name: 'feature_name' },
  { name: 'source' },
  ...keys.filter((k) => k.startsWith('properties.')).map((name) => ({ name })),
]

/** The columns: fixed ones, one per grouped property, one per metadata key, then the column sets asked for. */
function columnsOf(keys: string[], metadata: string[], reconciliation: boolean): CsvColumn[] {
  return [
    ...groupColumns(keys),
    { name: 'event_count', kind: NUMBER },
    { name: 'usage', kind: NUMBER },
    { name: 'cost', kind: NUMBER },
    { name: 'currency' },
    ...metadata.map((k) => ({ name: `metadata.${k}` })),
    ...(reconciliation ? RECONCILIATION : []),
  ]
}

/** Groups one statement aggregates and sorts in ClickHouse's memory, about (customers × windows), and customers a statement names at most. */
const BATCH_ROWS = 250_000
const BATCH_CUSTOMERS = 10_000
/**
 * The customers of each statement, in order: the request's, or the environment's with usage (customersWithUsage), so
 * that an export of any size holds about BATCH_ROWS groups in ClickHouse (10M groups: 1.2 GB) and the costs of about
 * PRICED_WINDOWS_A_BATCH windows here (their costs are written into the statement), not all of them.
 */
async function customerBatches(deps: Deps, resolved: Resolved, windows: number, priced: ReadonlySet<string>): Promise<string[][]> {
  const all = resolved.query.externalCustomerIds ?? (await customersWithUsage(deps.ch, resolved.query))
  // A request naming its customers stays one statement unless their costs would not fit (its rows' order is the statement's).
  const fits = resolved.query.externalCustomerIds
    ? (_: number, pricedWindows: number) => pricedWindows <= PRICED_WINDOWS_A_BATCH
    : (count: number, pricedWindows: number) => count * windows <= BATCH_ROWS && count <= BATCH_CUSTOMERS && pricedWindows <= PRICED_WINDOWS_A_BATCH
  return runs(all, (id) => (priced.has(id) ? windows : 0), fits)
}

/** The records of customers named by external id, 1,000 a query; a customer without one is left out. */
async function customerRecords(deps: Deps, actor: Actor, externalIds: string[]): Promise<Map<string, CustomerRow>> {
  const out = new Map<string, CustomerRow>()
  for (let i = 0; i < externalIds.length; i += 1000) {
    const page = await listCustomers(deps, actor, {
      params: { limit: 1000, offset: 0, sort: 'created_at', order: 'asc', status: 'published', metadata: {} },
      filters: { external_ids: externalIds.slice(i, i + 1000) },
    })
    for (const c of page.items) out.set(c.external_id, c)
  }
  return out
}

/**
 * The request checked now (group_by); the rest is resolved, and refused with an error body, before the first row.
 * `options.path` forces a path (the paths' comparison test); default exportPath's.
 */
export function analyticsExport(deps: Deps, actor: Actor, r: AnalyticsExportRequest, options: { path?: ExportPath } = {}): AnalyticsExport {
  const keys = breakdownKeys(r.groupBy)
  const metadata = [...new Set(r.metadataColumns)]
  const reconciliation = r.columnSets.includes('reconciliation')
  // A window row's reconciliation cells: its kind, the numbers left empty.
  const usageRow = reconciliation ? ['usage', ...RECONCILIATION.slice(1).map(() => null)] : []
  const columns = columnsOf(keys, metadata, reconciliation)
  const metadataOf = (c: CustomerRow | null) => metadata.map((k) => (c?.metadata as Record<string, string> | null)?.[k] ?? null)
  const cells = (values: CsvValue[]) => values.map((v) => csvCell(v)).join(',')
  /** The costs of a batch's priced customers (`own`), read and priced now (none priced: nothing to read). */
  const batchCosts = (resolved: Resolved, plan: CostPlan, own: string[]): Promise<Costs> =>
    own.length === 0 ? Promise.resolve({ currency: plan.currency, meters: new Map() }) : customerCostsOf(deps, actor, r, resolved, plan, own)
  /** Per `meterId|externalCustomerId`, the usage of each window of `customers` without the request's filters (none asked: none read). */
  const unfilteredOfCustomers = (resolved: Resolved, customers: string[]): Promise<Map<string, Decimal[]>> =>
    customers.length === 0 ? Promise.resolve(new Map()) : unfilteredUsage(deps, { ...resolved.query, externalCustomerIds: customers }, true)
  /** The unfiltered usage of the priced customers of `windows` (per meter and customer), each window's decimal text. */
  async function unfilteredOf(resolved: Resolved, windows: Map<string, Map<string, string[]>>): Promise<Map<string, Map<string, string[]>>> {
    const usage = await unfilteredOfCustomers(resolved, [...new Set([...windows.values()].flatMap((customers) => [...customers.keys()]))])
    return new Map([...windows].map(([meterId, customers]) => [meterId, new Map([...customers.keys()].map((id) => [id, (usage.get(`${meterId}|${id}`) ?? []).map((v) => v.toFixed())]))]))
  }
  /** ClickHouse writes the rows: the cells it does not compute are written here once per meter and customer. */
  async function* sqlPieces(resolved: Resolved, plan: CostPlan, pricedIds: ReadonlySet<string>, signal: AbortSignal): AsyncGenerator<CsvPiece> {
    const currency = plan.currency ?? ''
    const meters = new Map(resolved.meters.map((m) => [m.id, resolved.features.filter((f) => f.meter_id === m.id).map((f) => cells([m.id, m.name, f.id, f.name]))]))
    for (const batch of await customerBatches(deps, resolved, windowsOf(r).length, pricedIds)) {
      const records = await customerRecords(deps, actor, batch)
      const customers = new Map(
        batch.map((id) => {
          const c = records.get(id) ?? null
          return [id, { head: cells([c?.id ?? null, id, c?.name ?? null]), tail: metadataOf(c).map((v) => `,${csvCell(v)}`).join('') }]
        }),
      )
      let priced: BreakdownCsvCells['costs']
      if (currency) {
        const costs = await batchCosts(resolved, plan, batch.filter((id) => pricedIds.has(id)))
        // allocateByUsage's units: the window's cost rounded to the minor unit, in minor units.
        const scale = new D(10).pow(minorUnits(currency))
        const windows = new Map<string, Map<string, string[]>>()
        for (const [meterId, cost] of costs.meters) {
          const own = new Map(batch.flatMap((id) => (cost.customers?.has(id) ? [[id, cost.customers.get(id)!.map((v) => roundMoney(v, currency).times(scale).toFixed(0))] as const] : [])))
          if (own.size > 0) windows.set(meterId, own)
        }
        priced = { places: minorUnits(currency), windows, unfiltered: isFiltered(r) ? await unfilteredOf(resolved, windows) : undefined }
      }
      const query = { ...resolved.query, externalCustomerIds: batch, groupBy: ['external_customer_id', ...keys] }
      yield* breakdownCsv(deps.ch, query, { meters, customers, currency: csvCell(currency), costs: priced }, { signal })
    }
  }
  return {
    filename: `usage-${r.start.toISOString()}-${r.end.toISOString()}.csv`.replace(/:/g, ''),
    columns,
    async *pieces(signal) {
      const resolved = await resolveRequest(deps, actor, r)
      if (resolved.meters.length === 0) return
      const plan = await costPlanOf(deps, actor, r, resolved)
      const priced = pricedCustomers(plan)
      if ((options.path ?? exportPath(r, resolved)) === 'sql') yield* sqlPieces(resolved, plan, priced, signal)
      else yield* csvPieces(columns, tsRows(resolved, plan, priced, signal))
    },
  }
  /** This file writes the rows, through core/csv.ts. */
  async function* tsRows(resolved: Resolved, plan: CostPlan, pricedIds: ReadonlySet<string>, signal: AbortSignal): AsyncGenerator<CsvValue[]> {
    const currency = plan.currency ?? ''
    let costs: Costs = { currency: plan.currency, meters: new Map() }
    // Filtered rows cost their share of the customer's usage: read a batch at a time for its priced customers, so it
    // is held for as many windows as their costs are (the whole environment's at once took GBs).
    let unfiltered: Map<string, Decimal[]> | undefined
    const windows = windowsOf(r)
    const windowOf = new Map(windows.map((w, i) => [w.windowStart.getTime(), i]))
    const meters = new Map(resolved.meters.map((m) => [m.id, m]))
    // The customers met in the stream (null: no record); a batch's records are read together before its rows.
    const known = new Map<string, CustomerRow | null>()
    let batchRecords = new Map<string, CustomerRow>()
    const customer = async (externalId: string) => {
      if (!known.has(externalId)) {
        known.set(
          externalId,
          batchRecords.get(externalId) ??
            (await findCustomerByExternalId(deps, actor, externalId).catch((err: unknown) => {
              if (err instanceof AppError && err.code === 'not_found') return null
              throw err
            })),
        )
      }
      return known.get(externalId)!
    }
    const properties = keys.filter((k) => k.startsWith('properties.')).map((k) => k.slice('properties.'.length))
    // One customer's rows of one meter: each window's cost split over them by usage.
    async function* flush(rows: BreakdownRow[]): AsyncGenerator<CsvValue[]> {
      const meter = meters.get(rows[0].meterId)!
      const externalId = rows[0].externalCustomerId!
      const c = await customer(externalId)
      const perWindow = costs.meters.get(meter.id)?.customers?.get(externalId)
      const cost = new Map<BreakdownRow, Decimal>()
      if (perWindow && currency) {
        const byWindow = new Map<number, BreakdownRow[]>()
        for (const row of rows) {
          const w = windowOf.get(row.windowStart.getTime()) ?? 0
          const list = byWindow.get(w)
          if (list) list.push(row)
          else byWindow.set(w, [row])
        }
        const all = unfiltered?.get(`${meter.id}|${externalId}`)
        for (const [w, list] of byWindow) {
          const [parts] = splitByUsage([perWindow[w]], list.map((x) => [new D(x.usage).abs()]), currency, unfiltered ? [all?.[w] ?? new D(0)] : undefined)
          parts.forEach((v, k) => cost.set(list[k], v))
        }
      }
      for (const feature of resolved.features.filter((f) => f.meter_id === meter.id)) {
        for (const row of rows) {
          yield [
            row.windowStart.toISOString(),
            c?.id ?? null,
            externalId,
            c?.name ?? null,
            meter.id,
            meter.name,
            feature.id,
            feature.name,
            row.source ?? null,
            ...properties.map((p) => row.properties?.[p] ?? null),
            // Plain decimal text already: a numeric column keeps it as it is.
            row.eventCount,
            row.usage,
            cost.get(row) ?? new D(0),
            currency,
            ...metadataOf(c),
            ...usageRow,
          ]
        }
      }
    }
    for (const batch of await customerBatches(deps, resolved, windows.length, pricedIds)) {
      batchRecords = await customerRecords(deps, actor, batch)
      if (currency) {
        const own = batch.filter((id) => pricedIds.has(id))
        costs = await batchCosts(resolved, plan, own)
        unfiltered = isFiltered(r) ? await unfilteredOfCustomers(resolved, own) : undefined
      }
      let current: BreakdownRow[] = []
      const stream = streamBreakdown(deps.ch, { ...resolved.query, externalCustomerIds: batch, groupBy: ['external_customer_id', ...keys] }, { signal, customerFirst: true })
      for await (const row of stream) {
        if (current.length > 0 && (current[0].meterId !== row.meterId || current[0].externalCustomerId !== row.externalCustomerId)) {
          yield* flush(current)
          current = []
        }
        current.push(row)
      }
      if (current.length > 0) yield* flush(current)
    }
    if (!reconciliation) return
    // The customer asked for (and its children), else every customer met with a record: the report needs one.
    const customers = resolved.customers ?? [...known.values()].filter((c): c is CustomerRow => c !== null)
    const meterIds = resolved.meters.map((m) => m.id)
    for (const listed of customers) {
      if (signal.aborted) return
      const c = await customer(listed.external_id)
      const report = await usageReconciliation(deps, actor, listed.id, { start_time: r.start.toISOString(), end_time: r.end.toISOString(), meter_ids: meterIds })
      for (const m of report.meters) {
        for (const feature of resolved.features.filter((f) => f.meter_id === m.meter_id)) {
          yield [
            r.start.toISOString(),
            listed.id,
            listed.external_id,
            c?.name ?? null,
            m.meter_id,
            m.meter_name,
            feature.id,
            feature.name,
            null,
            ...properties.map(() => null),
            null,
            null,
            null,
            null,
            ...metadataOf(c),
            'reconciliation',
            m.received,
            m.stored,
            m.duplicates,
            m.rejected,
            m.corrected,
            m.counted,
            m.billed,
            m.adjusted,
            m.unsettled,
            m.billed_quantity,
          ]
        }
      }
    }
  }
}
