import { describe, expect, it } from 'vitest'
import { D, type Decimal } from '../money.ts'
import type { PriceInput } from '../pricing/index.ts'
import { allocateByUsage, cumulativeUsage, incrementalCosts, periodCosts, usageLineCost, type UsageLinePricing } from './allocation.ts'

const ds = (...xs: string[]): Decimal[] => xs.map((x) => new D(x))
const text = (xs: Decimal[]): string[] => xs.map((x) => x.toFixed())
const sum = (xs: Decimal[]): string => xs.reduce((a, b) => a.plus(b), new D(0)).toFixed()

describe('allocateByUsage: largest remainder in minor units', () => {
  it.each([
    // total, currency, usages, parts (worked by hand: floors of total × u / Σu in minor units, leftover units to the largest remainders)
    ['100.00', 'USD', ['50', '30', '20'], ['50', '30', '20']],
    // 1000 cents / 3 = 333.33… each: floors 333 × 3 = 999, one cent left, remainders tie, usages tie: the first.
    ['10.00', 'USD', ['1', '1', '1'], ['3.34', '3.33', '3.33']],
    // 5 cents over 7 equal groups: 0.71… each, floors 0, the first five get a cent.
    ['0.05', 'USD', ['1', '1', '1', '1', '1', '1', '1'], ['0.01', '0.01', '0.01', '0.01', '0.01', '0', '0']],
    // 33.5, 33.5, 33 cents: floors 33 each, one cent left to the first of the two .5 remainders (half-up would give 34, 34, 33 = 1.01).
    ['1.00', 'USD', ['0.335', '0.335', '0.33'], ['0.34', '0.33', '0.33']],
    // 2 cents over usages 1 and 3: exact 0.5 and 1.5 cents, floors 0 and 1, remainders tie (½ each): the larger usage takes it.
    ['0.02', 'USD', ['1', '3'], ['0', '0.02']],
    // 1000 yen over 1 : 2: 333.33 and 666.67, floors 333 + 666, the larger remainder (⅔) takes the last yen.
    ['1000', 'JPY', ['1', '2'], ['333', '667']],
    // 1.000 KWD (1000 fils) over 1 : 1 : 1 : 1 : 2 → 166.67 × 4 and 333.33: floors 166 × 4 + 333 = 997, three fils to the remainders ⅔ (first three).
    ['1.000', 'KWD', ['1', '1', '1', '1', '2'], ['0.167', '0.167', '0.167', '0.166', '0.333']],
    // A credit is split as its opposite.
    ['-10.00', 'USD', ['1', '1', '1'], ['-3.34', '-3.33', '-3.33']],
    // No usage at all: equal shares.
    ['1.00', 'USD', ['0', '0', '0'], ['0.34', '0.33', '0.33']],
    // A group without usage gets nothing when others have some.
    ['1.00', 'USD', ['0', '2', '0'], ['0', '1', '0']],
    // The total is rounded to the minor unit first: 10.005 → 10.01.
    ['10.005', 'USD', ['1', '1'], ['5.01', '5']],
    // Usages with 12 places and 26 digits are exact.
    ['0.03', 'USD', ['12345678901234567890123456.000000000001', '12345678901234567890123456.000000000001', '0.000000000001'], ['0.02', '0.01', '0']],
    ['0', 'USD', ['5', '1'], ['0', '0']],
  ])('%s %s over %j → %j', (total, currency, usages, parts) => {
    const got = allocateByUsage(new D(total), ds(...usages), currency)
    expect(text(got)).toEqual(parts)
    expect(sum(got)).toBe(new D(total).toDecimalPlaces(currency === 'JPY' ? 0 : currency === 'KWD' ? 3 : 2, D.ROUND_HALF_UP).toFixed())
  })

  it('adds up to the total for many uneven groups, each part within one minor unit of its exact share', () => {
    const usages = Array.from({ length: 97 }, (_, i) => new D((i * 7919) % 1009).plus('0.5'))
    const total = new D('12345.67')
    const parts = allocateByUsage(total, usages, 'EUR')
    expect(sum(parts)).toBe('12345.67')
    const all = usages.reduce((a, b) => a.plus(b), new D(0))
    parts.forEach((p, i) => expect(p.minus(total.times(usages[i]).div(all)).abs().lt('0.01')).toBe(true))
  })

  it('splits over more groups than a function call takes arguments (500,000)', () => {
    // 5,000.00 over 500,000 equal groups: 1 cent each, exactly.
    const parts = allocateByUsage(new D('5000'), Array.from({ length: 500_000 }, () => new D('0.5')), 'USD')
    expect(parts.length).toBe(500_000)
    expect(parts.every((p) => p.toFixed() === '0.01')).toBe(true)
  })

  it('refuses negative usage and a non-zero total without groups', () => {
    expect(() => allocateByUsage(new D(1), ds('1', '-1'), 'USD')).toThrow(RangeError)
    expect(() => allocateByUsage(new D(1), [], 'USD')).toThrow(RangeError)
    expect(allocateByUsage(new D('0.001'), [], 'USD')).toEqual([])
  })
})

