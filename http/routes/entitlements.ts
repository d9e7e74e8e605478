import { defineRoute, type Route } from '../route.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { recordRoutes } from '../record-routes.ts'
import { metadataSchema, versionField } from '../record-schema.ts'
import { toWire } from '../../domains/records/wire.ts'
import * as service from '../../domains/catalog/entitlements/service.ts'

const terms: Record<string, JsonSchema> = {
  is_enabled: { type: 'boolean' },
  usage_limit: { type: ['integer', 'null'], minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'null is unlimited' },
  usage_reset_period: { type: ['string', 'null'], enum: ['DAILY', 'WEEKLY', 'MONTHLY', 'QUARTERLY', 'HALF_YEARLY', 'ANNUAL', 'NEVER', null] },
  is_soft_limit: { type: 'boolean' },
  static_value: { type: ['string', 'null'], maxLength: 1000 },
  display_order: { type: 'integer' },
  metadata: metadataSchema,
}

/** One entitlement as a request gives it; plans and addons take a list of these. */
export const entitlementSchema: JsonSchema = {
  type: 'object',
  required: ['feature_id'],
  additionalProperties: false,
  properties: { feature_id: { type: 'string', minLength: 1 }, ...terms },
}

const ofOffering = (path: string, entityType: service.EntityType, noun: string): Route =>
  defineRoute({
    method: 'GET',
    path,
    tag: 'Entitlements',
    summary: `List the entitlements of a ${noun}, with their features`,
    permission: 'read',
    handler: async ({ deps, actor, params }) => toWire(await service.listEntitlementsOf(deps, actor, entityType, params.id)),
  })

export const entitlementRoutes: Route[] = [
  ofOffering('/v1/plans/{id}/entitlements', 'PLAN', 'plan'),
  ofOffering('/v1/addons/{id}/entitlements', 'ADDON', 'addon'),
  ...recordRoutes({
    path: '/v1/entitlements',
    tag: 'Entitlements',
    noun: 'entitlement',
    sortable: ['created_at', 'updated_at', 'display_order'],
    filters: service.FILTERS,
    createBody: {
      ...entitlementSchema,
      properties: {
        ...(entitlementSchema.properties as object),
        plan_id: { type: 'string', minLength: 1 },
        entity_type: { type: 'string', enum: ['PLAN', 'ADDON'] },
        entity_id: { type: 'string', minLength: 1 },
      },
    },
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
