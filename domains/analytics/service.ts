// Usage analytics (POST /v1/events/analytics): who used which feature, from which source, with which property values,
// over a range and per window, and what it cost. Usage comes from the breakdown reads (domains/usage/analytics/store),
// cost from the customers' subscription line items priced by the billing code (costs.ts), split over a meter's groups
// by usage per window (core/analytics allocateByUsage), so a meter's items add up to what its lines bill.
import { costPerUnit, type CustomAnalytic } from '../../core/analytics/cost-per-unit.ts'
import { allocateByUsage } from '../../core/analytics/allocation.ts'
import { AppError, serviceUnavailable, validationError } from '../../core/errors.ts'
import { D, sumMoney, type Decimal } from '../../core/money.ts'
import type { WindowSize } from '../../core/periods.ts'
import type { Actor, Scope } from '../../core/scope.ts'
import { queryWindows } from '../../core/usage.ts'
import type { Deps } from '../../infra/deps.ts'
import { features as featureRecords, type FeatureView } from '../catalog/features/service.ts'
import { metersByIds, type Meter } from '../catalog/meters/service.ts'
import { ADDON, PLAN } from '../catalog/offerings/kinds.ts'
import { getOffering } from '../catalog/offerings/service.ts'
import { customerViews, findCustomerByExternalId, type CustomerView } from '../customers/service.ts'
import { listSubscriptions, type LineItemRow } from '../subscriptions/read.ts'
import { propertyBreakdown, usageBreakdown, type BreakdownGroup, type BreakdownPage, type PropertyBreakdownQuery } from '../usage/analytics/store.ts'
import { cachedRecords } from './cached-records.ts'
import { costPlan, planCosts, planOf, usageCosts, type CostPlan, type Costs, type CostQuery, type MeterCost } from './costs.ts'

export const EXPANDABLE = ['feature', 'meter', 'price', 'plan', 'addon', 'subscription_line_item'] as const
export type Expandable = (typeof EXPANDABLE)[number]

export interface AnalyticsRequest {
  start: Date
  end: Date
  /** Absent: the whole environment. */
  externalCustomerId?: string
  featureIds?: string[]
  sources?: string[]
  /** 'source', 'feature_id', 'properties.<name>'. */
  groupBy: string[]
  windowSize?: WindowSize
  billingAnchor?: Date
  timeZone?: string
  expand: Expandable[]
  /** The customer's children (customers of subscriptions whose parent is one of the customer's) rolled in. */
  includeChildren: boolean
  propertyFilters?: Record<string, string[]>
  limit: number
  offset: number
}

interface AnalyticsPoint {
  timestamp: Date
  usage: string
  cost: Decimal
  eventCount: number
  /** With a subscription commitment: the window's cost within it and over it. */
  commitment?: { utilized: Decimal; overage: Decimal }
}

export interface AnalyticsItem {
  feature: FeatureView
  meter: Meter
  /** The one line item that priced the meter, when exactly one did (one customer's subscription). */
  line: LineItemRow | null
  /** Grouped by source: the group's source. */
  source: string | null
  sources: string[]
  group: Record<string, string | null>
  properties: Record<string, string | null>
  eventCount: number
  totalUsage: string
  totalCost: Decimal
  commitment: MeterCost['commitment']
  points?: AnalyticsPoint[]
  expanded: Partial<Record<Expandable, unknown>>
}

export interface Analytics {
  currency: string
  totalCost: Decimal
  items: AnalyticsItem[]
  /** Figures derived per feature (custom_analytics): what a unit of it cost. */
  custom: CustomAnalytic[]
  pagination: { total: number; limit: number; offset: number }
}

const systemActor = (scope: Scope): Actor => ({ ...scope, keyId: 'system', roles: ['admin'] })

/** The request's group_by keys for the breakdown store; feature_id is always a group (an item is one feature's). */
export function breakdownKeys(groupBy: string[]): string[] {
  const keys: string[] = []
  for (const key of groupBy) {
    if (key === 'feature_id') continue
    if (key !== 'source' && !(key.startsWith('properties.') && key.length > 'properties.'.length)) {
      throw validationError('group_by', `cannot group by ${JSON.stringify(key)}: use source, feature_id or properties.<name>`)
    }
    if (!keys.includes(key)) keys.push(key)
  }
  return keys
}