const flat = (amount: string, extra: Partial<PriceInput> = {}): PriceInput => ({ billing_model: 'FLAT_FEE', amount, ...extra })
const usd = (price: PriceInput, extra: Partial<UsageLinePricing> = {}): UsageLinePricing => ({ currency: 'USD', price, ...extra })

describe('usageLineCost: what the invoice line bills', () => {
  it.each([
    ['flat 0.10 × 15.5', usd(flat('0.10')), '15.5', '1.55'],
    ['rounded once: 0.015 × 3 = 0.045 → 0.05', usd(flat('0.015')), '3', '0.05'],
    ['min_quantity 100 at 0.10, quantity 10', usd(flat('0.10', { min_quantity: '100' })), '10', '10'],
    ['soft allowance of 100, 150 used', usd(flat('0.10'), { allowance: { usage_limit: 100, is_soft_limit: true } }), '150', '5'],
    ['hard allowance of 100, 150 used: nothing billed', usd(flat('0.10'), { allowance: { usage_limit: 100 } }), '150', '0'],
    ['commitment 20, factor 1.5, charge 30: 20 + 10 × 1.5', usd(flat('0.10'), { commitment: { amount: '20.00', overage_factor: '1.5' } }), '300', '35'],
  ])('%s', (_label, pricing, quantity, amount) => expect(usageLineCost(new D(quantity), pricing).toFixed()).toBe(amount))
})

describe('incrementalCosts: cost(to the window end) − cost(to its start)', () => {
  const slab: PriceInput = {
    billing_model: 'TIERED',
    amount: '0',
    tier_mode: 'SLAB',
    tiers: [{ up_to: 100, unit_amount: '0.10' }, { up_to: 1000, unit_amount: '0.05' }, { up_to: null, unit_amount: '0.01' }],
  }
  const volume: PriceInput = {
    billing_model: 'TIERED',
    amount: '0',
    tier_mode: 'VOLUME',
    tiers: [{ up_to: 100, unit_amount: '0.10', flat_amount: '5' }, { up_to: null, unit_amount: '0.08' }],
  }
  const pack: PriceInput = { billing_model: 'PACKAGE', amount: '5.00', transform_quantity: { divide_by: 1000, round: 'up' } }
  it.each([
    // cumulative usage → points; each row's sum is the cost of the last cumulative usage.
    ['flat 0.10: 1.00, 1.00, 1.55', usd(flat('0.10')), ['10', '10', '15.5'], ['1', '0', '0.55']],
    ['rounding: 0.02, 0.03, 0.05 (0.015 × 1, 2, 3 rounded)', usd(flat('0.015')), ['1', '2', '3'], ['0.02', '0.01', '0.02']],
    // 60 → 6.00; 120 → 100 × 0.10 + 20 × 0.05 = 11.00; 1120 → 10 + 900 × 0.05 + 120 × 0.01 = 56.20.
    ['slab tiers', usd(slab), ['60', '120', '1120'], ['6', '5', '45.2']],
    // 50 → 5 + 50 × 0.10 = 10.00; 150 → 150 × 0.08 = 12.00; 101 after 100 (15.00) → 8.08.
    ['volume tiers', usd(volume), ['50', '150'], ['10', '2']],
    ['volume tiers crossing into the cheaper tier cost less than nothing', usd(volume), ['100', '101'], ['15', '-6.92']],
    // Packages of 1000 at 5.00, rounded up: 1 → 1 package, 999 → 1, 1001 → 2.
    ['packages', usd(pack), ['1', '999', '1001'], ['5', '0', '5']],
    // Allowance of 100 (soft): the first 100 are included.
    ['allowance', usd(flat('0.10'), { allowance: { usage_limit: 100, is_soft_limit: true } }), ['80', '150', '150'], ['0', '5', '0']],
    // A minimum lands in the first window: cost(10) = 100 × 0.10 = 10.00, cost(50) = 10.00, cost(150) = 15.00.
    ['min quantity', usd(flat('0.10', { min_quantity: '100' })), ['10', '50', '150'], ['10', '0', '5']],
    // Commitment 20.00, overage × 1.5: cost(100) = 10.00 within; cost(300) = 20 + (30 − 20) × 1.5 = 35.00.
    ['commitment', usd(flat('0.10'), { commitment: { amount: '20.00', overage_factor: '1.5' } }), ['100', '300'], ['10', '25']],
    ['JPY', { currency: 'JPY', price: flat('0.5') }, ['1', '2', '3'], ['1', '0', '1']],
    ['no windows', usd(flat('1')), [], []],
  ])('%s', (_label, pricing, cumulative, points) => {
    const got = incrementalCosts(ds(...cumulative), pricing)
    expect(text(got)).toEqual(points)
    if (cumulative.length > 0) expect(sum(got)).toBe(usageLineCost(new D(cumulative[cumulative.length - 1]), pricing).toFixed())
  })
})

