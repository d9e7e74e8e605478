// What one imported record of each entity may hold and what importing it does: customers are upserted by
// external_id (a record whose customer exists updates it), prices and features are created (a lookup_key already
// taken refuses the record). Events go to intake instead (run.ts). The schemas are the flat, file-friendly subset
// of the create requests; the services check the rest as they do for the API.
import { AppError } from '../../core/errors.ts'
import { PRICE_PERIODS } from '../../core/price-rules.ts'
import type { Actor } from '../../core/scope.ts'
import { decimalSchema, validateBody, type JsonSchema } from '../../core/validate.ts'
import type { Deps } from '../../infra/deps.ts'
import { features, type CreateFeatureInput } from '../catalog/features/service.ts'
import { createPrice, type CreatePriceInput } from '../catalog/prices/service.ts'
import { createCustomer, findCustomerByExternalId, updateCustomer, type CreateCustomerInput } from '../customers/service.ts'

export type ImportEntity = 'EVENTS' | 'CUSTOMERS' | 'PRICES' | 'FEATURES'

export interface Importer {
  /** CSV columns that are not plain text. */
  kinds: Readonly<Record<string, 'json' | 'integer'>>
  /** Writes one record (validated here); a refusal is an AppError naming the field. */
  write?(deps: Deps, actor: Actor, value: Record<string, unknown>): Promise<unknown>
}

const text = (maxLength = 255): JsonSchema => ({ type: 'string', minLength: 1, maxLength })
const nullableText = (maxLength = 255): JsonSchema => ({ type: ['string', 'null'], maxLength })
const metadata: JsonSchema = { type: 'object', additionalProperties: { type: 'string' } }
const amount = decimalSchema(false)
const dateTime: JsonSchema = { type: 'string', format: 'date-time' }
const row = (required: string[], properties: Record<string, JsonSchema>): JsonSchema => ({ type: 'object', required, additionalProperties: false, properties })

const customerRow = row(['external_id'], {
  external_id: text(),
  name: text(),
  email: nullableText(),
  address_line1: nullableText(),
  address_line2: nullableText(),
  address_city: nullableText(),
  address_state: nullableText(),
  address_postal_code: nullableText(),
  address_country: nullableText(),
  metadata,
})

const tiers: JsonSchema = {
  type: 'array',
  minItems: 1,
  maxItems: 100,
  items: { type: 'object', required: ['up_to', 'unit_amount'], additionalProperties: false, properties: { up_to: { type: ['integer', 'null'], minimum: 1 }, unit_amount: amount, flat_amount: amount } },
}

const priceRow = row(['currency', 'type', 'billing_model', 'billing_period'], {
  plan_id: text(),
  entity_type: { type: 'string', enum: ['PLAN', 'ADDON'] },
  entity_id: text(),
  currency: { type: 'string', pattern: '^[A-Za-z]{3}$' },
  type: { type: 'string', enum: ['FIXED', 'USAGE'] },
  billing_model: { type: 'string', enum: ['FLAT_FEE', 'PACKAGE', 'TIERED'] },
  billing_cadence: { type: 'string', enum: ['RECURRING', 'ONETIME'] },
  billing_period: { type: 'string', enum: [...PRICE_PERIODS] },
  billing_period_count: { type: 'integer', minimum: 1, maximum: 100 },
  invoice_cadence: { type: 'string', enum: ['ADVANCE', 'ARREAR'] },
  amount,
  tier_mode: { type: 'string', enum: ['VOLUME', 'SLAB'] },
  tiers,
  transform_quantity: { type: 'object', required: ['divide_by'], additionalProperties: false, properties: { divide_by: { type: 'integer', minimum: 1 }, round: { type: 'string', enum: ['up', 'down'] } } },
  trial_period_days: { type: 'integer', minimum: 0, maximum: 3650 },
  min_quantity: amount,
  meter_id: text(),
  price_unit_type: { type: 'string', enum: ['FIAT', 'CUSTOM'] },
  price_unit_id: text(),
  lookup_key: text(),
  description: nullableText(2000),
  display_name: nullableText(),
  start_date: dateTime,
  end_date: dateTime,
  metadata,
})

const featureRow = row(['name', 'type'], {
  name: text(),
  type: { type: 'string', enum: ['metered', 'boolean', 'static'] },
  meter_id: text(),
  lookup_key: text(),
  description: nullableText(2000),
  unit_singular: nullableText(),
  unit_plural: nullableText(),
  metadata,
})

async function upsertCustomer(deps: Deps, actor: Actor, value: Record<string, unknown>): Promise<unknown> {
  const input = validateBody<CreateCustomerInput>(customerRow, value)
  const existing = await findCustomerByExternalId(deps, actor, input.external_id).catch((err: unknown) => {
    if (err instanceof AppError && err.code === 'not_found') return undefined
    throw err
  })
  return existing ? updateCustomer(deps, actor, existing.id, input) : createCustomer(deps, actor, input)
}

export const IMPORTERS: Record<ImportEntity, Importer> = {
  EVENTS: { kinds: { properties: 'json' } },
  CUSTOMERS: { kinds: { metadata: 'json' }, write: upsertCustomer },
  PRICES: {
    kinds: { metadata: 'json', tiers: 'json', transform_quantity: 'json', billing_period_count: 'integer', trial_period_days: 'integer' },
    write: (deps, actor, value) => createPrice(deps, actor, validateBody<CreatePriceInput>(priceRow, value)),
  },
  FEATURES: { kinds: { metadata: 'json' }, write: (deps, actor, value) => features.create(deps, actor, validateBody<CreateFeatureInput>(featureRow, value)) },
}
