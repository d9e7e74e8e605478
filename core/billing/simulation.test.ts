import { describe, expect, it } from 'vitest'
import { D } from '../money.ts'
import { computeInvoice } from './invoice.ts'
import { addBilled, billedByPrice, BUCKETS, bucketOf, differencePercent, type SimulatedLine } from './simulation.ts'

const usage = { billing_model: 'FLAT_FEE' as const, amount: '0.10' }

describe('billedByPrice', () => {
  it('is each price’s lines less their discounts, adding up to subtotal − total_discount', () => {
    // 20.00 fee + 300 × 0.10 = 30.00 usage; 5.00 off the fee line, then 10% off the invoice:
    // fee 15.00 − 1.50 = 13.50; usage 30.00 − 3.00 = 27.00.
    const invoice = computeInvoice({
      currency: 'USD',
      invoice_date: new Date('2024-03-01T00:00:00Z'),
      lines: [
        { price_type: 'FIXED', price_id: 'fee', amount: new D('20') },
        { price_type: 'USAGE', price_id: 'calls', quantity: new D(300), price: usage },
      ],
      coupons: [
        { coupon: { id: 'five', type: 'fixed', cadence: 'forever', amount_off: '5', currency: 'USD' }, line_index: 0 },
        { coupon: { id: 'ten', type: 'percentage', cadence: 'forever', percentage_off: '10' } },
      ],
    })
    const billed = billedByPrice(invoice)
    expect([billed.get('fee')!.toFixed(), billed.get('calls')!.toFixed()]).toEqual(['13.5', '27'])
    expect(billed.get('fee')!.plus(billed.get('calls')!).toFixed()).toBe(invoice.subtotal.minus(invoice.total_discount).toFixed())
  })

  it('keys a shared commitment’s true-up by null, and adds lines of one price together', () => {
    // 100 × 0.10 = 10.00 twice under a 25.00 commitment: 5.00 true-up.
    const invoice = computeInvoice({
      currency: 'USD',
      invoice_date: new Date('2024-03-01T00:00:00Z'),
      lines: [
        { price_type: 'USAGE', price_id: 'calls', quantity: new D(100), price: usage },
        { price_type: 'USAGE', price_id: 'calls', quantity: new D(100), price: usage },
      ],
      commitments: [{ commitment: { amount: '25', true_up_enabled: true }, line_indexes: [0, 1], display_name: 'Commitment true-up' }],
    })
    const billed = billedByPrice(invoice)
    expect([billed.get('calls')!.toFixed(), billed.get(null)!.toFixed()]).toEqual(['20', '5'])
  })
})

describe('addBilled', () => {
  it('puts a price billed on one side only at 0 on the other', () => {
    const lines = new Map<string | null, SimulatedLine>()
    addBilled(lines, 'current', new Map([['old', new D(40)]]))
    addBilled(lines, 'candidate', new Map([['new', new D(50)]]))
    addBilled(lines, 'current', new Map([['old', new D(2.5)]]))
    expect([...lines.values()].map((l) => [l.price_id, l.current.toFixed(), l.candidate.toFixed()])).toEqual([
      ['old', '42.5', '0'],
      ['new', '0', '50'],
    ])
  })
})

describe('differencePercent', () => {
  it('is the change over the current amount, 2 places, half up', () => {
    expect(differencePercent(new D(77), new D(116))!.toFixed()).toBe('50.65') // 39 / 77 = 50.649…
    expect(differencePercent(new D(95), new D(125))!.toFixed()).toBe('31.58') // 30 / 95 = 31.578…
    expect(differencePercent(new D(80), new D(60))!.toFixed()).toBe('-25')
    // A credit (negative current) that grows is a decrease of what the customer pays.
    expect(differencePercent(new D(-10), new D(-15))!.toFixed()).toBe('-50')
  })

  it('has no base when nothing was billed', () => {
    expect(differencePercent(new D(0), new D(5))).toBeNull()
  })
})

describe('bucketOf', () => {
  const bucket = (current: number | string, candidate: number | string) => BUCKETS[bucketOf(new D(current), new D(candidate))]
  it('puts an unchanged amount in its own bucket, and a change at an edge in the bucket it starts', () => {
    expect(bucket(80, 80)).toMatchObject({ unchanged: true })
    expect(bucket(0, 0)).toMatchObject({ unchanged: true })
    expect(bucket(100, 105)).toEqual({ from: 5, to: 10 })
    expect(bucket(100, '104.999')).toEqual({ from: 0, to: 5 })
    expect(bucket(100, '100.01')).toEqual({ from: 0, to: 5 })
    expect(bucket(100, 95)).toEqual({ from: -5, to: 0 })
    expect(bucket(100, '94.99')).toEqual({ from: -10, to: -5 })
    expect(bucket(100, 150)).toEqual({ from: 50, to: null })
    expect(bucket(100, 50)).toEqual({ from: -50, to: -20 })
    expect(bucket(100, 10)).toEqual({ from: null, to: -50 })
  })

  it('counts a change from nothing as the largest move its way', () => {
    expect(bucket(0, 5)).toEqual({ from: 50, to: null })
    expect(bucket(0, -5)).toEqual({ from: null, to: -50 })
  })
})