/** The metered features asked for (every metered feature without feature_ids): unknown ids are not_found naming feature_ids. */
async function featuresOf(deps: Deps, actor: Actor, ids: string[] | undefined): Promise<FeatureView[]> {
  const all: FeatureView[] = []
  const wanted = ids ? [...new Set(ids)] : undefined
  for (let offset = 0; ; offset += 1000) {
    const page = await featureRecords.list(deps, actor, {
      params: { limit: 1000, offset, sort: 'created_at', order: 'asc', status: 'published', metadata: {} },
      filters: wanted ? { feature_ids: wanted } : { type: 'metered' },
    })
    all.push(...page.items)
    if (offset + 1000 >= page.pagination.total) break
  }
  if (wanted) {
    const missing = wanted.filter((id) => !all.some((f) => f.id === id))
    if (missing.length > 0) throw new AppError('not_found', `feature ${missing.join(', ')} not found`, { feature_ids: missing })
    const unmetered = all.filter((f) => f.type !== 'metered' || !f.meter_id)
    if (unmetered.length > 0) throw validationError('feature_ids', `feature ${unmetered.map((f) => f.id).join(', ')} is not metered: it has no usage`)
  }
  return all.filter((f) => f.meter_id)
}

/** The customer and, with include_children, the customers of subscriptions whose parent is one of its subscriptions. */
async function customersOf(deps: Deps, scope: Scope, externalId: string, includeChildren: boolean): Promise<CustomerView[]> {
  const customer = await findCustomerByExternalId(deps, scope, externalId.trim())
  const ids = new Set([customer.id])
  if (includeChildren) {
    const list = (filters: Record<string, unknown>) =>
      listSubscriptions(deps, systemActor(scope), { params: { limit: 1000, offset: 0, sort: 'created_at', order: 'asc', status: 'published', metadata: {} }, filters })
    for (const parent of (await list({ customer_ids: [customer.id] })).items) {
      for (const child of (await list({ parent_subscription_id: parent.id })).items) ids.add(child.customer_id)
    }
  }
  return customerViews(deps.sql, scope, [...ids])
}

const groupKey = (g: Pick<BreakdownGroup, 'meterId' | 'source' | 'properties'>) => JSON.stringify([g.meterId, g.source ?? null, g.properties ?? null])

/** Every group of the query (pages of 1000), for splitting a meter's cost over all its groups, not just the page's. */
async function allGroups(read: (q: PropertyBreakdownQuery) => Promise<BreakdownPage>, q: PropertyBreakdownQuery, page: BreakdownPage): Promise<BreakdownGroup[]> {
  if (q.offset === 0 && page.groups.length === page.total) return page.groups
  const groups: BreakdownGroup[] = []
  for (let offset = 0; offset < page.total; offset += 1000) groups.push(...(await read({ ...q, limit: 1000, offset })).groups)
  return groups
}

/** What a group's windows are split: the cost, and with a commitment what is within it and over it. */
interface GroupCosts {
  cost: Decimal[]
  commitment?: { utilized: Decimal[]; overage: Decimal[] }
}

/**
 * A meter's per-window amounts split over its groups by their usage in each window (largest remainder). `all`: the
 * meter's usage per window without the request's source and property filters; the usage the filters left out takes
 * its share as one more group, not returned (the filtered groups cost their share, not the meter's whole cost).
 */
function splitOver(own: BreakdownGroup[], perWindow: Decimal[], currency: string, all?: Decimal[]): Decimal[][] {
  const usages = own.map((g) => (g.points ? g.points.map((p) => new D(p.usage).abs()) : [new D(g.usage).abs()]))
  const parts = splitByUsage(perWindow, usages, currency, all)
  return own.map((_, k) => parts.map((window) => window[k]))
}

/**
 * Amounts per window split over parts by their usage in each window (`usages[part][window]`), largest remainder;
 * `all` (the usage per window without the request's filters) adds the usage the filters left out as one more part,
 * whose share is dropped. Returns [window][part].
 */
export function splitByUsage(perWindow: Decimal[], usages: Decimal[][], currency: string, all?: Decimal[]): Decimal[][] {
  return perWindow.map((amount, i) => {
    const own = usages.map((u) => u[i])
    const rest = all ? [D.max(0, all[i].abs().minus(own.reduce((a, b) => a.plus(b), new D(0))))] : []
    return allocateByUsage(amount, [...own, ...rest], currency).slice(0, own.length)
  })
}

