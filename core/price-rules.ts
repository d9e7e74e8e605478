// What makes a price well formed, as pure rules: which fields each type and billing model needs or
// refuses, the defaults, and custom price units converted to the fiat currency. Every rejection is a
// validation_error naming the field.
import { validationError } from './errors.ts'
import { D, parseNonNegative, type Decimal } from './money.ts'
import { BILLING_PERIODS, type BillingPeriod } from './periods.ts'
import type { TierMode } from './pricing/index.ts'
import { validateTransform, type TransformQuantity } from './pricing/package.ts'
import { parseTiers, type Tier } from './pricing/tiered.ts'

type PriceType = 'FIXED' | 'USAGE'
type BillingModel = 'FLAT_FEE' | 'PACKAGE' | 'TIERED'
export type PricePeriod = BillingPeriod | 'ONETIME'
export const PRICE_PERIODS: readonly PricePeriod[] = [...BILLING_PERIODS, 'ONETIME']

export interface PriceInput {
  currency: string
  type: PriceType
  billing_model: BillingModel
  billing_period: PricePeriod
  billing_cadence?: 'RECURRING' | 'ONETIME'
  billing_period_count?: number
  invoice_cadence?: 'ADVANCE' | 'ARREAR'
  amount?: string
  tier_mode?: TierMode
  tiers?: Tier[]
  transform_quantity?: TransformQuantity
  trial_period_days?: number
  min_quantity?: string
  meter_id?: string
  price_unit_type?: 'FIAT' | 'CUSTOM'
  price_unit?: string
  price_unit_amount?: string
  price_unit_tiers?: Tier[]
  conversion_rate?: string
  start_date?: string
  end_date?: string
}

/** The price as stored: amounts as Decimals, tiers with canonical decimal strings, defaults filled in. */
export interface PriceTerms {
  currency: string
  type: PriceType
  billing_model: BillingModel
  billing_cadence: 'RECURRING' | 'ONETIME'
  billing_period: PricePeriod
  billing_period_count: number
  invoice_cadence: 'ADVANCE' | 'ARREAR'
  amount: Decimal
  tier_mode: TierMode | null
  tiers: Tier[] | null
  transform_quantity: TransformQuantity | null
  trial_period_days: number
  min_quantity: Decimal | null
  meter_id: string | null
  price_unit_type: 'FIAT' | 'CUSTOM'
  price_unit: string | null
  price_unit_amount: Decimal | null
  price_unit_tiers: Tier[] | null
  conversion_rate: Decimal | null
  start_date: Date | null
  end_date: Date | null
}

/** Runs a core check that throws RangeError and reports it on `field`, keeping the index it names ("tiers[2]"). */
function as<T>(field: string, check: () => T): T {
  try {
    return check()
  } catch (err) {
    if (!(err instanceof RangeError)) throw err
    const m = /^[\w.]+?((?:\[\d+\])?(?:\.\w+)?): (.*)$/.exec(err.message)
    throw m ? validationError(field + m[1], m[2]) : validationError(field, err.message)
  }
}

function refuse(input: PriceInput, fields: (keyof PriceInput)[], why: string): void {
  for (const f of fields) if (input[f] !== undefined && input[f] !== null) throw validationError(f, why)
}

const amountOf = (field: string, value: string | undefined): Decimal => {
  if (value === undefined) throw validationError(field, 'is required')
  return as(field, () => parseNonNegative(value, field))
}

/** Tiers with their amounts parsed (checks order and the open last tier) and written back canonically. */
function canonicalTiers(field: string, tiers: Tier[] | undefined, rate: Decimal = new D(1)): Tier[] {
  const parsed = as(field, () => parseTiers(tiers))
  return parsed.map((t) => ({ up_to: t.up_to, unit_amount: t.unit_amount.times(rate).toFixed(), flat_amount: t.flat_amount.times(rate).toFixed() }))
}

function cadences(input: PriceInput): Pick<PriceTerms, 'billing_cadence' | 'invoice_cadence'> {
  const oneTime = input.billing_period === 'ONETIME'
  const cadence = input.billing_cadence ?? (oneTime ? 'ONETIME' : 'RECURRING')
  if (oneTime !== (cadence === 'ONETIME')) {
    throw validationError('billing_cadence', 'must be ONETIME exactly when billing_period is ONETIME')
  }
  if (input.type === 'USAGE') {
    // Usage is known only once the period is over.
    if (input.invoice_cadence === 'ADVANCE') throw validationError('invoice_cadence', 'USAGE prices are always billed in ARREAR')
    if (oneTime) throw validationError('billing_period', 'USAGE prices recur; ONETIME is for FIXED prices')
    return { billing_cadence: cadence, invoice_cadence: 'ARREAR' }
  }
  return { billing_cadence: cadence, invoice_cadence: input.invoice_cadence ?? 'ADVANCE' }
}

