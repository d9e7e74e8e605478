import { describe, expect, it } from 'vitest'
import { AppError } from '../errors.ts'
import { D, type Decimal } from '../money.ts'
import { allocate, moneyAmount, percentage } from './amounts.ts'

const list = (xs: string[]) => xs.map((x) => new D(x))
const strings = (xs: Decimal[]) => xs.map((x) => x.toFixed())
const same = (xs: string[]) => strings(list(xs))

describe('moneyAmount accepts whole minor units only', () => {
  it.each([
    ['5.00', 'USD', '5'],
    ['0', 'USD', '0'],
    ['500', 'JPY', '500'],
    ['1.250', 'KWD', '1.25'],
    ['1.234', 'kwd', '1.234'],
  ])('%s %s -> %s', (value, currency, expected) => expect(moneyAmount(value, currency, 'amount').toFixed()).toBe(expected))

  it.each([
    ['0.005', 'USD'], // half a cent
    ['500.5', 'JPY'], // yen has no decimals
    ['1.2345', 'KWD'], // fils have 3 decimals
    ['-1', 'USD'],
    ['1e3', 'USD'],
    ['', 'USD'],
  ])('rejects %j %s with a validation_error naming the field', (value, currency) => {
    const e = (() => {
      try {
        moneyAmount(value, currency, 'amount_off')
      } catch (err) {
        return err as AppError
      }
    })()
    expect(e).toBeInstanceOf(AppError)
    expect(e!.code).toBe('validation_error')
    expect(e!.details).toHaveProperty('amount_off')
  })

  it('checks Decimals too', () => {
    expect(moneyAmount(new D('12.34'), 'USD', 'amount').toFixed()).toBe('12.34')
    expect(() => moneyAmount(new D('12.345'), 'USD', 'amount')).toThrow(/more decimals than USD/)
  })
})

describe('percentage is 0..100', () => {
  it.each(['0', '10', '8.25', '100'])('accepts %s', (p) => expect(percentage(p, 'p').toFixed()).toBe(new D(p).toFixed()))
  it.each(['100.01', '-1', '10%', null])('rejects %j', (p) => expect(() => percentage(p, 'percentage_off')).toThrow(/percentage_off/))
})

describe('allocate: pro rata, half away from zero, remainder on the largest line', () => {
  it.each([
    // 5 × 49/137.86 = 1.77716… → 1.78; 5 × 88.86/137.86 = 3.22283… → 3.22; 1.78 + 3.22 = 5.00, nothing left over.
    ['5.00', ['49.00', '88.86'], 'USD', ['1.78', '3.22']],
    // 0.333… each → 0.33 × 3 = 0.99; the remainder 0.01 goes to the largest line (a tie: the first).
    ['1.00', ['10', '10', '10'], 'USD', ['0.34', '0.33', '0.33']],
    // 0.025 → 0.03, 0.05, 0.025 → 0.03: 0.11, one cent too many, taken from the largest (middle) line.
    ['0.10', ['10', '20', '10'], 'USD', ['0.03', '0.04', '0.03']],
    // 33.33… → 33 × 3 = 99 yen; 1 yen remainder on the first of the equal lines.
    ['100', ['1', '1', '1'], 'JPY', ['34', '33', '33']],
    // 0.00333… → 0.003 fils × 3 = 0.009; remainder 0.001 KWD.
    ['0.010', ['1', '1', '1'], 'KWD', ['0.004', '0.003', '0.003']],
    // 0.005 each rounds away from zero to 0.01: 0.04 for 0.02, remainder −0.02. The largest line can give
    // only 0.01 (it may not go below 0), so the next one gives the other cent.
    ['0.02', ['0.01', '0.01', '0.01', '0.01'], 'USD', ['0', '0', '0.01', '0.01']],
    // 0.99666… → 1.00 each = 3.00 for 2.99: the largest line gives back the cent and stays ≤ its weight.
    ['2.99', ['1.00', '1.00', '1.00'], 'USD', ['0.99', '1.00', '1.00']],
    // Splitting a negative total mirrors the positive one: −0.34, −0.33, −0.33.
    ['-1.00', ['10', '10', '10'], 'USD', ['-0.34', '-0.33', '-0.33']],
    // More than the weights (e.g. a fixed tax on a small line): shares may exceed them; 0.03 × 3 + 0.01.
    ['0.10', ['0.01', '0.01', '0.01'], 'USD', ['0.04', '0.03', '0.03']],
    // No weight anywhere: everything on the first line rather than losing it.
    ['1.00', ['0', '0'], 'USD', ['1.00', '0']],
    ['0', ['3', '5'], 'USD', ['0', '0']],
  ])('%s over %j %s -> %j', (total, weights, currency, expected) => {
    const shares = allocate(new D(total), list(weights), currency)
    expect(strings(shares)).toEqual(same(expected))
    expect(shares.reduce((a, b) => a.plus(b), new D(0)).toFixed()).toBe(new D(total).toFixed())
  })

  it('rejects negative weights', () => expect(() => allocate(new D(1), list(['-1', '2']), 'USD')).toThrow(RangeError))
})

describe('allocate keeps every share within [0, weight] and adds up exactly', () => {
  // Every split of 0.00..Σ over four lines of 0.00..0.05: 1296 weight sets, a few thousand totals.
  it('for every small case', () => {
    const cents = [0, 1, 2, 3, 4, 5]
    for (const a of cents) for (const b of cents) for (const c of cents) for (const d of cents) {
      const weights = [a, b, c, d].map((x) => new D(x).div(100))
      for (let t = 0; t <= a + b + c + d; t++) {
        const shares = allocate(new D(t).div(100), weights, 'USD')
        expect(shares.reduce((x, y) => x.plus(y), new D(0)).toFixed()).toBe(new D(t).div(100).toFixed())
        shares.forEach((s, i) => expect(s.gte(0) && s.lte(weights[i])).toBe(true))
      }
    }
  })
})
