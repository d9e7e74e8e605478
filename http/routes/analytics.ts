// Usage analytics: POST /v1/events/analytics (Flexprice's getUsageAnalytics) and its CSV export. The body's
// snake_case is mapped to the service's request here, and the answer to the wire shape, in one place each.
import { D } from '../../core/money.ts'
import { WINDOW_SIZES, type WindowSize } from '../../core/periods.ts'
import { inReportingUnit } from '../../core/reporting-unit.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { toWire } from '../../domains/records/wire.ts'
import { EXPANDABLE, usageAnalytics, type Analytics, type AnalyticsItem, type AnalyticsRequest, type Expandable } from '../../domains/analytics/service.ts'
import { analyticsExport, COLUMN_SETS, type AnalyticsExportRequest } from '../../domains/analytics/export.ts'
import { sendCsv } from '../csv-stream.ts'
import { defineRoute, type Route } from '../route.ts'

export interface AnalyticsBody {
  start_time: string
  end_time: string
  external_customer_id?: string
  feature_ids?: string[]
  sources?: string[]
  group_by?: string[]
  window_size?: WindowSize
  billing_anchor?: string
  timezone?: string
  expand?: Expandable[]
  include_children?: boolean
  property_filters?: Record<string, string[]>
  limit?: number
  offset?: number
}

const strings = (maxItems: number): JsonSchema => ({ type: 'array', maxItems, items: { type: 'string', minLength: 1 } })

export const analyticsProperties: Record<string, JsonSchema> = {
  start_time: { type: 'string', format: 'date-time' },
  end_time: { type: 'string', format: 'date-time' },
  external_customer_id: { type: 'string', minLength: 1 },
  feature_ids: strings(100),
  sources: { type: 'array', maxItems: 100, items: { type: 'string' } },
  group_by: { ...strings(10), description: 'source, feature_id, properties.<name>' },
  window_size: { type: 'string', enum: [...WINDOW_SIZES] },
  billing_anchor: { type: 'string', format: 'date-time' },
  timezone: { type: 'string', minLength: 1, maxLength: 64 },
  expand: { type: 'array', maxItems: EXPANDABLE.length, items: { type: 'string', enum: [...EXPANDABLE] } },
  include_children: { type: 'boolean' },
  property_filters: { type: 'object', maxProperties: 10, additionalProperties: { type: 'array', minItems: 1, maxItems: 100, items: { type: 'string' } } },
  limit: { type: 'integer', minimum: 1, maximum: 1000, description: 'groups per page (default 50, at most 1000)' },
  offset: { type: 'integer', minimum: 0 },
}

export const analyticsRequest = (b: AnalyticsBody): AnalyticsRequest => ({
  start: new Date(b.start_time),
  end: new Date(b.end_time),
  externalCustomerId: b.external_customer_id,
  featureIds: b.feature_ids,
  sources: b.sources,
  groupBy: b.group_by ?? [],
  windowSize: b.window_size,
  billingAnchor: b.billing_anchor ? new Date(b.billing_anchor) : undefined,
  timeZone: b.timezone,
  expand: b.expand ?? [],
  includeChildren: b.include_children ?? false,
  propertyFilters: b.property_filters,
  limit: b.limit ?? 50,
  offset: b.offset ?? 0,
})

/** Usage in the feature's reporting unit when it has one (core/reporting-unit.ts, as the invoice PDF shows it), else with the feature's unit. */
function usageDisplay(item: AnalyticsItem): string {
  const f = item.feature
  if (f.reporting_unit) return inReportingUnit(new D(item.totalUsage), f.reporting_unit)
  return f.unit_plural ? `${item.totalUsage} ${f.unit_plural}` : item.totalUsage
}