/**
 * Usage per meter (and customer, `byCustomer`) and window without the request's source and property filters: what a
 * filtered group's share of its meter's cost is taken against. Keys `meterId|externalCustomerId`.
 */
export async function unfilteredUsage(deps: Deps, q: PropertyBreakdownQuery, byCustomer: boolean): Promise<Map<string, Decimal[]>> {
  const out = new Map<string, Decimal[]>()
  const base = { scope: q.scope, meters: q.meters, externalCustomerIds: q.externalCustomerIds, start: q.start, end: q.end, windowSize: q.windowSize, billingAnchor: q.billingAnchor, timeZone: q.timeZone }
  for (let offset = 0, total = 1; offset < total; offset += 1000) {
    const page = await usageBreakdown(deps.ch, { ...base, groupBy: byCustomer ? ['external_customer_id'] : [], limit: 1000, offset })
    total = page.total
    for (const g of page.groups) out.set(`${g.meterId}|${g.externalCustomerId ?? ''}`, g.points ? g.points.map((p) => new D(p.usage)) : [new D(g.usage)])
  }
  return out
}

/** Each group's cost per window: its meter's cost of the window split over the meter's groups by their usage in it. */
function groupCosts(groups: BreakdownGroup[], costs: Costs, unfiltered: Map<string, Decimal[]> | undefined): Map<string, GroupCosts> {
  const out = new Map<string, GroupCosts>()
  const currency = costs.currency
  for (const [meterId, cost] of costs.meters) {
    const own = groups.filter((g) => g.meterId === meterId)
    if (own.length === 0 || !currency) continue
    const all = unfiltered && (unfiltered.get(`${meterId}|`) ?? cost.windows.map(() => new D(0)))
    const parts = splitOver(own, cost.windows, currency, all)
    const utilized = cost.commitmentWindows && splitOver(own, cost.commitmentWindows.utilized, currency, all)
    const overage = cost.commitmentWindows && splitOver(own, cost.commitmentWindows.overage, currency, all)
    own.forEach((g, k) => out.set(groupKey(g), { cost: parts[k], ...(utilized && overage ? { commitment: { utilized: utilized[k], overage: overage[k] } } : {}) }))
  }
  return out
}

async function expansions(deps: Deps, actor: Actor, expand: Expandable[], feature: FeatureView, meter: Meter, line: LineItemRow | null): Promise<AnalyticsItem['expanded']> {
  const out: AnalyticsItem['expanded'] = {}
  for (const e of expand) {
    if (e === 'feature') out.feature = feature
    else if (e === 'meter') out.meter = meter
    else if (!line) continue
    else if (e === 'price') out.price = { id: line.price_id, ...line.price }
    else if (e === 'plan' && line.entity_type === 'plan') out.plan = await getOffering(deps, actor, PLAN, line.entity_id)
    else if (e === 'addon' && line.entity_type === 'addon') out.addon = await getOffering(deps, actor, ADDON, line.entity_id)
    else if (e === 'subscription_line_item') out.subscription_line_item = line
  }
  return out
}

/** Windows per request at most: every window start is a literal of the statement (ClickHouse parses at most 50,000 nodes). */
const MAX_WINDOWS = 5000

/** The request's windows; too many for one statement is a validation_error naming window_size. */
export function windowsOf(r: Pick<AnalyticsRequest, 'start' | 'end' | 'windowSize' | 'billingAnchor' | 'timeZone'>) {
  let windows
  try {
    windows = queryWindows(r.start, r.end, r.windowSize, { billingAnchor: r.billingAnchor, timeZone: r.timeZone })
  } catch (err) {
    throw validationError(r.timeZone !== undefined && /time zone/.test((err as Error).message) ? 'timezone' : 'window_size', (err as Error).message)
  }
  if (windows.length > MAX_WINDOWS) throw validationError('window_size', `${windows.length} windows of ${r.windowSize} in the range; at most ${MAX_WINDOWS}: choose a larger window or a shorter range`)
  return windows
}

/** Filtered on sources or properties, the groups hold part of the usage the lines priced: they cost their share of it. */
export const isFiltered = (r: AnalyticsRequest): boolean => r.sources !== undefined || Object.keys(r.propertyFilters ?? {}).length > 0

