// Cost sheets and cost analytics (/v1/costs, Flexprice's costs operations). A sheet's unit costs are prices with
// entity_type COSTSHEET (POST /v1/prices); the answers wrap the sheet as Flexprice's do ({costsheet: …}). The
// analytics body is usage analytics' (grouped and filtered alike), its range defaulting to the last 7 days.
import { AppError, validationError } from '../../core/errors.ts'
import type { JsonSchema } from '../../core/validate.ts'
import type { Actor } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import { toWire } from '../../domains/records/wire.ts'
import { costAnalytics, DEFAULT_RANGE_MS, type CostAnalytics, type CostItem } from '../../domains/costs/analytics.ts'
import { costExport } from '../../domains/costs/export.ts'
import * as service from '../../domains/costs/service.ts'
import { sendCsv } from '../csv-stream.ts'
import { fromSearchBody, metadataSchema, searchBody } from '../record-schema.ts'
import { defineRoute, type Route } from '../route.ts'
import { analyticsProperties, analyticsRequest, type AnalyticsBody } from './analytics.ts'

const text = (max: number): JsonSchema => ({ type: 'string', minLength: 1, maxLength: max })
const sheetFields: Record<string, JsonSchema> = { name: text(255), lookup_key: text(255), description: { type: 'string', maxLength: 2000 }, metadata: metadataSchema }

const SORTABLE = ['created_at', 'updated_at', 'name']

/** The SDK's CostsheetFilter: its camelCase keys beside the snake_case ones a plain client sends. */
const searchSchema = (() => {
  const base = searchBody(SORTABLE, service.FILTERS) as { properties: Record<string, JsonSchema> }
  const { limit, offset, order, status, expand } = base.properties
  return {
    ...base,
    properties: {
      ...base.properties,
      costsheetIDs: base.properties.costsheet_ids,
      lookupKey: base.properties.lookup_key,
      queryFilter: { type: 'object', additionalProperties: false, properties: { limit, offset, sort: { type: 'string', enum: SORTABLE }, order, status, expand } },
      timeRangeFilter: { type: 'object', additionalProperties: false, properties: { start_time: base.properties.start_time, end_time: base.properties.end_time } },
      // The scope is the API key's: these are accepted and read from the key.
      environmentID: { type: 'string' },
      tenantID: { type: 'string' },
      filters: { type: 'array', maxItems: 0, description: 'filter conditions are not supported: use the named filters' },
    },
  } as JsonSchema
})()

interface SearchBody extends Record<string, unknown> {
  costsheetIDs?: string[]
  lookupKey?: string
  queryFilter?: Record<string, unknown>
  timeRangeFilter?: { start_time?: string; end_time?: string }
}

function searchRequest(b: SearchBody) {
  const { costsheetIDs, lookupKey, queryFilter, timeRangeFilter, environmentID: _e, tenantID: _t, filters: _f, ...rest } = b
  return fromSearchBody({
    ...rest,
    ...queryFilter,
    costsheet_ids: rest.costsheet_ids ?? costsheetIDs,
    lookup_key: rest.lookup_key ?? lookupKey,
    start_time: rest.start_time ?? timeRangeFilter?.start_time,
    end_time: rest.end_time ?? timeRangeFilter?.end_time,
  })
}

const withPrices = (expand: unknown) => typeof expand === 'string' && expand.split(',').some((e) => e.trim() === 'prices')

async function sheetView(deps: Deps, actor: Actor, sheet: service.CostsheetRow, prices: boolean) {
  const [view] = await service.costsheetViews(deps, actor, [sheet], prices)
  return toWire(view)
}

type CostBody = Omit<AnalyticsBody, 'start_time' | 'end_time' | 'expand'> & { start_time?: string; end_time?: string; expand?: ('meter' | 'price')[] }

const analyticsSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { ...analyticsProperties, expand: { type: 'array', maxItems: 2, items: { type: 'string', enum: ['meter', 'price'] } } },
}

/** The body as usage analytics takes it: both ends or neither (the last 7 days, Flexprice's default). */
function costRequest(deps: Deps, b: CostBody) {
  if ((b.start_time === undefined) !== (b.end_time === undefined)) throw validationError(b.start_time === undefined ? 'start_time' : 'end_time', 'give both start_time and end_time, or neither for the last 7 days')
  const now = deps.clock.now()
  const range = { start_time: b.start_time ?? new Date(now.getTime() - DEFAULT_RANGE_MS).toISOString(), end_time: b.end_time ?? now.toISOString() }
  return analyticsRequest({ ...b, ...range, expand: [] })
}

const presentItem = (item: CostItem, a: CostAnalytics, expand: string[], customer: { id: string; external_id: string } | null) => {
  const u = item.usage
  return {
    meter_id: u.meter.id,
    meter_name: u.meter.name,
    feature_id: u.feature.id,
    feature_name: u.feature.name,
    source: u.source,
    customer_id: customer?.id ?? null,
    external_customer_id: customer?.external_id ?? null,
    properties: u.properties,
    group: u.group,
    currency: a.currency,
    price_id: item.price?.id ?? null,
    costsheet_id: a.costsheet?.id ?? null,
    total_events: u.eventCount,
    total_quantity: u.totalUsage,
    total_revenue: item.revenue,
    total_cost: item.cost,
    margin: item.margins.margin,
    margin_percent: item.margins.margin_percent,
    cost_by_period: item.points?.map((p) => ({ timestamp: p.timestamp, quantity: p.quantity, event_count: p.eventCount, revenue: p.revenue, cost: p.cost, margin: p.margins.margin, margin_percent: p.margins.margin_percent })),
    ...(expand.includes('meter') && { meter: u.meter }),
    ...(expand.includes('price') && item.price && { price: item.price }),
  }
}