/** Amount, tiers and custom unit fields of the billing model; custom units are converted at `conversion_rate`. */
function amounts(input: PriceInput): Pick<PriceTerms, 'amount' | 'tier_mode' | 'tiers' | 'transform_quantity' | 'price_unit_type' | 'price_unit' | 'price_unit_amount' | 'price_unit_tiers' | 'conversion_rate'> {
  const custom = input.price_unit_type === 'CUSTOM'
  let rate = new D(1)
  if (custom) {
    if (!input.price_unit) throw validationError('price_unit', 'is required for a CUSTOM price unit')
    rate = amountOf('conversion_rate', input.conversion_rate)
    if (rate.isZero()) throw validationError('conversion_rate', 'must be greater than zero')
    refuse(input, input.billing_model === 'TIERED' ? ['amount', 'tiers'] : ['amount'], 'is computed from the price unit amounts and conversion_rate')
  } else {
    refuse(input, ['price_unit', 'price_unit_amount', 'price_unit_tiers', 'conversion_rate'], 'is only allowed with price_unit_type CUSTOM')
  }
  const unit = {
    price_unit_type: custom ? ('CUSTOM' as const) : ('FIAT' as const),
    price_unit: custom ? input.price_unit!.toUpperCase() : null,
    conversion_rate: custom ? rate : null,
  }
  if (input.billing_model === 'TIERED') {
    refuse(input, ['transform_quantity'], 'is only allowed for PACKAGE prices')
    if (!input.tier_mode) throw validationError('tier_mode', 'is required for TIERED prices')
    if (custom) refuse(input, ['price_unit_amount'], 'TIERED prices take price_unit_tiers')
    const tiers = custom ? canonicalTiers('tiers', input.price_unit_tiers, rate) : canonicalTiers('tiers', input.tiers)
    return {
      ...unit,
      amount: new D(0),
      tier_mode: input.tier_mode,
      tiers,
      transform_quantity: null,
      price_unit_amount: null,
      price_unit_tiers: custom ? canonicalTiers('price_unit_tiers', input.price_unit_tiers) : null,
    }
  }
  refuse(input, ['tier_mode', 'tiers', 'price_unit_tiers'], 'is only allowed for TIERED prices')
  const unitAmount = custom ? amountOf('price_unit_amount', input.price_unit_amount) : null
  const amount = custom ? unitAmount!.times(rate) : amountOf('amount', input.amount)
  let transform: TransformQuantity | null = null
  if (input.billing_model === 'PACKAGE') transform = as('transform_quantity', () => validateTransform(input.transform_quantity))
  else refuse(input, ['transform_quantity'], 'is only allowed for PACKAGE prices')
  return { ...unit, amount, tier_mode: null, tiers: null, transform_quantity: transform, price_unit_amount: unitAmount, price_unit_tiers: null }
}

export function priceTerms(given: PriceInput): PriceTerms {
  // Flexprice's clients mark a one-time FIXED charge by billing_cadence ONETIME alone (their billing periods
  // have no ONETIME): that is the spec's billing_period ONETIME.
  const flexOneTime = given.billing_cadence === 'ONETIME' && given.type === 'FIXED' && given.billing_period !== 'ONETIME'
  const input: PriceInput = flexOneTime ? { ...given, billing_period: 'ONETIME' } : given
  const { billing_cadence, invoice_cadence } = cadences(input)
  if (input.type === 'USAGE' && !input.meter_id) throw validationError('meter_id', 'is required for USAGE prices')
  if (input.type === 'FIXED') refuse(input, ['meter_id'], 'is only allowed for USAGE prices')
  const trial = input.trial_period_days ?? 0
  if (trial > 0 && (input.type !== 'FIXED' || billing_cadence !== 'RECURRING')) {
    throw validationError('trial_period_days', 'is only allowed on recurring FIXED prices')
  }
  const start = input.start_date ? new Date(input.start_date) : null
  const end = input.end_date ? new Date(input.end_date) : null
  if (start && end && end <= start) throw validationError('end_date', 'must be after start_date')
  return {
    currency: input.currency.toUpperCase(),
    type: input.type,
    billing_model: input.billing_model,
    billing_cadence,
    billing_period: input.billing_period,
    billing_period_count: input.billing_period_count ?? 1,
    invoice_cadence,
    ...amounts(input),
    trial_period_days: trial,
    min_quantity: input.min_quantity === undefined ? null : amountOf('min_quantity', input.min_quantity),
    meter_id: input.meter_id ?? null,
    start_date: start,
    end_date: end,
  }
}
