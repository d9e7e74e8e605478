import { describe, expect, it } from 'vitest'
import { Decimal } from 'decimal.js'
import { D, displayAmount, formatMoney, minorUnits, parseDecimal, parseNonNegative, roundMoney, sumMoney } from './money.ts'

// Compares as normalized decimal strings, so a failure shows both numbers.
const expectDec = (actual: Decimal, expected: string) => expect(actual.toFixed()).toBe(new D(expected).toFixed())

describe('minorUnits', () => {
  it.each([
    ['USD', 2], ['eur', 2], ['XYZ', 2],
    ['JPY', 0], ['krw', 0], ['VND', 0], ['CLP', 0], ['ISK', 0], ['UGX', 0], ['XAF', 0], ['XOF', 0],
    ['XPF', 0], ['PYG', 0], ['RWF', 0], ['GNF', 0], ['KMF', 0], ['VUV', 0], ['BIF', 0], ['DJF', 0],
    ['KWD', 3], ['bhd', 3], ['OMR', 3], ['JOD', 3], ['TND', 3], ['LYD', 3], ['IQD', 3],
  ])('%s has %i', (code, n) => expect(minorUnits(code)).toBe(n))

  it.each(['', 'US', 'USDX', 'U1D', ' USD', 'US$'])('rejects %j', (code) => expect(() => minorUnits(code)).toThrow(RangeError))
})

describe('roundMoney: half away from zero to the minor unit', () => {
  it.each([
    ['2.345', 'USD', '2.35'],
    ['-2.345', 'USD', '-2.35'],
    ['2.344999', 'USD', '2.34'],
    ['2.355', 'usd', '2.36'],
    ['0.005', 'USD', '0.01'],
    ['1234.5', 'JPY', '1235'],
    ['-1234.5', 'JPY', '-1235'],
    ['1234.4999', 'JPY', '1234'],
    ['1.2345', 'KWD', '1.235'],
    ['1.23449', 'KWD', '1.234'],
    ['48.3822580645161290322580645161290322580645', 'USD', '48.38'],
  ])('%s %s -> %s', (amount, currency, expected) => expectDec(roundMoney(new D(amount), currency), expected))

  it('never returns negative zero', () => {
    const r = roundMoney(new D('-0.004'), 'USD')
    expect(r.isZero()).toBe(true)
    expect(r.isNegative()).toBe(false)
  })

})

describe('D', () => {
  it('divides to 40 significant digits, rounding half up', () => {
    expect(new D(1).div(3).toFixed()).toBe('0.' + '3'.repeat(40))
    expect(new D(2).div(3).toFixed()).toBe('0.' + '6'.repeat(39) + '7')
  })
})

describe('parseDecimal', () => {
  it.each([
    ['0', '0'], ['12', '12'], ['-0.5', '-0.5'], ['1000.25', '1000.25'], ['007.10', '7.1'],
    ['12345678901234567890.123456789', '12345678901234567890.123456789'],
  ])('accepts %j', (s, expected) => expectDec(parseDecimal(s), expected))

  it.each(['', ' 1', '1 ', '1e3', '1E3', '+1', '0x10', '.5', '5.', '1,5', '1.2.3', '--1', 'NaN', 'Infinity', '-', '١٢'])(
    'rejects %j',
    (s) => expect(() => parseDecimal(s)).toThrow(RangeError),
  )

  it('rejects non-strings', () => expect(() => parseDecimal(1.5 as unknown as string)).toThrow(RangeError))
})

describe('parseNonNegative', () => {
  it('accepts zero and positives', () => expectDec(parseNonNegative('0.10', 'amount'), '0.1'))
  it('rejects a negative, naming the field', () => expect(() => parseNonNegative('-1', 'amount')).toThrow(/amount/))
  it('rejects a bad format, naming the field', () => expect(() => parseNonNegative('1e2', 'tiers[2].unit_amount')).toThrow(/tiers\[2\]\.unit_amount/))
})

describe('formatMoney', () => {
  it.each([
    ['10.5', 'USD', '10.50'],
    ['10', 'USD', '10.00'],
    ['2.345', 'USD', '2.35'],
    ['-2.345', 'USD', '-2.35'],
    ['-0.004', 'USD', '0.00'],
    ['1000', 'JPY', '1000'],
    ['999.5', 'JPY', '1000'],
    ['1.2345', 'KWD', '1.235'],
    ['1', 'KWD', '1.000'],
    ['123456789012345678901234.5', 'USD', '123456789012345678901234.50'],
  ])('%s %s -> %s', (amount, currency, expected) => expect(formatMoney(new D(amount), currency)).toBe(expected))
})

describe('sumMoney', () => {
  it.each([
    [[], '0'],
    [['0.1', '0.2'], '0.3'],
    [['10.00', '-2.50', '0.01'], '7.51'],
    [['99999999999999999999.99', '0.01'], '100000000000000000000'],
  ])('%j -> %s', (list, expected) => expectDec(sumMoney(list.map((s) => new D(s))), expected))

  it('sums plain Decimals at 40 digits', () => {
    // 21 significant digits: a precision-20 sum would round this.
    expectDec(sumMoney([new Decimal('100000000000000000000'), new Decimal('0.1')]), '100000000000000000000.1')
  })
})

describe('displayAmount', () => {
  it('puts the currency symbol before the amount at its minor digits', () => {
    expect(displayAmount(new D('12'), 'USD')).toBe('$12.00')
    expect(displayAmount(new D('0.125'), 'EUR')).toBe('€0.13')
    expect(displayAmount(new D('1500'), 'JPY')).toBe('¥1500')
    expect(displayAmount(new D('3.5'), 'KWD')).toBe('KWD3.500')
  })
})
