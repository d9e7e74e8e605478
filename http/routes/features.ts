import type { Route } from '../route.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { recordRoutes } from '../record-routes.ts'
import { metadataSchema, versionField } from '../record-schema.ts'
import { meterSchema } from './meters.ts'
import * as service from '../../domains/catalog/features/service.ts'

const level: JsonSchema = {
  type: 'object',
  required: ['threshold'],
  additionalProperties: false,
  properties: { condition: { type: 'string', enum: ['above', 'below'], default: 'above' }, threshold: { type: 'number' } },
}

const fields: Record<string, JsonSchema> = {
  name: { type: 'string', minLength: 1, maxLength: 255 },
  group_id: { type: ['string', 'null'], minLength: 1 },
  description: { type: ['string', 'null'], maxLength: 2000 },
  lookup_key: { type: ['string', 'null'], minLength: 1, maxLength: 255 },
  unit_singular: { type: ['string', 'null'], maxLength: 64 },
  unit_plural: { type: ['string', 'null'], maxLength: 64 },
  reporting_unit: {
    type: ['object', 'null'],
    required: ['conversion_rate'],
    additionalProperties: false,
    properties: {
      unit_singular: { type: 'string', maxLength: 64 },
      unit_plural: { type: 'string', maxLength: 64 },
      conversion_rate: { type: 'number', exclusiveMinimum: 0 },
    },
  },
  alert_settings: {
    type: ['object', 'null'],
    additionalProperties: false,
    properties: { alert_enabled: { type: 'boolean' }, info: level, warning: level, critical: level },
  },
  metadata: metadataSchema,
}

/** A feature as POST /v1/features takes it (the pricing parser's features are checked against it too). */
export const featureSchema: JsonSchema = {
  type: 'object',
  required: ['name', 'type'],
  additionalProperties: false,
  properties: {
    ...fields,
    type: { type: 'string', enum: ['metered', 'boolean', 'static'] },
    meter_id: { type: 'string', minLength: 1 },
    meter: { ...meterSchema, description: 'a new meter for a metered feature, created with it in one transaction (instead of meter_id)' },
  },
}

export const featureRoutes: Route[] = recordRoutes({
  path: '/v1/features',
  tag: 'Features',
  noun: 'feature',
  sortable: ['created_at', 'updated_at', 'name'],
  filters: service.FILTERS,
  createBody: featureSchema,
  // type and meter are fixed at creation: entitlements and prices were made for them.
  updateBody: { type: 'object', additionalProperties: false, properties: { ...fields, version: versionField } },
  service: {
    create: service.features.create,
    get: service.features.get,
    list: service.features.list,
    update: service.features.update,
    remove: service.features.remove,
  },
})
