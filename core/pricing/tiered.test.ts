import { describe, expect, it } from 'vitest'
import { D, type Decimal } from '../money.ts'
import { tieredAmount, type Tier } from './tiered.ts'

const expectDec = (actual: Decimal, expected: string) => expect(actual.toFixed()).toBe(new D(expected).toFixed())

// 1-100 at 0.10; 101-1000 at 0.08 plus a flat 5; above 1000 at 0.05.
const TIERS: Tier[] = [
  { up_to: 100, unit_amount: '0.10' },
  { up_to: 1000, unit_amount: '0.08', flat_amount: '5' },
  { up_to: null, unit_amount: '0.05' },
]

describe('SLAB (graduated) on the same tiers', () => {
  it.each([
    ['0', '0'], // no tier reached
    ['1', '0.10'],
    ['100', '10.00'], // on the boundary: all in tier 0, tier 1's flat fee not reached
    ['101', '15.08'], // 10 + 1×0.08 + 5
    ['100.5', '15.04'], // 10 + 0.5×0.08 + 5
    ['1000', '87.00'], // 10 + 900×0.08 + 5
    ['1001', '87.05'], // 87 + 1×0.05
    ['1500', '112.00'], // 10 + 72 + 5 + 500×0.05
  ])('quantity %s -> %s', (q, expected) => expectDec(tieredAmount(TIERS, 'SLAB', new D(q)).amount, expected))

  it('breaks 1500 down per tier', () => {
    const lines = tieredAmount(TIERS, 'SLAB', new D(1500)).tiers
    expect(lines.map((l) => [l.index, l.quantity.toFixed(), l.flat_amount.toFixed(), l.amount.toFixed()])).toEqual([
      [0, '100', '0', '10'],
      [1, '900', '5', '77'],
      [2, '500', '0', '25'],
    ])
  })
})

describe('VOLUME on the same tiers', () => {
  it.each([
    ['0', '0'], // no flat fee either
    ['1', '0.10'],
    ['100', '10.00'], // on the boundary: tier 0
    ['101', '13.08'], // 101×0.08 + 5
    ['100.5', '13.04'], // 100.5×0.08 + 5: past the boundary, so tier 1
    ['1000', '85.00'], // 1000×0.08 + 5
    ['1001', '50.05'], // 1001×0.05
    ['1500', '75.00'], // 1500×0.05
  ])('quantity %s -> %s', (q, expected) => expectDec(tieredAmount(TIERS, 'VOLUME', new D(q)).amount, expected))

  it('reports the one tier used', () => {
    const lines = tieredAmount(TIERS, 'VOLUME', new D(101)).tiers
    expect(lines.map((l) => [l.index, l.quantity.toFixed(), l.amount.toFixed()])).toEqual([[1, '101', '13.08']])
  })
})

describe('flat amount in the first tier', () => {
  // Decision: quantity 0 reaches no tier, so not even the first tier's flat fee is charged.
  const FLAT_FIRST: Tier[] = [
    { up_to: 10, unit_amount: '0', flat_amount: '20.00' },
    { up_to: null, unit_amount: '1.50' },
  ]
  it.each([
    ['VOLUME', '0', '0'],
    ['SLAB', '0', '0'],
    ['VOLUME', '0.001', '20.00'],
    ['SLAB', '1', '20.00'],
    ['VOLUME', '10', '20.00'],
    ['SLAB', '12', '23.00'], // 20 + 2×1.50
    ['VOLUME', '12', '18.00'], // 12×1.50, tier 0's flat fee not included
  ] as const)('%s quantity %s -> %s', (mode, q, expected) => expectDec(tieredAmount(FLAT_FIRST, mode, new D(q)).amount, expected))
})

describe('a single unbounded tier', () => {
  it.each(['VOLUME', 'SLAB'] as const)('%s prices every unit at it', (mode) =>
    expectDec(tieredAmount([{ up_to: null, unit_amount: '0.002', flat_amount: '1' }], mode, new D('2500.5')).amount, '6.001'),
  )
})

describe('tier validation names the bad tier', () => {
  const last = { up_to: null, unit_amount: '1' }
  it.each([
    ['no tiers', [], /tiers/],
    ['null before the last', [{ up_to: null, unit_amount: '1' }, last], /tiers\[0\]/],
    ['last tier bounded', [{ up_to: 100, unit_amount: '1' }, { up_to: 200, unit_amount: '1' }], /tiers\[1\]/],
    ['equal up_to', [{ up_to: 100, unit_amount: '1' }, { up_to: 100, unit_amount: '1' }, last], /tiers\[1\]/],
    ['descending up_to', [{ up_to: 100, unit_amount: '1' }, { up_to: 50, unit_amount: '1' }, last], /tiers\[1\]/],
    ['up_to 0', [{ up_to: 0, unit_amount: '1' }, last], /tiers\[0\]/],
    ['fractional up_to', [{ up_to: 1.5, unit_amount: '1' }, last], /tiers\[0\]/],
    ['negative unit_amount', [{ up_to: 100, unit_amount: '1' }, { up_to: 200, unit_amount: '-0.01' }, last], /tiers\[1\]\.unit_amount/],
    ['negative flat_amount', [{ up_to: 100, unit_amount: '1' }, { up_to: null, unit_amount: '1', flat_amount: '-5' }], /tiers\[1\]\.flat_amount/],
    ['exponent unit_amount', [{ up_to: null, unit_amount: '1e2' }], /tiers\[0\]\.unit_amount/],
  ])('%s', (_, tiers, message) => {
    expect(() => tieredAmount(tiers as Tier[], 'SLAB', new D(1))).toThrow(RangeError)
    expect(() => tieredAmount(tiers as Tier[], 'VOLUME', new D(1))).toThrow(message)
  })

  it('rejects a missing tier_mode', () => expect(() => tieredAmount(TIERS, undefined, new D(1))).toThrow(/tier_mode/))
})
