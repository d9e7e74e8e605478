import { describe, expect, it } from 'vitest'
import { D, type Decimal } from '../money.ts'
import { packageAmount, packageCount, validateTransform, type TransformQuantity } from './package.ts'

const expectDec = (actual: Decimal, expected: string) => expect(actual.toFixed()).toBe(new D(expected).toFixed())

describe('packageAmount: whole packages × package price', () => {
  // [quantity, divide_by, round, packages, amount at 5.00 per package]
  it.each([
    ['0', 1000, 'up', '0', '0'],
    ['0', 1000, 'down', '0', '0'],
    ['1', 1000, 'up', '1', '5'],
    ['1', 1000, 'down', '0', '0'],
    ['1000', 1000, 'up', '1', '5'],
    ['1000', 1000, 'down', '1', '5'],
    ['1001', 1000, 'up', '2', '10'],
    ['1001', 1000, 'down', '1', '5'],
    ['2999.5', 1000, 'up', '3', '15'],
    ['2999.5', 1000, 'down', '2', '10'],
    ['2.5', 1, 'up', '3', '15'],
    ['2.5', 1, 'down', '2', '10'],
    ['7', 1, 'up', '7', '35'],
    ['100000000000000000000000000000000000001', 1000, 'up', '100000000000000000000000000000000001', '500000000000000000000000000000000005'],
  ] as const)('%s units / %i rounded %s = %s packages, %s', (quantity, divide_by, round, packages, amount) => {
    const r = packageAmount(new D('5.00'), new D(quantity), { divide_by, round })
    expectDec(r.packages, packages)
    expectDec(r.amount, amount)
  })
})

describe('transform_quantity validation', () => {
  it.each([
    ['missing', undefined],
    ['divide_by 0', { divide_by: 0, round: 'up' }],
    ['divide_by -1', { divide_by: -1, round: 'up' }],
    ['divide_by 1.5', { divide_by: 1.5, round: 'down' }],
    ['divide_by NaN', { divide_by: Number.NaN, round: 'down' }],
    ['round nearest', { divide_by: 10, round: 'nearest' }],
  ])('rejects %s', (_, t) => {
    expect(() => validateTransform(t as TransformQuantity)).toThrow(RangeError)
    expect(() => packageCount(new D(5), t as TransformQuantity)).toThrow(/transform_quantity/)
  })
})
