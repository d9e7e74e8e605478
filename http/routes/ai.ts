// POST /v1/ai/pricing/parse: a plain-language pricing description → meters, features and plans ready to
// create; ?apply=true creates them in one transaction. The configuration's schema is made of the create
// endpoints' own schemas (a ref where an id would go), so what a model answers is held to exactly what
// those endpoints accept.
import { defineRoute, type Route } from '../route.ts'
import { validateBody, type JsonSchema } from '../../core/validate.ts'
import type { PricingConfig } from '../../core/pricing-parse/config.ts'
import { currencySchema } from '../record-schema.ts'
import { entitlementSchema } from './entitlements.ts'
import { featureSchema } from './features.ts'
import { meterSchema } from './meters.ts'
import { priceSchema } from './prices.ts'
import { toWire } from '../../domains/records/wire.ts'
import { withCreditGrants } from '../../domains/credits/grants/service.ts'
import { applyPricing } from '../../domains/catalog/pricing/apply.ts'
import { parsePricing, type ParseInput } from '../../domains/catalog/pricing/service.ts'

const propertiesOf = (schema: JsonSchema, ...leave: string[]): Record<string, JsonSchema> =>
  Object.fromEntries(Object.entries(schema.properties as Record<string, JsonSchema>).filter(([name]) => !leave.includes(name)))

const ref: JsonSchema = { type: 'string', minLength: 1, maxLength: 100, description: 'names a record of this configuration' }
const required = (schema: JsonSchema) => schema.required as string[]

const meterDraft: JsonSchema = {
  type: 'object',
  required: ['ref', 'name', 'event_name', 'aggregation'],
  additionalProperties: false,
  properties: { ref, ...propertiesOf(meterSchema, 'filters', 'reset_usage', 'metadata') },
}

const featureDraft: JsonSchema = {
  type: 'object',
  required: ['ref', 'lookup_key', ...required(featureSchema)],
  additionalProperties: false,
  properties: { ref, ...propertiesOf(featureSchema, 'meter_id', 'group_id', 'reporting_unit', 'alert_settings', 'metadata'), lookup_key: { type: 'string', minLength: 1, maxLength: 255 }, meter_ref: ref },
}

const priceDraft: JsonSchema = {
  type: 'object',
  required: required(priceSchema),
  additionalProperties: false,
  properties: { ...propertiesOf(priceSchema, 'meter_id', 'group_id'), meter_ref: ref },
}

const entitlementDraft: JsonSchema = {
  type: 'object',
  required: ['feature_ref'],
  additionalProperties: false,
  properties: { ...propertiesOf(entitlementSchema, 'feature_id'), feature_ref: ref },
}

const warning: JsonSchema = {
  type: 'object',
  required: ['text', 'message'],
  additionalProperties: false,
  properties: { text: { type: 'string', maxLength: 4000 }, message: { type: 'string', maxLength: 1000 }, left_out: { type: 'boolean', default: false } },
}

/** A pricing configuration: what the parser answers, and what a model's answer must be. */
const configSchema: JsonSchema = {
  type: 'object',
  required: ['currency', 'meters', 'features', 'plans'],
  additionalProperties: false,
  properties: {
    currency: currencySchema,
    meters: { type: 'array', maxItems: 50, items: meterDraft },
    features: { type: 'array', maxItems: 100, items: featureDraft },
    plans: {
      type: 'array',
      minItems: 1,
      maxItems: 20,
      items: {
        type: 'object',
        required: ['name', 'lookup_key', 'prices', 'entitlements'],
        additionalProperties: false,
        properties: {
          name: { type: 'string', minLength: 1, maxLength: 255 },
          lookup_key: { type: 'string', minLength: 1, maxLength: 255 },
          description: { type: 'string', maxLength: 2000 },
          prices: { type: 'array', maxItems: 100, items: priceDraft },
          entitlements: { type: 'array', maxItems: 200, items: entitlementDraft },
        },
      },
    },
    warnings: { type: 'array', maxItems: 100, items: warning, default: [] },
  },
}

/** A model's answer held to the configuration's schema; currency codes in capitals, as the schema's pattern allows either. */
function shape(value: unknown): PricingConfig {
  const config = validateBody<PricingConfig>(configSchema, value)
  config.currency = config.currency.toUpperCase()
  for (const plan of config.plans) for (const price of plan.prices) price.currency = price.currency.toUpperCase()
  return config
}

const body: JsonSchema = {
  type: 'object',
  required: ['description'],
  additionalProperties: false,
  properties: {
    description: { type: 'string', minLength: 1, maxLength: 4000, description: 'the pricing in plain language' },
    currency: { ...currencySchema, description: 'the currency of amounts written without one' },
    plan_name: { type: 'string', minLength: 1, maxLength: 255, description: 'the plan name when the description names none (default Standard)' },
    parser: { type: 'string', enum: ['auto', 'rules', 'model'], default: 'auto', description: 'auto: the rules, and the model (if configured) when they leave something out' },
  },
}

export const aiRoutes: Route[] = [
  defineRoute<ParseInput, { apply?: boolean }>({
    method: 'POST',
    path: '/v1/ai/pricing/parse',
    tag: 'AI',
    summary: 'Parse a plain-language pricing description into meters, features, plans, prices and entitlements; ?apply=true creates them in one transaction (201)',
    permission: 'write',
    body,
    query: { type: 'object', additionalProperties: false, properties: { apply: { type: 'boolean', default: false } } },
    response: { ...configSchema, properties: { ...(configSchema.properties as object), source: { type: 'string', enum: ['rules', 'model'] }, applied: { type: 'object' } } },
    handler: async ({ deps, actor, body, query, ctx }) => {
      const result = await parsePricing(deps, body, shape)
      if (!query.apply) return toWire(result)
      const applied = await applyPricing(deps, actor, result)
      ctx.status = 201
      ctx.body = toWire({ ...result, applied: { ...applied, plans: await withCreditGrants(deps.sql, actor, applied.plans) } })
      return undefined
    },
  }),
]
