// The console's decimal helpers (console/app/lib/format.js), with hand-computed numbers.
import { describe, expect, it } from 'vitest'

// The console's own module as the browser loads it: plain JavaScript, so typed here by hand.
type Helpers = { addDecimal(a: string, b: string): string; sumDecimal(xs: string[]): string; compareDecimal(a: string, b: string): number; money(v: string, c?: string): string }
const { addDecimal, compareDecimal, money, sumDecimal } = (await import(new URL('../../console/app/lib/format.js', import.meta.url).href)) as Helpers

describe('console amounts', () => {
  it('adds, sums and compares the API decimal strings exactly', () => {
    expect(addDecimal('0.1', '0.2')).toBe('0.3')
    expect(addDecimal('-1.25', '0.5')).toBe('-0.75')
    expect(sumDecimal(['0.1', '0.2', '0.000000000001'])).toBe('0.300000000001')
    expect(sumDecimal([])).toBe('0')
    expect(compareDecimal('10.00', '9.999')).toBe(1)
    expect(compareDecimal(' 5 ', '5.0')).toBe(0)
    expect(compareDecimal('-0.5', '0')).toBe(-1)
    expect(money(addDecimal('147.5', '0.2'), 'USD')).toBe('147.70 USD')
  })
})
