// Cost analytics (POST /v1/costs/analytics, Flexprice's getDetailedCostAnalytics): per feature and group (source,
// event properties), over a range and per window, what the usage earned (revenue: usage analytics' cost, the
// invoices' own pricing, reused as it is), what it cost you (usage × the active cost sheet's unit costs) and the
// margin. Cost is read per customer and group from the breakdown stream, one read per part of the range in which the
// sheet's prices stay the same (core/costs/schedule), each part priced by the prices in force in it.
import { costParts, type CostPart } from '../../core/costs/schedule.ts'
import { margins, roundCosts, usageCost, type Margins } from '../../core/costs/margin.ts'
import { allocateByUsage } from '../../core/analytics/allocation.ts'
import { validationError } from '../../core/errors.ts'
import { D, ZERO, type Decimal } from '../../core/money.ts'
import type { PriceInput } from '../../core/pricing/index.ts'
import type { Actor } from '../../core/scope.ts'
import { isAdditive } from '../../core/usage.ts'
import type { Deps } from '../../infra/deps.ts'
import type { PriceRow } from '../catalog/prices/service.ts'
import { pricesOf } from '../catalog/prices/service.ts'
import { resolveRequest, usageAnalytics, windowsOf, type AnalyticsItem, type AnalyticsRequest, type Resolved } from '../analytics/service.ts'
import type { CustomerView } from '../customers/service.ts'
import { streamBreakdown, type BreakdownRow } from '../usage/analytics/store.ts'
import { activeCostsheet, type CostsheetRow } from './service.ts'

/** Per group (a meter with the request's group_by values): cost per window and over the range, exact. */
interface ExactCost {
  total: Decimal
  windows: Decimal[]
}

interface CostPoint {
  timestamp: Date
  quantity: string
  eventCount: number
  revenue: Decimal
  cost: Decimal
  margins: Margins
}

export interface CostItem {
  usage: AnalyticsItem
  /** The sheet's price of the meter when one priced the whole range, else null. */
  price: PriceRow | null
  revenue: Decimal
  cost: Decimal
  margins: Margins
  points?: CostPoint[]
}

export interface CostAnalytics {
  costsheet: CostsheetRow | null
  /** The customer the request named; null for the whole environment. */
  customer: CustomerView | null
  currency: string
  start: Date
  end: Date
  revenue: Decimal
  cost: Decimal
  margins: Margins
  items: CostItem[]
  pagination: { total: number; limit: number; offset: number }
}

/** A group's key from its meter and the request's group_by values (feature_id aside: a group is a meter's). */
const keyOf = (meterId: string, values: (string | null | undefined)[]) => JSON.stringify([meterId, ...values.map((v) => v ?? null)])
const rowKey = (keys: string[], row: BreakdownRow) =>
  keyOf(
    row.meterId,
    keys.map((k) => (k === 'source' ? row.source : row.properties?.[k.slice('properties.'.length)])),
  )
const itemKey = (keys: string[], item: AnalyticsItem) =>
  keyOf(
    item.meter.id,
    keys.map((k) => item.group[k]),
  )

/** A stored price as core/pricing prices a quantity. */
const pricing = (p: PriceRow): PriceInput => ({
  billing_model: p.billing_model,
  amount: p.amount.toFixed(),
  tier_mode: p.tier_mode ?? undefined,
  tiers: p.tiers ?? undefined,
  transform_quantity: p.transform_quantity ?? undefined,
  min_quantity: p.min_quantity?.toFixed() ?? null,
})

/** The active sheet's USAGE prices of the request's meters, and the currency they are in (one, else 400). */
async function sheetPrices(deps: Deps, actor: Actor, sheet: CostsheetRow | undefined, x: Resolved): Promise<{ prices: PriceRow[]; currency: string | null }> {
  if (!sheet) return { prices: [], currency: null }
  const meters = new Set(x.meters.map((m) => m.id))
  const prices = (await pricesOf(deps.sql, actor, [sheet.id])).filter((p) => p.type === 'USAGE' && p.meter_id && meters.has(p.meter_id))
  const currencies = [...new Set(prices.map((p) => p.currency))].sort()
  if (currencies.length > 1) throw validationError('currency', `cost sheet ${sheet.id} prices these meters in several currencies (${currencies.join(', ')}): one currency per sheet`)
  return { prices, currency: currencies[0] ?? null }
}

/**
 * Every group's exact cost over the range and per window: each part's usage per customer and group (the breakdown
 * stream) priced by the part's price of the meter, added up over customers and parts. A window's cost is its usage's;
 * the range's is the usage over the part (the same sum for counts and sums, not for MAX or COUNT_UNIQUE, read apart).
 */
