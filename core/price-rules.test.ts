import { describe, expect, it } from 'vitest'
import { AppError } from './errors.ts'
import { priceTerms, type PriceInput } from './price-rules.ts'

const flat: PriceInput = { currency: 'usd', type: 'FIXED', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', amount: '10' }
const usage: PriceInput = { currency: 'USD', type: 'USAGE', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', amount: '0.001', meter_id: 'meter_1' }
const tiered: PriceInput = {
  ...usage,
  billing_model: 'TIERED',
  amount: undefined,
  tier_mode: 'SLAB',
  tiers: [
    { up_to: 100, unit_amount: '1.00' },
    { up_to: null, unit_amount: '0.5', flat_amount: '2' },
  ],
}

/** The field a rejection names, or undefined when the input is accepted. */
function rejected(input: PriceInput): string | undefined {
  try {
    priceTerms(input)
    return undefined
  } catch (err) {
    expect(err).toBeInstanceOf(AppError)
    expect((err as AppError).code).toBe('validation_error')
    return Object.keys((err as AppError).details)[0]
  }
}

describe('priceTerms defaults', () => {
  it('fills a fixed monthly price: recurring, in advance, count 1, upper-case currency', () => {
    const t = priceTerms(flat)
    expect(t).toMatchObject({ currency: 'USD', billing_cadence: 'RECURRING', invoice_cadence: 'ADVANCE', billing_period_count: 1, trial_period_days: 0 })
    expect(t.amount.toFixed()).toBe('10')
  })

  it('bills usage in arrear', () => {
    expect(priceTerms(usage).invoice_cadence).toBe('ARREAR')
  })

  it('makes ONETIME a one-time cadence', () => {
    expect(priceTerms({ ...flat, billing_period: 'ONETIME' }).billing_cadence).toBe('ONETIME')
  })

  it("takes Flexprice's one-time form (billing_cadence ONETIME, a recurring period) as billing_period ONETIME", () => {
    expect(priceTerms({ ...flat, billing_cadence: 'ONETIME' })).toMatchObject({ billing_cadence: 'ONETIME', billing_period: 'ONETIME' })
  })

  it('writes tiers back canonically with a zero flat amount where none was given', () => {
    expect(priceTerms(tiered).tiers).toEqual([
      { up_to: 100, unit_amount: '1', flat_amount: '0' },
      { up_to: null, unit_amount: '0.5', flat_amount: '2' },
    ])
  })

  it('converts a custom price unit into the currency at its conversion rate', () => {
    const t = priceTerms({ ...flat, amount: undefined, price_unit_type: 'CUSTOM', price_unit: 'cred', price_unit_amount: '250', conversion_rate: '0.01' })
    expect(t.amount.toFixed()).toBe('2.5')
    expect(t.price_unit).toBe('CRED')
    const tieredCustom = priceTerms({ ...tiered, tiers: undefined, price_unit_type: 'CUSTOM', price_unit: 'CRED', conversion_rate: '0.5', price_unit_tiers: tiered.tiers })
    expect(tieredCustom.tiers![1]).toEqual({ up_to: null, unit_amount: '0.25', flat_amount: '1' })
    expect(tieredCustom.price_unit_tiers![1]).toEqual({ up_to: null, unit_amount: '0.5', flat_amount: '2' })
  })

  it('keeps tiny usage amounts exact', () => {
    expect(priceTerms({ ...usage, amount: '0.0000001' }).amount.toFixed()).toBe('0.0000001')
  })
})

describe('priceTerms rejections name the field', () => {
  it.each<[string, PriceInput, string]>([
    ['usage without a meter', { ...usage, meter_id: undefined }, 'meter_id'],
    ['a meter on a fixed price', { ...flat, meter_id: 'meter_1' }, 'meter_id'],
    ['usage billed in advance', { ...usage, invoice_cadence: 'ADVANCE' }, 'invoice_cadence'],
    ['one-time usage', { ...usage, billing_period: 'ONETIME' }, 'billing_period'],
    ['ONETIME period with a recurring cadence', { ...flat, billing_period: 'ONETIME', billing_cadence: 'RECURRING' }, 'billing_cadence'],
    ['ONETIME cadence with a monthly period on usage', { ...usage, billing_cadence: 'ONETIME' }, 'billing_cadence'],
    ['a flat fee without amount', { ...flat, amount: undefined }, 'amount'],
    ['a negative amount', { ...flat, amount: '-1' }, 'amount'],
    ['an amount with an exponent', { ...flat, amount: '1e3' }, 'amount'],
    ['tiers on a flat fee', { ...flat, tiers: tiered.tiers }, 'tiers'],
    ['tiered without tier_mode', { ...tiered, tier_mode: undefined }, 'tier_mode'],
    ['tiered without tiers', { ...tiered, tiers: undefined }, 'tiers'],
    ['tiers out of order', { ...tiered, tiers: [{ up_to: 100, unit_amount: '1' }, { up_to: 50, unit_amount: '1' }, { up_to: null, unit_amount: '1' }] }, 'tiers[1]'],
    ['a bounded last tier', { ...tiered, tiers: [{ up_to: 100, unit_amount: '1' }] }, 'tiers[0]'],
    ['an open tier before the last', { ...tiered, tiers: [{ up_to: null, unit_amount: '1' }, { up_to: null, unit_amount: '1' }] }, 'tiers[0]'],
    ['a bad tier amount', { ...tiered, tiers: [{ up_to: null, unit_amount: 'abc' }] }, 'tiers[0].unit_amount'],
    ['a package without transform_quantity', { ...usage, billing_model: 'PACKAGE' }, 'transform_quantity'],
    ['transform_quantity on a flat fee', { ...usage, transform_quantity: { divide_by: 10, round: 'up' } }, 'transform_quantity'],
    ['a trial on a usage price', { ...usage, trial_period_days: 7 }, 'trial_period_days'],
    ['a trial on a one-time price', { ...flat, billing_period: 'ONETIME', trial_period_days: 7 }, 'trial_period_days'],
    ['a negative min_quantity', { ...flat, min_quantity: '-2' }, 'min_quantity'],
    ['an end before the start', { ...flat, start_date: '2025-02-01T00:00:00Z', end_date: '2025-01-01T00:00:00Z' }, 'end_date'],
    ['a custom unit without price_unit', { ...flat, amount: undefined, price_unit_type: 'CUSTOM', price_unit_amount: '1', conversion_rate: '1' }, 'price_unit'],
    ['a custom unit with a zero rate', { ...flat, amount: undefined, price_unit_type: 'CUSTOM', price_unit: 'C', price_unit_amount: '1', conversion_rate: '0' }, 'conversion_rate'],
    ['a custom unit with an amount too', { ...flat, price_unit_type: 'CUSTOM', price_unit: 'C', price_unit_amount: '1', conversion_rate: '1' }, 'amount'],
    ['a conversion rate on a fiat price', { ...flat, conversion_rate: '2' }, 'conversion_rate'],
  ])('refuses %s', (_name, input, field) => {
    expect(rejected(input)).toBe(field)
  })

  it.each<[string, PriceInput]>([
    ['a package price', { ...usage, billing_model: 'PACKAGE', amount: '5', transform_quantity: { divide_by: 1000, round: 'up' } }],
    ['a volume price', { ...tiered, tier_mode: 'VOLUME' }],
    ['a fixed price with a trial', { ...flat, trial_period_days: 14 }],
    ['a zero price', { ...flat, amount: '0' }],
    ['every recurring period', { ...flat, billing_period: 'HALF_YEARLY', billing_period_count: 2 }],
  ])('accepts %s', (_name, input) => {
    expect(rejected(input)).toBeUndefined()
  })
})
