import { defineRoute, type Route } from '../route.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { recordRoutes } from '../record-routes.ts'
import { metadataSchema, versionField } from '../record-schema.ts'
import { toWire } from '../../domains/records/wire.ts'
import * as service from '../../domains/customers/service.ts'

const text = (max = 255): JsonSchema => ({ type: ['string', 'null'], maxLength: max })

const fields: Record<string, JsonSchema> = {
  external_id: { type: 'string', minLength: 1, maxLength: 255 },
  name: { type: 'string', maxLength: 255 },
  email: { type: ['string', 'null'], format: 'email', maxLength: 320 },
  address_line1: text(),
  address_line2: text(),
  address_city: text(),
  address_state: text(),
  address_postal_code: text(32),
  address_country: { type: ['string', 'null'], description: 'ISO 3166-1 alpha-2 code' },
  metadata: metadataSchema,
  integrations: {
    type: 'array',
    maxItems: 50,
    items: {
      type: 'object',
      required: ['provider_type', 'provider_entity_id'],
      additionalProperties: false,
      properties: {
        provider_type: { type: 'string', minLength: 1, maxLength: 64 },
        provider_entity_id: { type: 'string', minLength: 1, maxLength: 255 },
        metadata: metadataSchema,
      },
    },
  },
}

export const customerRoutes: Route[] = [
  defineRoute({
    method: 'GET',
    path: '/v1/customers/external/{external_id}',
    tag: 'Customers',
    summary: 'Get a customer by the id your system gives it (external_id)',
    permission: 'read',
    handler: async ({ deps, actor, params }) => toWire(await service.getCustomerByExternalId(deps, actor, params.external_id)),
  }),
  ...recordRoutes({
    path: '/v1/customers',
    tag: 'Customers',
    noun: 'customer',
    sortable: ['created_at', 'updated_at', 'name', 'external_id'],
    filters: service.FILTERS,
    createBody: { type: 'object', required: ['external_id'], additionalProperties: false, properties: fields },
    updateBody: { type: 'object', additionalProperties: false, properties: { ...fields, version: versionField } },
    service: {
      create: service.createCustomer,
      get: service.getCustomer,
      list: service.listCustomers,
      update: service.updateCustomer,
      remove: service.deleteCustomer,
    },
  }),
]
