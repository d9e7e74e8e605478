// A pricing configuration ready to create: meters, features and plans (with their prices and
// entitlements), each the body its create endpoint takes, except that records not created yet are named
// by `ref`: a price's `meter_ref` and a feature's `meter_ref` name a meter of `meters`, an entitlement's
// `feature_ref` a feature of `features`. Creating it replaces each ref with the id it was created as.
// checkConfig holds a configuration to the rules creation would apply, so one from a language model is
// refused here, whole, before anything is written.
import { entitlementTerms, type EntitlementTermsInput, type FeatureType } from '../entitlements.ts'
import { AppError, validationError } from '../errors.ts'
import { needsField, type AggregationType } from '../meters.ts'
import { priceTerms, type PriceInput } from '../price-rules.ts'
import { ISO_CURRENCIES } from './lexicon.ts'

export interface MeterDraft {
  ref: string
  name: string
  event_name: string
  aggregation: { type: AggregationType; field?: string }
}

export interface FeatureDraft {
  ref: string
  name: string
  type: FeatureType
  lookup_key: string
  meter_ref?: string
  unit_singular?: string
  unit_plural?: string
  description?: string
}

export type PriceDraft = Omit<PriceInput, 'meter_id'> & { meter_ref?: string; display_name?: string; description?: string }

export interface EntitlementDraft extends EntitlementTermsInput {
  feature_ref: string
}

export interface PlanDraft {
  name: string
  lookup_key: string
  description?: string
  prices: PriceDraft[]
  entitlements: EntitlementDraft[]
}

/** Something of the description that was not placed, or an assumption made: the phrase and why. */
export interface Warning {
  text: string
  message: string
  /** True when part of the description is not in the configuration (not merely an assumption or a note). */
  left_out?: boolean
}

export interface PricingConfig {
  currency: string
  meters: MeterDraft[]
  features: FeatureDraft[]
  plans: PlanDraft[]
  warnings: Warning[]
}

/** Runs a check of one element; its validation errors are prefixed with the element's path ("plans[0].prices[1]"). */
function at<T>(path: string, check: () => T): T {
  try {
    return check()
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== 'validation_error') throw err
    const details = Object.fromEntries(Object.entries(err.details).map(([k, v]) => [`${path}.${k}`, v]))
    throw new AppError('validation_error', `${path}.${err.message}`, details)
  }
}

function unique(values: string[], field: (i: number) => string): void {
  const seen = new Set<string>()
  values.forEach((v, i) => {
    if (seen.has(v)) throw validationError(field(i), `${JSON.stringify(v)} is used twice`)
    seen.add(v)
  })
}

/**
 * Checks a configuration against the rules its creation applies: known currencies, meters with the field
 * their aggregation needs, features whose type matches their meter, every price by the price rules, every
 * entitlement by its feature's type, and refs that resolve. Throws validation_error naming the field.
 */
export function checkConfig(config: PricingConfig): void {
  if (!ISO_CURRENCIES.has(config.currency)) throw validationError('currency', `${JSON.stringify(config.currency)} is not an ISO 4217 currency`)
  unique(config.meters.map((m) => m.ref), (i) => `meters[${i}].ref`)
  config.meters.forEach((m, i) =>
    at(`meters[${i}]`, () => {
      if (!m.event_name.trim()) throw validationError('event_name', 'must not be blank')
      if (needsField(m.aggregation.type) && !m.aggregation.field?.trim()) throw validationError('aggregation.field', `is required for ${m.aggregation.type}`)
    }),
  )
  const meters = new Set(config.meters.map((m) => m.ref))
  unique(config.features.map((f) => f.ref), (i) => `features[${i}].ref`)
  unique(config.features.map((f) => f.lookup_key), (i) => `features[${i}].lookup_key`)
  config.features.forEach((f, i) =>
    at(`features[${i}]`, () => {
      if (f.type === 'metered' && !f.meter_ref) throw validationError('meter_ref', 'is required for a metered feature')
      if (f.type !== 'metered' && f.meter_ref) throw validationError('meter_ref', `is only allowed for metered features, not ${f.type}`)
      if (f.meter_ref && !meters.has(f.meter_ref)) throw validationError('meter_ref', `names no meter of meters: ${JSON.stringify(f.meter_ref)}`)
    }),
  )
  const features = new Map(config.features.map((f) => [f.ref, f]))
  unique(config.plans.map((p) => p.lookup_key), (i) => `plans[${i}].lookup_key`)
  config.plans.forEach((plan, i) =>
    at(`plans[${i}]`, () => {
      plan.prices.forEach((price, j) =>
        at(`prices[${j}]`, () => {
          const { meter_ref, display_name: _name, description: _description, ...terms } = price
          if (!ISO_CURRENCIES.has(price.currency)) throw validationError('currency', `${JSON.stringify(price.currency)} is not an ISO 4217 currency`)
          if (meter_ref && !meters.has(meter_ref)) throw validationError('meter_ref', `names no meter of meters: ${JSON.stringify(meter_ref)}`)
          if (price.type === 'USAGE' && !meter_ref) throw validationError('meter_ref', 'is required for USAGE prices')
          priceTerms({ ...terms, meter_id: meter_ref } as PriceInput)
        }),
      )
      unique(plan.entitlements.map((e) => e.feature_ref), (j) => `entitlements[${j}].feature_ref`)
      plan.entitlements.forEach((e, j) =>
        at(`entitlements[${j}]`, () => {
          const feature = features.get(e.feature_ref)
          if (!feature) throw validationError('feature_ref', `names no feature of features: ${JSON.stringify(e.feature_ref)}`)
          const { feature_ref: _ref, ...terms } = e
          entitlementTerms(feature.type, terms)
        }),
      )
    }),
  )
}
