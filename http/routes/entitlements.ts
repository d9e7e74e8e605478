import { defineRoute, type Route } from '../route.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { recordRoutes } from '../record-routes.ts'
import { dateTime, metadataSchema, versionField } from '../record-schema.ts'
import { toWire } from '../../domains/records/wire.ts'
import * as service from '../../domains/catalog/entitlements/service.ts'

const terms: Record<string, JsonSchema> = {
  is_enabled: { type: 'boolean' },
  usage_limit: { type: ['integer', 'null'], minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'null is unlimited' },
  usage_reset_period: { type: ['string', 'null'], enum: ['DAILY', 'WEEKLY', 'MONTHLY', 'QUARTERLY', 'HALF_YEARLY', 'ANNUAL', 'NEVER', null] },
  is_soft_limit: { type: 'boolean' },
  static_value: { type: ['string', 'null'], maxLength: 1000 },
  display_order: { type: 'integer' },
  parent_entitlement_id: { type: ['string', 'null'], minLength: 1, description: 'the entitlement this one stands in for (e.g. an addon\'s over its plan\'s), granting the same feature' },
  start_date: { ...dateTime, type: ['string', 'null'], description: 'from when the customer entitlement lookup grants it; null: always' },
  end_date: { ...dateTime, type: ['string', 'null'], description: 'until when (exclusive); null: no end' },
  metadata: metadataSchema,
}

/** One entitlement as a request gives it; plans and addons take a list of these. */
export const entitlementSchema: JsonSchema = {
  type: 'object',
  required: ['feature_id'],
  additionalProperties: false,
  properties: {
    feature_id: { type: 'string', minLength: 1 },
    feature_type: { type: 'string', enum: ['metered', 'boolean', 'static'], description: "optional; must be the feature's type" },
    ...terms,
  },
}

const createBody: JsonSchema = {
  ...entitlementSchema,
  properties: {
    ...(entitlementSchema.properties as object),
    plan_id: { type: 'string', minLength: 1 },
    entity_type: { type: 'string', enum: ['PLAN', 'ADDON'] },
    entity_id: { type: 'string', minLength: 1 },
  },
}

const ofOffering = (path: string, entityType: service.EntityType, noun: string): Route =>
  defineRoute({
    method: 'GET',
    path,
    readsUsage: false,
    tag: 'Entitlements',
    summary: `List the entitlements of a ${noun}, with their features`,
    permission: 'read',
    handler: async ({ deps, actor, params }) => {
      const found = toWire(await service.listEntitlementsOf(deps, actor, entityType, params.id)) as { items: unknown[] }
      // Flexprice's SDK reads a plan's list as a plan: `entitlements` beside `items` is what it shows.
      return entityType === 'PLAN' ? { ...found, entitlements: found.items } : found
    },
  })

export const entitlementRoutes: Route[] = [
  defineRoute<{ items: service.CreateEntitlementInput[] }>({
    method: 'POST',
    path: '/v1/entitlements/bulk',
    tag: 'Entitlements',
    summary: 'Create several entitlements in one transaction: all or none',
    permission: 'write',
    body: { type: 'object', required: ['items'], additionalProperties: false, properties: { items: { type: 'array', minItems: 1, maxItems: 100, items: createBody } } },
    status: 201,
    handler: async ({ deps, actor, body }) => ({ items: toWire(await service.createEntitlementsBulk(deps, actor, body.items)) }),
  }),
  ofOffering('/v1/plans/{id}/entitlements', 'PLAN', 'plan'),
  ofOffering('/v1/addons/{id}/entitlements', 'ADDON', 'addon'),
  ...recordRoutes({
    path: '/v1/entitlements',
    tag: 'Entitlements',
    noun: 'entitlement',
    sortable: ['created_at', 'updated_at', 'display_order'],
    filters: service.FILTERS,
    createBody,
    updateBody: { type: 'object', additionalProperties: false, properties: { ...terms, version: versionField } },
    service: {
      create: service.createEntitlement,
      get: service.getEntitlement,
      list: service.listEntitlements,
      update: service.updateEntitlement,
      remove: service.deleteEntitlement,
    },
  }),
]