/** What a request reads: its group_by keys, features and their ready meters, the customers, the breakdown query. */
export interface Resolved {
  keys: string[]
  features: FeatureView[]
  meters: Meter[]
  /** Absent: the whole environment. */
  customers?: CustomerView[]
  query: PropertyBreakdownQuery
}

/** Checks a request and finds what it names: 400s and 404s here, before anything is read or sent. */
export async function resolveRequest(deps: Deps, actor: Actor, r: AnalyticsRequest): Promise<Resolved> {
  if (r.end <= r.start) throw validationError('end_time', 'must be after start_time')
  windowsOf(r)
  const keys = breakdownKeys(r.groupBy)
  const features = await cachedRecords(deps, actor, 'features', r.featureIds ?? null, () => featuresOf(deps, actor, r.featureIds))
  const meterIds = [...new Set(features.map((f) => f.meter_id!))]
  const meters = await cachedRecords(deps, actor, 'meters', meterIds, () => metersByIds(deps, actor, meterIds))
  const notReady = meters.filter((m) => m.ready_revision === 0)
  if (notReady.length > 0) throw serviceUnavailable(`meter ${notReady[0].id} is still counting the events stored before it was created; retry shortly`, { meter_id: notReady[0].id }, 2)
  const external = r.externalCustomerId
  const customers = external === undefined ? undefined : await cachedRecords(deps, actor, 'customers', [external, r.includeChildren], () => customersOf(deps, actor, external, r.includeChildren))
  const query: PropertyBreakdownQuery = {
    scope: actor,
    meters: meters.map((m) => ({ meterId: m.id, revision: m.ready_revision, eventName: m.event_name, aggregation: { type: m.aggregation.type, multiplier: m.aggregation.multiplier, bucketSize: m.aggregation.bucket_size as WindowSize | undefined } })),
    externalCustomerIds: customers?.map((c) => c.external_id),
    sources: r.sources,
    start: r.start,
    end: r.end,
    windowSize: r.windowSize,
    billingAnchor: r.billingAnchor,
    timeZone: r.timeZone,
    propertyFilters: r.propertyFilters,
    groupBy: keys,
    limit: r.limit,
    offset: r.offset,
  }
  return { keys, features, meters, customers, query }
}

/** The cost of the resolved meters' usage, per meter, customer and window. */
const costQuery = (r: AnalyticsRequest, x: Resolved, known?: CostQuery['known']): CostQuery => ({
  meters: x.meters,
  customerIds: x.customers?.map((c) => c.id),
  start: r.start,
  end: r.end,
  windowSize: r.windowSize,
  calendar: { billingAnchor: r.billingAnchor, timeZone: r.timeZone },
  known,
})

const costsOf = (deps: Deps, actor: Actor, r: AnalyticsRequest, x: Resolved, known?: CostQuery['known']): Promise<Costs> => usageCosts(deps, actor, costQuery(r, x, known))

/** The request's billing periods and currency, before any usage is read (an export prices its customers a batch at a time). */
export const costPlanOf = (deps: Deps, actor: Actor, r: AnalyticsRequest, x: Resolved): Promise<CostPlan> => costPlan(deps, actor, costQuery(r, x))

/** The cost of the plan's charges of `customers` (external ids). */
export const customerCostsOf = (deps: Deps, actor: Actor, r: AnalyticsRequest, x: Resolved, plan: CostPlan, customers: readonly string[]): Promise<Costs> =>
  planCosts(deps, actor, costQuery(r, x), planOf(plan, new Set(customers)), { perCustomer: true })

/**
 * The customer's usage per meter and window from a page of its unfiltered breakdown, when the page holds every
 * group: the groups add up to the meter's usage (additive meters; costs.ts checks the meter).
 */
function usageOfPage(r: AnalyticsRequest, customer: CustomerView, page: BreakdownPage): CostQuery['known'] {
  if (r.offset !== 0 || page.total !== page.groups.length) return undefined
  const windows = windowsOf(r).length
  const byMeter = new Map<string, Decimal[]>()
  for (const g of page.groups) {
    const values = byMeter.get(g.meterId) ?? Array.from({ length: windows }, () => new D(0))
    const usage = g.points ? g.points.map((p) => new D(p.usage)) : [new D(g.usage)]
    byMeter.set(g.meterId, values.map((v, i) => v.plus(usage[i])))
  }
  return (meterId, externalId) => (externalId === customer.external_id ? (byMeter.get(meterId) ?? Array.from({ length: windows }, () => new D(0))) : undefined)
}

