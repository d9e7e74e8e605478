import { defineRoute, type Route } from '../route.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { recordRoutes } from '../record-routes.ts'
import { currencySchema, metadataSchema, versionField } from '../record-schema.ts'
import { toWire } from '../../domains/records/wire.ts'
import * as service from '../../domains/catalog/price-units/service.ts'

const name: JsonSchema = { type: 'string', minLength: 1, maxLength: 255 }

const createBody: JsonSchema = {
  type: 'object',
  required: ['name', 'code', 'symbol', 'base_currency', 'conversion_rate'],
  additionalProperties: false,
  properties: {
    name,
    code: { type: 'string', pattern: '^[A-Za-z0-9]{1,16}$', description: 'letters and digits, stored upper case; unique in the environment' },
    symbol: { type: 'string', minLength: 1, maxLength: 10 },
    base_currency: currencySchema,
    conversion_rate: { type: 'string', minLength: 1, maxLength: 40, description: 'what one unit is worth in base_currency, above zero: amount in the unit × conversion_rate = amount in base_currency' },
    metadata: metadataSchema,
  },
}

// Under /v1/prices: mounted before the price routes, whose /v1/prices/{id} would also match these paths.
export const priceUnitRoutes: Route[] = [
  defineRoute({
    method: 'GET',
    path: '/v1/prices/units/code/{code}',
    tag: 'Price units',
    summary: 'Get the price unit with this code',
    permission: 'read',
    handler: async ({ deps, actor, params }) => toWire(await service.getPriceUnitByCode(deps, actor, params.code)),
  }),
  ...recordRoutes({
    path: '/v1/prices/units',
    tag: 'Price units',
    noun: 'price unit',
    sortable: ['created_at', 'updated_at', 'name', 'code'],
    filters: service.FILTERS,
    createBody,
    // The code, base currency and rate are fixed: prices bill from them. Create a new unit instead.
    updateBody: { type: 'object', additionalProperties: false, properties: { name, metadata: metadataSchema, version: versionField } },
    service: service.priceUnits,
  }),
]
