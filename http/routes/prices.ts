import { PRICE_PERIODS } from '../../core/price-rules.ts'
import { defineRoute, type Route } from '../route.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { recordRoutes } from '../record-routes.ts'
import { currencySchema, dateTime, metadataSchema, nonNegativeDecimal, versionField } from '../record-schema.ts'
import { toWire } from '../../domains/records/wire.ts'
import type { Actor } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import * as service from '../../domains/catalog/prices/service.ts'

const tiers: JsonSchema = {
  type: 'array',
  minItems: 1,
  maxItems: 100,
  items: {
    type: 'object',
    required: ['up_to', 'unit_amount'],
    additionalProperties: false,
    properties: { up_to: { type: ['integer', 'null'], minimum: 1, maximum: Number.MAX_SAFE_INTEGER }, unit_amount: nonNegativeDecimal, flat_amount: nonNegativeDecimal },
  },
}

const details: Record<string, JsonSchema> = {
  group_id: { type: ['string', 'null'], minLength: 1 },
  lookup_key: { type: ['string', 'null'], minLength: 1, maxLength: 255 },
  description: { type: ['string', 'null'], maxLength: 2000 },
  display_name: { type: ['string', 'null'], maxLength: 255 },
  metadata: metadataSchema,
}

/** One price as a request gives it; plans and addons take a list of these. */
export const priceSchema: JsonSchema = {
  type: 'object',
  required: ['currency', 'type', 'billing_model', 'billing_period'],
  additionalProperties: false,
  properties: {
    ...details,
    currency: currencySchema,
    type: { type: 'string', enum: ['FIXED', 'USAGE'] },
    billing_model: { type: 'string', enum: ['FLAT_FEE', 'PACKAGE', 'TIERED'] },
    billing_cadence: { type: 'string', enum: ['RECURRING', 'ONETIME'] },
    billing_period: { type: 'string', enum: [...PRICE_PERIODS] },
    billing_period_count: { type: 'integer', minimum: 1, maximum: 100 },
    invoice_cadence: { type: 'string', enum: ['ADVANCE', 'ARREAR'] },
    amount: nonNegativeDecimal,
    tier_mode: { type: 'string', enum: ['VOLUME', 'SLAB'] },
    tiers,
    transform_quantity: {
      type: 'object',
      required: ['divide_by'],
      additionalProperties: false,
      properties: { divide_by: { type: 'integer', minimum: 1 }, round: { type: 'string', enum: ['up', 'down'], default: 'up' } },
    },
    trial_period_days: { type: 'integer', minimum: 0 },
    min_quantity: nonNegativeDecimal,
    meter_id: { type: 'string', minLength: 1 },
    price_unit_type: { type: 'string', enum: ['FIAT', 'CUSTOM'] },
    price_unit: { type: 'string', minLength: 1, maxLength: 16 },
    price_unit_amount: nonNegativeDecimal,
    price_unit_tiers: tiers,
    conversion_rate: nonNegativeDecimal,
    price_unit_id: { type: 'string', minLength: 1, description: 'a price unit of the catalog (GET /v1/prices/units): its code and rate are taken' },
    price_unit_config: {
      type: 'object',
      required: ['price_unit'],
      additionalProperties: false,
      description: "Flexprice's form of price_unit, price_unit_amount and price_unit_tiers",
      properties: { price_unit: { type: 'string', minLength: 1, maxLength: 16 }, amount: nonNegativeDecimal, price_unit_tiers: tiers },
    },
    start_date: dateTime,
    end_date: dateTime,
  },
}

/** One price as answered, with its unit, meter and group. */
const one = async (deps: Deps, actor: Actor, row: Promise<service.PriceRow>) => (await service.expandedPrices(deps, actor, [await row]))[0]

const owner: Record<string, JsonSchema> = {
  plan_id: { type: 'string', minLength: 1 },
  entity_type: { type: 'string', enum: ['PLAN', 'ADDON', 'COSTSHEET'] },
  entity_id: { type: 'string', minLength: 1 },
}

const createBody: JsonSchema = { ...priceSchema, properties: { ...(priceSchema.properties as object), ...owner } }

export const priceRoutes: Route[] = [
  defineRoute<{ items: service.CreatePriceInput[] }>({
    method: 'POST',
    path: '/v1/prices/bulk',
    tag: 'Prices',
    summary: 'Create several prices in one transaction: all or none',
    permission: 'write',
    body: { type: 'object', required: ['items'], additionalProperties: false, properties: { items: { type: 'array', minItems: 1, maxItems: 100, items: createBody } } },
    status: 201,
    handler: async ({ deps, actor, body }) => ({ items: toWire(await service.expandedPrices(deps, actor, await service.createPricesBulk(deps, actor, body.items))) }),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/prices/lookup/{lookup_key}',
    tag: 'Prices',
    summary: 'Get the published price with this lookup_key',
    permission: 'read',
    handler: async ({ deps, actor, params }) => toWire(await one(deps, actor, service.getPriceByLookupKey(deps, actor, params.lookup_key))),
  }),
  ...recordRoutes({
    path: '/v1/prices',
    tag: 'Prices',
    noun: 'price',
    sortable: ['created_at', 'updated_at'],
    filters: service.FILTERS,
    createBody,
    // Billing terms are fixed once a price exists: subscriptions bill from them. Create a new price instead.
    updateBody: { type: 'object', additionalProperties: false, properties: { ...details, version: versionField } },
    service: {
      create: (deps, actor, body) => one(deps, actor, service.createPrice(deps, actor, body)),
      get: (deps, actor, id) => one(deps, actor, service.getPrice(deps, actor, id)),
      list: async (deps, actor, request) => {
        const page = await service.listPrices(deps, actor, request)
        return { ...page, items: await service.expandedPrices(deps, actor, page.items) }
      },
      update: (deps, actor, id, body) => one(deps, actor, service.updatePrice(deps, actor, id, body)),
      remove: (deps, actor, id) => one(deps, actor, service.deletePrice(deps, actor, id)),
    },
  }),
]
