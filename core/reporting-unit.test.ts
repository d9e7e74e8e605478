import { describe, expect, it } from 'vitest'
import { D } from './money.ts'
import { inReportingUnit } from './reporting-unit.ts'

const tokens = { unit_singular: 'M token', unit_plural: 'M tokens', conversion_rate: 1_000_000 }

describe('inReportingUnit', () => {
  it.each([
    // 1500000 ÷ 1000000 = 1.5
    ['1500000', tokens, '1.5 M tokens'],
    // Exactly one: singular.
    ['1000000', tokens, '1 M token'],
    // 1234567 ÷ 1000000 = 1.234567, every token kept.
    ['1234567', tokens, '1.234567 M tokens'],
    // 1 ÷ 3000 = 0.000333333… → 0.000333 (half-up at 6 places).
    ['1', { unit_plural: 'k calls', conversion_rate: 3000 }, '0.000333 k calls'],
    // 2 ÷ 3000000 = 0.000000666… → 0.000001.
    ['2', { unit_plural: 'M calls', conversion_rate: 3_000_000 }, '0.000001 M calls'],
    // 0.0000001 ÷ 1000 rounds to zero: "0", not "-0" or "0.000000".
    ['0.0000001', { unit_plural: 'k', conversion_rate: 1000 }, '0 k'],
    // A rate below one makes the unit smaller: 2.5 GB at 0.001 = 2500 MB.
    ['2.5', { unit_singular: 'MB', conversion_rate: 0.001 }, '2500 MB'],
    // Plural missing: the singular names any amount; neither: the bare number.
    ['3000', { unit_singular: 'thousand', conversion_rate: 1000 }, '3 thousand'],
    ['3000', { conversion_rate: 1000 }, '3'],
  ])('%s in %j is %s', (quantity, unit, shown) => {
    expect(inReportingUnit(new D(quantity), unit)).toBe(shown)
  })
})
