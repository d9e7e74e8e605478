import { AGGREGATION_TYPES, type AggregationType } from '../../core/meters.ts'
import { WINDOW_SIZES, type WindowSize } from '../../core/periods.ts'
import { validationError } from '../../core/errors.ts'
import { defineRoute, type Route } from '../route.ts'
import type { JsonSchema } from '../../core/validate.ts'
import * as service from '../../domains/usage/queries/service.ts'
import { customerUsageSummary, type UsageSummaryQuery } from '../../domains/usage/queries/summary.ts'
import { toWire } from '../../domains/records/wire.ts'
import { nonNegativeDecimal } from '../record-schema.ts'
import { usageReconciliation, type ReconciliationQuery } from '../../domains/invoicing/reconciliation/service.ts'

interface RangeBody {
  customer_id?: string
  external_customer_id?: string
  start_time: string
  end_time: string
  filters?: Record<string, string[]>
  window_size?: WindowSize
  billing_anchor?: string
  timezone?: string
}

const range: Record<string, JsonSchema> = {
  customer_id: { type: 'string', minLength: 1 },
  external_customer_id: { type: 'string', minLength: 1 },
  start_time: { type: 'string', format: 'date-time' },
  end_time: { type: 'string', format: 'date-time' },
  filters: { type: 'object', additionalProperties: { type: 'array', minItems: 1, items: { type: 'string' } } },
  window_size: { type: 'string', enum: [...WINDOW_SIZES] },
  billing_anchor: { type: 'string', format: 'date-time' },
  timezone: { type: 'string', minLength: 1, maxLength: 64 },
}

const query = (b: RangeBody): service.UsageQuery => ({
  customerId: b.customer_id,
  externalCustomerId: b.external_customer_id,
  start: new Date(b.start_time),
  end: new Date(b.end_time),
  windowSize: b.window_size,
  billingAnchor: b.billing_anchor ? new Date(b.billing_anchor) : undefined,
  timeZone: b.timezone,
  filters: b.filters,
})

/** Decimal strings at the edge; each result's window_size is its window's start, as the reference API answers. */
const present = (r: service.UsageResult) => ({
  ...(r.meterId ? { meter_id: r.meterId } : {}),
  event_name: r.eventName,
  type: r.type,
  value: r.value.toFixed(),
  results: r.results.map((w) => ({
    window_size: w.windowStart.toISOString(),
    start: w.start.toISOString(),
    end: w.end.toISOString(),
    value: w.value.toFixed(),
    ...(w.groups.size > 1 || (w.groups.size === 1 && !w.groups.has('')) ? { groups: Object.fromEntries([...w.groups].map(([g, v]) => [g, v.toFixed()])) } : {}),
  })),
})

export const usageRoutes: Route[] = [
  defineRoute<Record<string, never>, ReconciliationQuery>({
    method: 'GET',
    path: '/v1/customers/{id}/usage/reconciliation',
    tag: 'Usage',
    summary: "Per meter, a customer's events of a range: received, stored, duplicates dropped, rejected, counted by the meter, billed on finalized invoices",
    permission: 'read',
    query: {
      type: 'object',
      additionalProperties: false,
      // Both required, checked once the customer is found: another environment's customer is a 404 whatever the query.
      properties: {
        start_time: { type: 'string', format: 'date-time', description: 'required' },
        end_time: { type: 'string', format: 'date-time', description: 'required; exclusive' },
        meter_ids: { type: 'array', minItems: 1, maxItems: 100, items: { type: 'string', minLength: 1 }, description: 'only these meters (default: every meter of an event name the customer sent, and every meter billed)' },
      },
    },
    handler: async ({ deps, actor, params, query }) => toWire(await usageReconciliation(deps, actor, params.id, query)),
  }),
  defineRoute<RangeBody & { meter_id: string }>({
    method: 'POST',
    path: '/v1/events/usage/meter',
    tag: 'Usage',
    summary: "A meter's usage over [start_time, end_time), per window (billing_anchor shapes MONTH windows)",
    permission: 'read',
    body: { type: 'object', required: ['meter_id', 'start_time', 'end_time'], additionalProperties: false, properties: { meter_id: { type: 'string', minLength: 1 }, ...range } },
    handler: async ({ deps, actor, body }) => present(await service.meterUsage(deps, actor, { ...query(body), meterId: body.meter_id })),
  }),
  defineRoute<RangeBody & { event_name: string; aggregation_type: AggregationType; property_name?: string; multiplier?: string; group_by?: string; bucket_size?: WindowSize }>({
    method: 'POST',
    path: '/v1/events/usage',
    tag: 'Usage',
    summary: 'Usage by event name and aggregation, without a stored meter (reads raw events)',
    permission: 'read',
    body: {
      type: 'object',
      required: ['event_name', 'aggregation_type', 'start_time', 'end_time'],
      additionalProperties: false,
      properties: {
        event_name: { type: 'string', minLength: 1 },
        aggregation_type: { type: 'string', enum: [...AGGREGATION_TYPES] },
        property_name: { type: 'string', minLength: 1 },
        multiplier: nonNegativeDecimal,
        group_by: { type: 'string', minLength: 1 },
        bucket_size: { type: 'string', enum: [...WINDOW_SIZES] },
        ...range,
      },
    },
    handler: async ({ deps, actor, body }) => {
      if (body.aggregation_type !== 'COUNT' && !body.property_name) throw validationError('property_name', `is required for ${body.aggregation_type}`)
      const aggregation = { type: body.aggregation_type, field: body.property_name, multiplier: body.multiplier, groupBy: body.group_by, bucketSize: body.bucket_size }
      return present(await service.eventUsage(deps, actor, { ...query(body), eventName: body.event_name, aggregation }))
    },
  }),
]

/**
 * GET /v1/customers/usage (Flexprice's customer usage summary): mounted before the customer routes, whose
 * GET /v1/customers/{id} would take "usage" for an id.
 */
export const customerUsageRoute: Route = defineRoute<Record<string, never>, UsageSummaryQuery>({
  method: 'GET',
  path: '/v1/customers/usage',
  tag: 'Usage',
  summary: "A customer's entitled features with their usage in the current billing period against the limit (customer by ?customer_id= or ?customer_lookup_key=)",
  permission: 'read',
  query: {
    type: 'object',
    additionalProperties: false,
    properties: {
      customer_id: { type: 'string', minLength: 1 },
      customer_lookup_key: { type: 'string', minLength: 1, description: "the customer's external_id" },
      feature_ids: { type: 'array', maxItems: 100, items: { type: 'string' } },
      feature_lookup_keys: { type: 'array', maxItems: 100, items: { type: 'string' } },
      subscription_ids: { type: 'array', maxItems: 100, items: { type: 'string' } },
    },
  },
  handler: async ({ deps, actor, query }) => {
    if (Boolean(query.customer_id) === Boolean(query.customer_lookup_key)) throw validationError('customer_id', 'give customer_id or customer_lookup_key, one of them')
    return toWire(await customerUsageSummary(deps, actor, query))
  },
})