describe('cumulativeUsage: usage up to each window end', () => {
  const w = (...pairs: [string, string][]) => pairs.map(([eventCount, usage]) => ({ eventCount: new D(eventCount), usage: new D(usage) }))
  it.each([
    ['SUM', w(['1', '1'], ['2', '-2'], ['0', '0'], ['1', '3']), {}, ['1', '-1', '-1', '2']],
    ['SUM from an opening', w(['1', '1'], ['2', '-2']), { opening: new D(10) }, ['11', '9']],
    ['COUNT', w(['3', '3'], ['0', '0'], ['2', '2']), {}, ['3', '3', '5']],
    ['SUM_WITH_MULTIPLIER', w(['1', '2.5'], ['1', '2.5']), {}, ['2.5', '5']],
    ['MAX', w(['1', '5'], ['0', '0'], ['2', '3'], ['1', '9']), {}, ['5', '5', '5', '9']],
    ['MAX of negative values, empty windows ignored', w(['1', '-5'], ['0', '0'], ['1', '-7']), {}, ['-5', '-5', '-5']],
    ['MAX from an opening', w(['1', '5']), { opening: new D(8) }, ['8']],
    ['MIN', w(['1', '5'], ['0', '0'], ['1', '3'], ['1', '4']), {}, ['5', '5', '3', '3']],
    ['LATEST', w(['1', '5'], ['0', '0'], ['1', '2']), {}, ['5', '5', '2']],
    ['LATEST before any event', w(['0', '0'], ['1', '4']), {}, ['0', '4']],
    ['LATEST from an opening', w(['0', '0'], ['1', '4']), { opening: new D(7) }, ['7', '4']],
    ['MAX with a bucket size is a sum of buckets', w(['1', '5'], ['1', '3']), { bucketed: true }, ['5', '8']],
    ['COUNT_UNIQUE with a bucket size too', w(['4', '2'], ['3', '2']), { bucketed: true }, ['2', '4']],
  ] as const)('%s', (type, windows, options, expected) => {
    const t = type.split(' ')[0] as Parameters<typeof cumulativeUsage>[0]
    expect(text(cumulativeUsage(t, windows, options))).toEqual(expected)
  })

  it.each(['COUNT_UNIQUE', 'AVG', 'WEIGHTED_SUM'] as const)('refuses %s without a bucket size', (type) => {
    expect(() => cumulativeUsage(type, w(['1', '1']))).toThrow(/read it from the store/)
    expect(() => cumulativeUsage(type, [])).toThrow(RangeError)
  })
})

