import { BILLING_PERIODS } from '../../core/periods.ts'
import { defineRoute, type Route } from '../route.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { recordRoutes } from '../record-routes.ts'
import { dateTime, fromListQuery, listQuery, metadataSchema, nonNegativeDecimal, versionField } from '../record-schema.ts'
import { toWire } from '../../domains/records/wire.ts'
import * as service from '../../domains/credits/grants/service.ts'

const id: JsonSchema = { type: 'string', minLength: 1 }
const TAG = 'Credit grants'
const name: JsonSchema = { type: 'string', minLength: 1, maxLength: 255 }

const createBody: JsonSchema = {
  type: 'object',
  required: ['name', 'scope', 'credits', 'cadence'],
  additionalProperties: false,
  properties: {
    name,
    scope: { type: 'string', enum: ['PLAN', 'SUBSCRIPTION'] },
    plan_id: id,
    subscription_id: id,
    credits: nonNegativeDecimal,
    cadence: { type: 'string', enum: ['ONETIME', 'RECURRING'] },
    period: { type: 'string', enum: [...BILLING_PERIODS] },
    period_count: { type: 'integer', minimum: 1, maximum: 1000 },
    expiration_type: { type: 'string', enum: ['NEVER', 'DURATION', 'BILLING_CYCLE'] },
    expiration_duration: { type: 'integer', minimum: 1, maximum: 100_000 },
    expiration_duration_unit: { type: 'string', enum: ['DAY', 'WEEK', 'MONTH', 'YEAR'] },
    priority: { type: 'integer', minimum: 0, description: 'lower is consumed first' },
    conversion_rate: nonNegativeDecimal,
    topup_conversion_rate: nonNegativeDecimal,
    credit_grant_anchor: dateTime,
    start_date: dateTime,
    end_date: dateTime,
    metadata: metadataSchema,
  },
}

export const creditGrantRoutes: Route[] = [
  ...recordRoutes({
    path: '/v1/creditgrants',
    tag: TAG,
    noun: 'credit grant',
    sortable: ['created_at', 'updated_at', 'name'],
    filters: service.FILTERS,
    createBody,
    updateBody: { type: 'object', additionalProperties: false, properties: { name, metadata: metadataSchema, version: versionField } },
    service: {
      create: service.createCreditGrant,
      get: service.getCreditGrant,
      list: service.listCreditGrants,
      update: service.updateCreditGrant,
      remove: service.deleteCreditGrant,
    },
  }),
  defineRoute<Record<string, never>, Record<string, unknown>>({
    method: 'GET',
    path: '/v1/creditgrants/{id}/applications',
    tag: TAG,
    summary: "A grant's applications, one per subscription and period, with their status",
    permission: 'read',
    query: listQuery(['scheduled_for', 'created_at'], service.APPLICATION_FILTERS),
    handler: async ({ deps, actor, params, query }) => toWire(await service.listGrantApplications(deps, actor, params.id, fromListQuery(query))),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/plans/{id}/creditgrants',
    tag: TAG,
    summary: "A plan's credit grants",
    permission: 'read',
    handler: async ({ deps, actor, params }) => toWire(await service.listGrantsOfPlan(deps, actor, params.id)),
  }),
  defineRoute<Record<string, never>, Record<string, unknown>>({
    method: 'GET',
    path: '/v1/subscriptions/{id}/grants/upcoming',
    tag: TAG,
    summary: 'Credit grant applications of a subscription not applied yet, soonest first',
    permission: 'read',
    query: listQuery(['scheduled_for'], {}),
    handler: async ({ deps, actor, params, query }) => toWire(await service.upcomingGrants(deps, actor, params.id, fromListQuery(query))),
  }),
  defineRoute<Record<string, never>, Record<string, unknown>>({
    method: 'GET',
    path: '/v1/customers/{id}/grants/upcoming',
    tag: TAG,
    summary: "Credit grant applications of all a customer's subscriptions not applied yet, soonest first",
    permission: 'read',
    query: listQuery(['scheduled_for'], {}),
    handler: async ({ deps, actor, params, query }) => toWire(await service.customerUpcomingGrants(deps, actor, params.id, fromListQuery(query))),
  }),
]