export async function usageAnalytics(deps: Deps, actor: Actor, r: AnalyticsRequest): Promise<Analytics> {
  const resolved = await resolveRequest(deps, actor, r)
  const { keys, features, meters, query: q } = resolved
  if (meters.length === 0) return { currency: '', totalCost: new D(0), items: [], custom: [], pagination: { total: 0, limit: r.limit, offset: r.offset } }
  const byProperty = keys.some((k) => k.startsWith('properties.')) || Object.keys(r.propertyFilters ?? {}).length > 0
  // On the second connection: the breakdown runs while the cost reads usage on the first (chDB runs one statement per connection at a time).
  const ch = { ...deps.ch, client: deps.ch.reader }
  const read = (x: PropertyBreakdownQuery) => (byProperty ? propertyBreakdown(ch, x) : usageBreakdown(ch, { ...x, groupBy: x.groupBy as ('source' | 'external_customer_id')[] }))
  // One customer, unfiltered: its breakdown is its usage too, so the cost prices it without a read of its own.
  const [one] = !isFiltered(r) && resolved.customers?.length === 1 ? resolved.customers : []
  const [page, costs] = one ? await readThenPrice(one) : await Promise.all([read(q), costsOf(deps, actor, r, resolved)])
  async function readThenPrice(customer: CustomerView): Promise<[BreakdownPage, Costs]> {
    const page = await read(q)
    return [page, await costsOf(deps, actor, r, resolved, usageOfPage(r, customer, page))]
  }
  const windows = windowsOf(r).length
  const priced = [...costs.meters.values()].some((m) => m.windows.some((c) => !c.isZero()))
  const filtered = isFiltered(r)
  const unfiltered = priced && filtered ? await unfilteredUsage(deps, q, false) : undefined
  const split = priced ? groupCosts(await allGroups(read, q, page), costs, unfiltered) : new Map<string, GroupCosts>()
  const meterById = new Map(meters.map((m) => [m.id, m]))
  const items: AnalyticsItem[] = []
  for (const g of page.groups) {
    const meter = meterById.get(g.meterId)!
    const cost = costs.meters.get(g.meterId)
    const line = cost?.lines.length === 1 ? cost.lines[0] : null
    const shares = split.get(groupKey(g))
    const perWindow = shares?.cost ?? Array.from({ length: windows }, () => new D(0))
    for (const feature of features.filter((f) => f.meter_id === g.meterId)) {
      const group: Record<string, string | null> = { feature_id: feature.id }
      if (keys.includes('source')) group.source = g.source ?? null
      for (const [name, value] of Object.entries(g.properties ?? {})) group[`properties.${name}`] = value
      items.push({
        feature,
        meter,
        line,
        source: keys.includes('source') ? (g.source ?? null) : null,
        sources: keys.includes('source') ? [g.source ?? ''] : (r.sources ?? []),
        group,
        properties: g.properties ?? {},
        eventCount: Number(g.eventCount),
        totalUsage: g.usage,
        totalCost: sumMoney(perWindow),
        commitment: cost?.commitment ?? null,
        points: g.points?.map((p, i) => ({
          timestamp: p.windowStart,
          usage: p.usage,
          cost: perWindow[i],
          eventCount: Number(p.eventCount),
          ...(shares?.commitment && { commitment: { utilized: shares.commitment.utilized[i], overage: shares.commitment.overage[i] } }),
        })),
        expanded: await expansions(deps, actor, r.expand, feature, meter, line),
      })
    }
  }
  const totalCost = filtered ? sumMoney([...split.values()].flatMap((g) => g.cost)) : sumMoney([...costs.meters.values()].flatMap((m) => m.windows))
  const custom = costPerUnit(items.map((i) => ({ featureId: i.feature.id, featureName: i.feature.name, unitSingular: i.feature.unit_singular, reportingUnit: i.feature.reporting_unit, usage: i.totalUsage, cost: i.totalCost })))
  return { currency: costs.currency ?? '', totalCost, items, custom, pagination: { total: page.total, limit: r.limit, offset: r.offset } }
}