describe('periodCosts: the usage lines of one billing period priced together', () => {
  it('a shared commitment of 10.00 with overage ×1.5: lines use it up in order, the excess at 1.5', () => {
    // Line A at 0.10 a unit, line B at 1.00. At 50 and 3 units: 5.00 + 3.00 = 8.00 within the 10.00.
    // At 120 and 6: A's 12.00 takes the 10.00 and bills 2.00 × 1.5 = 3.00 over it (13.00); B is all overage: 6 × 1.5 = 9.00.
    const r = periodCosts([ds('0', '50', '120'), ds('0', '3', '6')], { currency: 'USD', lines: [{ price: flat('0.10') }, { price: flat('1.00') }], commitment: { amount: '10.00', overage_factor: '1.5', true_up_enabled: true } })
    expect(r.costs.map(text)).toEqual([['5', '8'], ['3', '6']])
    expect(text(r.amounts)).toEqual(['13', '9'])
    expect(r.commitment!.map((c) => [c.utilized.toFixed(), c.overage.toFixed()])).toEqual([['10', '3'], ['0', '9']])
    // Per window: A used 5.00 of the commitment, then 5.00 more and went 3.00 over; B 3.00, then gave back 3.00 to billing 9.00 over it.
    expect(r.commitmentWindows!.utilized.map(text)).toEqual([['5', '5'], ['3', '-3']])
    expect(r.commitmentWindows!.overage.map(text)).toEqual([['0', '3'], ['0', '9']])
  })

  it('a read starting mid-period: the allowance is used by the usage before it', () => {
    // 100 units included (a soft limit: usage above is billed), 0.02 a unit above: 80 units before the range cost 0; 150 → 1.00; 300 → 4.00.
    const r = periodCosts([ds('80', '150', '300')], { currency: 'USD', lines: [{ price: flat('0.02'), allowance: { usage_limit: 100, is_soft_limit: true } }] })
    expect(r.costs.map(text)).toEqual([['1', '3']])
    expect(text(r.amounts)).toEqual(['4'])
    expect(r.commitment).toBeNull()
  })

  it('a line billed from the first instant takes its minimum in its first window', () => {
    // min_quantity 100 at 0.05: 5.00 at once whatever the usage; 30 then 140 units: 5.00, then 7.00 − 5.00.
    const price = flat('0.05', { min_quantity: '100' })
    expect(periodCosts([ds('0', '30', '140')], { currency: 'USD', lines: [{ price }] }, [true]).costs.map(text)).toEqual([['5', '2']])
    // Read from inside the period: the minimum was billed before the range.
    expect(periodCosts([ds('0', '30', '140')], { currency: 'USD', lines: [{ price }] }).costs.map(text)).toEqual([['0', '2']])
  })

  it('windows without usage cost nothing, before and after the minimum and within a commitment', () => {
    // min_quantity 100 at 0.05, billed from the first instant: no usage, then none, 30, none, 140 units: 5.00 in the
    // first window (nothing used yet), then 0, 0, 0 and 7.00 − 5.00.
    const price = flat('0.05', { min_quantity: '100' })
    expect(periodCosts([ds('0', '0', '0', '30', '30', '140')], { currency: 'USD', lines: [{ price }] }, [true]).costs.map(text)).toEqual([['5', '0', '0', '0', '2']])
    // The shared commitment above with a quiet window between: 8.00 of it used, nothing, then A 5.00 + 3.00 over, B 6.00 over.
    const r = periodCosts([ds('0', '50', '50', '120'), ds('0', '3', '3', '6')], { currency: 'USD', lines: [{ price: flat('0.10') }, { price: flat('1.00') }], commitment: { amount: '10.00', overage_factor: '1.5', true_up_enabled: true } })
    expect(r.costs.map(text)).toEqual([['5', '0', '8'], ['3', '0', '6']])
    expect(r.commitmentWindows!.utilized.map(text)).toEqual([['5', '0', '5'], ['3', '0', '-3']])
  })

  it('an allowance that resets each day: each day uses its own 100 included units', () => {
    // Days of 150, 80 and 130 units at 0.10 above 100 a day: 5.00, 0, 3.00 (once a period it would be 26.00).
    const days = [ds('0', '150', '150', '150'), ds('0', '0', '80', '80'), ds('0', '0', '0', '130')]
    const total = ds('0', '150', '230', '360')
    const r = periodCosts([total], { currency: 'USD', lines: [{ price: flat('0.10'), allowance: { usage_limit: 100, is_soft_limit: true } }] }, [true], [days])
    expect(r.costs.map(text)).toEqual([['5', '0', '3']])
    expect(text(r.amounts)).toEqual(['8'])
  })
})
