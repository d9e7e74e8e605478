import { describe, expect, it } from 'vitest'
import { D, type Decimal } from '../money.ts'
import { flatFeeAmount } from './flat-fee.ts'

const expectDec = (actual: Decimal, expected: string) => expect(actual.toFixed()).toBe(new D(expected).toFixed())

describe('flatFeeAmount = unit amount × quantity (unrounded)', () => {
  it.each([
    ['9.99', '0', '0'],
    ['9.99', '1', '9.99'],
    ['9.99', '3', '29.97'],
    ['9.99', '2.5', '24.975'],
    ['0.10', '0.333', '0.0333'],
    ['0', '1000', '0'],
    ['1.1', '1234567890123456789012.5', '1358024679135802467913.75'],
  ])('%s × %s = %s', (unit, quantity, expected) => expectDec(flatFeeAmount(new D(unit), new D(quantity)), expected))
})
