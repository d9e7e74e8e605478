import { describe, expect, it } from 'vitest'
import { Decimal } from 'decimal.js'
import { D, sumMoney } from '../money.ts'
import { lineAmount, priceAmount, type PriceInput } from './index.ts'

const expectDec = (actual: Decimal, expected: string) => expect(actual.toFixed()).toBe(new D(expected).toFixed())

const TIERS = [
  { up_to: 100, unit_amount: '0.10' },
  { up_to: 1000, unit_amount: '0.08', flat_amount: '5' },
  { up_to: null, unit_amount: '0.05' },
]
const FLAT: PriceInput = { billing_model: 'FLAT_FEE', amount: '2.00' }
const PACKAGE_UP: PriceInput = { billing_model: 'PACKAGE', amount: '5', transform_quantity: { divide_by: 1000, round: 'up' } }
const PACKAGE_DOWN: PriceInput = { billing_model: 'PACKAGE', amount: '5', transform_quantity: { divide_by: 1000, round: 'down' } }
const VOLUME: PriceInput = { billing_model: 'TIERED', amount: '0', tier_mode: 'VOLUME', tiers: TIERS }
const SLAB: PriceInput = { billing_model: 'TIERED', amount: '0', tier_mode: 'SLAB', tiers: TIERS }

describe('priceAmount dispatches on billing_model', () => {
  it.each([
    ['FLAT_FEE', FLAT, '0', '0'],
    ['FLAT_FEE', FLAT, '2.5', '5.00'],
    ['PACKAGE up', PACKAGE_UP, '0', '0'],
    ['PACKAGE up', PACKAGE_UP, '1001', '10'],
    ['PACKAGE down', PACKAGE_DOWN, '1001', '5'],
    ['TIERED VOLUME', VOLUME, '0', '0'],
    ['TIERED VOLUME', VOLUME, '1500', '75.00'],
    ['TIERED SLAB', SLAB, '0', '0'],
    ['TIERED SLAB', SLAB, '1500', '112.00'],
  ] as const)('%s, quantity %s -> %s', (_, price, q, expected) => expectDec(priceAmount(price, new D(q)).amount, expected))

  it('returns packages for PACKAGE and the tier breakdown for TIERED', () => {
    expectDec(priceAmount(PACKAGE_UP, new D(1001)).packages!, '2')
    expect(priceAmount(SLAB, new D(1500)).tiers!.map((t) => t.index)).toEqual([0, 1, 2])
    expect(priceAmount(FLAT, new D(1)).tiers).toBeUndefined()
  })

  it('computes at 40 digits even when given a plain (precision 20) Decimal', () => {
    // 1234567890123456789012.5 × 1.1 = 1234567890123456789012.5 + 123456789012345678901.25
    const r = priceAmount({ billing_model: 'FLAT_FEE', amount: '1.1' }, new Decimal('1234567890123456789012.5'))
    expectDec(r.amount, '1358024679135802467913.75')
  })
})

describe('min_quantity raises the billed quantity to at least the minimum', () => {
  it.each([
    ['FLAT_FEE below', { ...FLAT, min_quantity: '10' }, '3', '10', '20.00'],
    ['FLAT_FEE zero', { ...FLAT, min_quantity: '10' }, '0', '10', '20.00'],
    ['FLAT_FEE above', { ...FLAT, min_quantity: '10' }, '12', '12', '24.00'],
    ['FLAT_FEE fractional', { ...FLAT, min_quantity: '0.5' }, '0.25', '0.5', '1.00'],
    ['FLAT_FEE null', { ...FLAT, min_quantity: null }, '3', '3', '6.00'],
    ['PACKAGE', { ...PACKAGE_UP, min_quantity: '1500' }, '200', '1500', '10'],
    ['TIERED SLAB', { ...SLAB, min_quantity: '1500' }, '0', '1500', '112.00'],
    ['TIERED VOLUME', { ...VOLUME, min_quantity: '101' }, '50', '101', '13.08'],
  ] as const)('%s: quantity %s -> billed %s, %s', (_, price, q, billed, amount) => {
    const r = priceAmount(price as PriceInput, new D(q))
    expectDec(r.quantity, billed)
    expectDec(r.amount, amount)
  })
})

describe('priceAmount rejects bad input', () => {
  it.each([
    ['a negative quantity', FLAT, new D(-1), /quantity/],
    ['a NaN quantity', FLAT, new D(NaN), /quantity/],
    ['a negative amount', { ...FLAT, amount: '-2' }, new D(1), /amount/],
    ['an amount with an exponent', { ...FLAT, amount: '2e2' }, new D(1), /amount/],
    ['a negative min_quantity', { ...FLAT, min_quantity: '-1' }, new D(1), /min_quantity/],
    ['PACKAGE without transform_quantity', { billing_model: 'PACKAGE', amount: '5' }, new D(1), /transform_quantity/],
    ['TIERED without tiers', { billing_model: 'TIERED', amount: '0', tier_mode: 'SLAB' }, new D(1), /tiers/],
    ['an unknown billing_model', { billing_model: 'MATRIX', amount: '1' }, new D(1), /billing_model/],
  ])('%s', (_, price, q, message) => {
    expect(() => priceAmount(price as PriceInput, q)).toThrow(RangeError)
    expect(() => priceAmount(price as PriceInput, q)).toThrow(message)
  })
})

describe('lineAmount rounds once, at the line, to the currency', () => {
  it.each([
    // 0.0125 × 7 = 0.0875
    [{ billing_model: 'FLAT_FEE', amount: '0.0125' }, '7', 'USD', '0.09'],
    [{ billing_model: 'FLAT_FEE', amount: '0.0125' }, '7', 'JPY', '0'],
    [{ billing_model: 'FLAT_FEE', amount: '0.0125' }, '7', 'KWD', '0.088'],
    // 0.001 × 2345 = 2.345, half away from zero
    [{ billing_model: 'FLAT_FEE', amount: '0.001' }, '2345', 'USD', '2.35'],
    // 0.5 × 2469 = 1234.5
    [{ billing_model: 'FLAT_FEE', amount: '0.5' }, '2469', 'JPY', '1235'],
    // SLAB with fractional quantity: 10 + 0.125×0.08 + 5 = 15.01
    [SLAB, '100.125', 'USD', '15.01'],
    // 10 + 0.0625×0.08 + 5 = 15.005: half away from zero, rounded only once
    [SLAB, '100.0625', 'USD', '15.01'],
  ] as const)('%j × %s in %s -> %s', (price, q, currency, expected) => expectDec(lineAmount(price as PriceInput, new D(q), currency), expected))

  it('an invoice total is the sum of rounded lines, not the rounded sum', () => {
    // Three lines of 1.005 each: 1.01 + 1.01 + 1.01 = 3.03, where round(3.015) would be 3.02.
    const lines = [1, 2, 3].map(() => lineAmount({ billing_model: 'FLAT_FEE', amount: '1.005' }, new D(1), 'USD'))
    expectDec(sumMoney(lines), '3.03')
  })

  it('adds mixed models line by line', () => {
    // 2.00 × 2.5 = 5.00; PACKAGE 1001 up = 10; SLAB 1500 = 112.00; VOLUME 100.5 = 13.04
    const lines = [lineAmount(FLAT, new D('2.5'), 'USD'), lineAmount(PACKAGE_UP, new D(1001), 'USD'), lineAmount(SLAB, new D(1500), 'USD'), lineAmount(VOLUME, new D('100.5'), 'USD')]
    expectDec(sumMoney(lines), '140.04')
  })
})