async function answer(deps: Deps, actor: Actor, body: CostBody) {
  const r = costRequest(deps, body)
  const a = await costAnalytics(deps, actor, r)
  return toWire({
    costsheet_id: a.costsheet?.id ?? null,
    currency: a.currency,
    start_time: a.start,
    end_time: a.end,
    total_revenue: a.revenue,
    total_cost: a.cost,
    ...a.margins,
    cost_analytics: a.items.map((i) => presentItem(i, a, body.expand ?? [], a.customer)),
    pagination: a.pagination,
  })
}

const analyticsRoute = (path: string, summary: string): Route =>
  defineRoute<CostBody>({ method: 'POST', path, tag: 'Costs', summary, permission: 'read', body: analyticsSchema, handler: ({ deps, actor, body }) => answer(deps, actor, body) })

export const costRoutes: Route[] = [
  defineRoute<service.CostsheetInput & { name: string }>({
    method: 'POST',
    path: '/v1/costs',
    tag: 'Costs',
    summary: "Create a cost sheet; its unit costs are prices with entity_type COSTSHEET. The newest published sheet is the environment's active one",
    permission: 'write',
    body: { type: 'object', required: ['name'], additionalProperties: false, properties: sheetFields },
    status: 201,
    handler: async ({ deps, actor, body }) => ({ costsheet: toWire(await service.createCostsheet(deps, actor, body)) }),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/costs/active',
    tag: 'Costs',
    summary: 'The active cost sheet (the newest published one) with its prices',
    permission: 'read',
    handler: async ({ deps, actor }) => {
      const sheet = await service.activeCostsheet(deps, actor)
      if (!sheet) throw new AppError('not_found', 'no active costsheet: create one with POST /v1/costs', {})
      return sheetView(deps, actor, sheet, true)
    },
  }),
  analyticsRoute('/v1/costs/analytics', 'Revenue, cost, margin and margin percent per feature and group over a range and per window, the cost priced by the active cost sheet'),
  analyticsRoute('/v1/costs/analytics-v2', 'The same as POST /v1/costs/analytics (Flexprice names a second version of it)'),
  defineRoute<CostBody>({
    method: 'POST',
    path: '/v1/costs/analytics/export',
    tag: 'Costs',
    summary: 'The cost analytics as CSV streamed row by row: one row per customer, feature, group and window with usage, revenue or cost',
    permission: 'read',
    body: analyticsSchema,
    produces: 'text/csv',
    handler: async ({ deps, actor, body, ctx }) => {
      await sendCsv(ctx, deps, costExport(deps, actor, costRequest(deps, body)))
      return undefined
    },
  }),
  defineRoute<SearchBody>({
    method: 'POST',
    path: '/v1/costs/search',
    tag: 'Costs',
    summary: 'Search cost sheets (Flexprice’s CostsheetFilter: costsheetIDs, lookupKey, name, status, queryFilter, timeRangeFilter)',
    permission: 'read',
    body: searchSchema,
    handler: async ({ deps, actor, body }) => {
      const request = searchRequest(body)
      const found = await service.listCostsheets(deps, actor, request)
      const expand = (body.queryFilter?.expand as string | undefined) ?? (body.expand as string | undefined)
      return toWire({ ...found, items: await service.costsheetViews(deps, actor, found.items, withPrices(expand)) })
    },
  }),
  defineRoute<Record<string, never>, { expand?: string }>({
    method: 'GET',
    path: '/v1/costs/{id}',
    tag: 'Costs',
    summary: 'Get a cost sheet with its prices',
    permission: 'read',
    query: { type: 'object', additionalProperties: false, properties: { expand: { type: 'string', maxLength: 200 } } },
    handler: async ({ deps, actor, params }) => ({ costsheet: await sheetView(deps, actor, await service.getCostsheet(deps, actor, params.id), true) }),
  }),
  defineRoute<service.CostsheetInput>({
    method: 'PUT',
    path: '/v1/costs/{id}',
    tag: 'Costs',
    summary: "Change a cost sheet's name, lookup key, description or metadata",
    permission: 'write',
    body: { type: 'object', additionalProperties: false, properties: sheetFields },
    handler: async ({ deps, actor, params, body }) => ({ costsheet: toWire(await service.updateCostsheet(deps, actor, params.id, body)) }),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/costs/{id}',
    tag: 'Costs',
    summary: 'Delete a cost sheet and its prices',
    permission: 'write',
    handler: async ({ deps, actor, params }) => {
      const sheet = await service.deleteCostsheet(deps, actor, params.id)
      return { id: sheet.id, message: 'Costsheet deleted successfully' }
    },
  }),
]