async function exactCosts(deps: Deps, r: AnalyticsRequest, x: Resolved, parts: CostPart<PriceRow>[], windowCount: number): Promise<Map<string, ExactCost>> {
  const out = new Map<string, ExactCost>()
  const costOf = (key: string) => {
    let c = out.get(key)
    if (!c) out.set(key, (c = { total: ZERO, windows: Array.from({ length: windowCount }, () => ZERO) }))
    return c
  }
  const windows = windowsOf(r)
  const windowAt = new Map(windows.map((w, i) => [w.windowStart.getTime(), i]))
  const meters = new Map(x.meters.map((m) => [m.id, m]))
  const summable = (meterId: string) => {
    const m = meters.get(meterId)!
    return isAdditive(m.aggregation.type) && (m.aggregation.bucket_size === undefined || m.aggregation.bucket_size === null)
  }
  for (const part of parts) {
    const priced = x.query.meters.filter((m) => part.prices.has(m.meterId))
    if (priced.length === 0) continue
    const query = { ...x.query, meters: priced, start: part.start, end: part.end, groupBy: ['external_customer_id', ...x.keys], limit: undefined, offset: undefined }
    const cost = (row: BreakdownRow) => usageCost(pricing(part.prices.get(row.meterId)!), new D(row.usage))
    for await (const row of streamBreakdown(deps.ch, query)) {
      const c = costOf(rowKey(x.keys, row))
      const amount = cost(row)
      if (r.windowSize) {
        const w = windowAt.get(row.windowStart.getTime())
        if (w === undefined) throw new Error(`cost analytics: a window at ${row.windowStart.toISOString()} is not one of the range's`)
        c.windows[w] = c.windows[w].plus(amount)
      } else c.windows[0] = c.windows[0].plus(amount)
      if (!r.windowSize || summable(row.meterId)) c.total = c.total.plus(amount)
    }
    // MAX, COUNT_UNIQUE, LATEST and the like: the part's usage is not the sum of its windows'.
    const whole = r.windowSize ? priced.filter((m) => !summable(m.meterId)) : []
    if (whole.length > 0) {
      for await (const row of streamBreakdown(deps.ch, { ...query, meters: whole, windowSize: undefined })) {
        const c = costOf(rowKey(x.keys, row))
        c.total = c.total.plus(cost(row))
      }
    }
  }
  return out
}

/** A group's windows rounded: its rounded total split by their exact costs where they add up to it, else each rounded. */
function roundedWindows(exact: ExactCost, total: Decimal, currency: string): Decimal[] {
  const sum = exact.windows.reduce((a, b) => a.plus(b), ZERO)
  const splits = sum.eq(exact.total) && exact.windows.every((w) => !w.isNeg()) && !total.isNeg()
  return splits ? allocateByUsage(total, exact.windows, currency) : roundCosts(exact.windows, currency)
}

/** Flexprice's default range: the last 7 days. */
export const DEFAULT_RANGE_MS = 7 * 86_400_000

export async function costAnalytics(deps: Deps, actor: Actor, r: AnalyticsRequest): Promise<CostAnalytics> {
  const usage = await usageAnalytics(deps, actor, r)
  const resolved = await resolveRequest(deps, actor, r)
  const sheet = await activeCostsheet(deps, actor)
  const { prices, currency: costCurrency } = await sheetPrices(deps, actor, sheet, resolved)
  if (usage.currency && costCurrency && usage.currency !== costCurrency) {
    throw validationError('currency', `the revenue is in ${usage.currency} and cost sheet ${sheet!.id} prices these meters in ${costCurrency}: a margin compares one currency`)
  }
  const currency = usage.currency || costCurrency || ''
  const parts = costParts(prices, r.start, r.end)
  const windowCount = r.windowSize ? windowsOf(r).length : 1
  const exact = prices.length === 0 ? new Map<string, ExactCost>() : await exactCosts(deps, r, resolved, parts, windowCount)
  const groups = [...exact.keys()]
  const totals = currency ? roundCosts(groups.map((k) => exact.get(k)!.total), currency) : groups.map(() => ZERO)
  const rounded = new Map(groups.map((k, i) => [k, { total: totals[i], windows: currency ? roundedWindows(exact.get(k)!, totals[i], currency) : [] }]))
  const items = usage.items.map((item): CostItem => {
    const c = rounded.get(itemKey(resolved.keys, item))
    const cost = c?.total ?? ZERO
    const whole = parts.map((p) => p.prices.get(item.meter.id))
    return {
      usage: item,
      price: whole.length === 1 ? (whole[0] ?? null) : null,
      revenue: item.totalCost,
      cost,
      margins: margins(item.totalCost, cost),
      points: item.points?.map((p, i) => {
        const pointCost = c?.windows[i] ?? ZERO
        return { timestamp: p.timestamp, quantity: p.usage, eventCount: p.eventCount, revenue: p.cost, cost: pointCost, margins: margins(p.cost, pointCost) }
      }),
    }
  })
  const cost = totals.reduce((a, b) => a.plus(b), ZERO)
  const customer = resolved.customers?.find((c) => c.external_id === r.externalCustomerId?.trim()) ?? null
  return { costsheet: sheet ?? null, customer, currency, start: r.start, end: r.end, revenue: usage.totalCost, cost, margins: margins(usage.totalCost, cost), items, pagination: usage.pagination }
}
