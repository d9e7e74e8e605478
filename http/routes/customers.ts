import { defineRoute, type Route } from '../route.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { recordRoutes } from '../record-routes.ts'
import { metadataSchema, versionField } from '../record-schema.ts'
import { toWire } from '../../domains/records/wire.ts'
import { validationError } from '../../core/errors.ts'
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

/** Flexprice's name for the integration mappings: `integration_entity_mapping: [{provider, id}]`. */
const flexpriceMappings: JsonSchema = {
  type: 'array',
  maxItems: 50,
  items: {
    type: 'object',
    required: ['provider', 'id'],
    additionalProperties: false,
    properties: { provider: { type: 'string', minLength: 1, maxLength: 64 }, id: { type: 'string', minLength: 1, maxLength: 255 } },
  },
}

type Body = Record<string, unknown> & { integration_entity_mapping?: { provider: string; id: string }[] }

/** Takes Flexprice's `integration_entity_mapping` as `integrations` (sending both is refused). */
function mappings<T>({ integration_entity_mapping: flex, ...body }: Body): T {
  if (!flex) return body as T
  if (body.integrations) throw validationError('integration_entity_mapping', 'send integrations or integration_entity_mapping, not both')
  return { ...body, integrations: flex.map((m) => ({ provider_type: m.provider, provider_entity_id: m.id })) } as T
}

const updateBody: JsonSchema = { type: 'object', additionalProperties: false, properties: { ...fields, integration_entity_mapping: flexpriceMappings, version: versionField } }

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
    createBody: {
      type: 'object',
      required: ['external_id'],
      additionalProperties: false,
      // test_clock_id: the sandbox test clock the customer lives on (docs/test-clocks.md); set at creation only.
      properties: { ...fields, integration_entity_mapping: flexpriceMappings, test_clock_id: { type: 'string', minLength: 1, maxLength: 64 } },
    },
    updateBody,
    deleted: 'no_content',
    service: {
      create: (deps, actor, body) => service.createCustomer(deps, actor, mappings<service.CreateCustomerInput>(body)),
      get: service.getCustomer,
      list: service.listCustomers,
      update: (deps, actor, id, body) => service.updateCustomer(deps, actor, id, mappings<service.UpdateCustomerInput>(body)),
      remove: service.deleteCustomer,
    },
  }),
  defineRoute<Body, { id?: string; external_customer_id?: string }>({
    method: 'PUT',
    path: '/v1/customers',
    tag: 'Customers',
    summary: "Update the customer named by ?id= or ?external_customer_id= (Flexprice's form of PUT /v1/customers/{id})",
    permission: 'write',
    query: {
      type: 'object',
      additionalProperties: false,
      properties: { id: { type: 'string', minLength: 1 }, external_customer_id: { type: 'string', minLength: 1 } },
    },
    body: updateBody,
    handler: async ({ deps, actor, query, body }) => {
      const id = await service.resolveCustomerId(deps, actor, query)
      return toWire(await service.updateCustomer(deps, actor, id, mappings<service.UpdateCustomerInput>(body)))
    },
  }),
  defineRoute<service.MappingCreateInput>({
    method: 'POST',
    path: '/v1/entity-integration-mappings',
    tag: 'Customers',
    summary: "Map a customer to its id at a provider (Flexprice's entity integration mapping; customers are the entities mapped here)",
    permission: 'write',
    body: {
      type: 'object',
      required: ['entity_id', 'entity_type', 'provider_type', 'provider_entity_id'],
      additionalProperties: false,
      properties: {
        entity_id: { type: 'string', minLength: 1 },
        entity_type: { type: 'string', enum: ['customer'] },
        provider_type: { type: 'string', minLength: 1, maxLength: 64 },
        provider_entity_id: { type: 'string', minLength: 1, maxLength: 255 },
        metadata: metadataSchema,
      },
    },
    status: 201,
    handler: async ({ deps, actor, body }) => toWire(await service.addMapping(deps, actor, body)),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/entity-integration-mappings/{id}',
    tag: 'Customers',
    summary: 'End a mapping (204); its provider id may be mapped again',
    permission: 'write',
    status: 204,
    handler: async ({ deps, actor, params, ctx }) => {
      await service.removeMapping(deps, actor, params.id)
      ctx.status = 204
      return undefined
    },
  }),
]