const presentItem = (item: AnalyticsItem, currency: string, windowSize: WindowSize | undefined) => {
  const line = item.line
  const c = item.commitment
  return {
    feature_id: item.feature.id,
    feature: item.expanded.feature,
    meter_id: item.meter.id,
    meter: item.expanded.meter,
    price_id: line?.price_id ?? null,
    price: item.expanded.price,
    plan_id: line?.entity_type === 'plan' ? line.entity_id : null,
    plan: item.expanded.plan,
    add_on_id: line?.entity_type === 'addon' ? line.entity_id : null,
    addon: item.expanded.addon,
    subscription_id: line?.subscription_id ?? null,
    sub_line_item_id: line?.id ?? null,
    subscription_line_item: item.expanded.subscription_line_item,
    name: item.feature.name,
    event_name: item.meter.event_name,
    aggregation_type: item.meter.aggregation.type,
    unit: item.feature.unit_singular,
    unit_plural: item.feature.unit_plural,
    reporting_unit: item.feature.reporting_unit,
    source: item.source,
    sources: item.sources,
    group: item.group,
    properties: item.properties,
    currency,
    event_count: item.eventCount,
    total_usage: item.totalUsage,
    total_usage_display: usageDisplay(item),
    total_cost: item.totalCost,
    commitment_info: c && {
      type: 'amount',
      amount: c.amount,
      overage_factor: c.overage_factor,
      true_up_enabled: c.true_up_enabled,
      computed_commitment_utilized_amount: c.utilized,
      computed_overage_amount: c.overage,
    },
    window_size: windowSize ?? null,
    points: item.points?.map((p) => ({
      timestamp: p.timestamp,
      usage: p.usage,
      cost: p.cost,
      event_count: p.eventCount,
      ...(p.commitment && { computed_commitment_utilized_amount: p.commitment.utilized, computed_overage_amount: p.commitment.overage, computed_true_up_amount: new D(0) }),
    })),
  }
}

const present = (a: Analytics, windowSize: WindowSize | undefined) =>
  toWire({ currency: a.currency, total_cost: a.totalCost, custom_analytics: a.custom, items: a.items.map((i) => presentItem(i, a.currency, windowSize)), pagination: a.pagination })

export const analyticsRoutes: Route[] = [
  defineRoute<AnalyticsBody>({
    method: 'POST',
    path: '/v1/events/analytics',
    tag: 'Usage',
    summary: 'Usage and cost of metered features over [start_time, end_time), grouped by source, feature and event properties, per window',
    permission: 'read',
    body: { type: 'object', required: ['start_time', 'end_time'], additionalProperties: false, properties: analyticsProperties },
    handler: async ({ deps, actor, body }) => present(await usageAnalytics(deps, actor, analyticsRequest(body)), body.window_size),
  }),
  defineRoute<AnalyticsBody & { format?: 'csv'; metadata_columns?: string[]; columns?: AnalyticsExportRequest['columnSets'] }>({
    method: 'POST',
    path: '/v1/events/analytics/export',
    tag: 'Usage',
    summary: 'The analytics as CSV streamed row by row: one row per customer, feature, source, property values and window with events, its cost, and customer metadata columns',
    permission: 'read',
    body: {
      type: 'object',
      required: ['start_time', 'end_time'],
      additionalProperties: false,
      properties: {
        ...Object.fromEntries(Object.entries(analyticsProperties).filter(([k]) => k !== 'limit' && k !== 'offset' && k !== 'expand')),
        format: { type: 'string', enum: ['csv'] },
        metadata_columns: { ...strings(50), description: 'customer metadata keys, one column each' },
        columns: {
          type: 'array',
          maxItems: COLUMN_SETS.length,
          items: { type: 'string', enum: [...COLUMN_SETS] },
          description: 'column sets to add: reconciliation (row_type, received, stored, duplicates, rejected, counted, billed, billed_quantity; one row per customer and meter over the range after the window rows)',
        },
      },
    },
    produces: 'text/csv',
    handler: async ({ deps, actor, body, ctx }) => {
      await sendCsv(ctx, deps, analyticsExport(deps, actor, { ...analyticsRequest(body), metadataColumns: body.metadata_columns ?? [], columnSets: body.columns ?? [] }))
      return undefined
    },
  }),
]
