import { describe, expect, it } from 'vitest'
import { D, formatMoney, type Decimal } from '../money.ts'
import type { PriceInput } from '../pricing/index.ts'
import type { Coupon } from './coupons.ts'
import { computeInvoice, type Invoice, type InvoiceInput } from './invoice.ts'
import type { TaxRate } from './taxes.ts'

const DATE = new Date('2024-05-01T00:00:00Z')
const TIERS = [
  { up_to: 100, unit_amount: '0.10' },
  { up_to: 1000, unit_amount: '0.08', flat_amount: '5' },
  { up_to: null, unit_amount: '0.05' },
]
const flat = (amount: string, extra: Partial<PriceInput> = {}): PriceInput => ({ billing_model: 'FLAT_FEE', amount, ...extra })
const SLAB: PriceInput = { billing_model: 'TIERED', amount: '0', tier_mode: 'SLAB', tiers: TIERS }
const pct = (p: string): Coupon => ({ id: `c${p}`, type: 'percentage', cadence: 'forever', percentage_off: p })
const off = (amount: string, currency: string): Coupon => ({ id: `off${amount}`, type: 'fixed', cadence: 'once', amount_off: amount, currency })
const tax = (p: string): TaxRate => ({ id: `t${p}`, tax_rate_type: 'percentage', percentage_value: p })

// Every amount printed with the currency's minor digits, so the tables read like the invoice.
function summary(inv: Invoice) {
  const m = (d: Decimal) => formatMoney(d, inv.currency)
  return {
    lines: inv.line_items.map((l) => [m(l.amount), m(l.line_item_discount), m(l.invoice_level_discount), m(l.tax_amount), m(l.prepaid_credits_applied)]),
    totals: [inv.subtotal, inv.total_discount, inv.total_tax, inv.total, inv.total_prepaid_credits_applied, inv.amount_due].map(m),
  }
}

// The three worked examples of docs/billing.md, "Worked examples".
const USD_EXAMPLE: InvoiceInput = {
  currency: 'USD',
  invoice_date: DATE,
  lines: [
    { price_type: 'FIXED', display_name: 'Pro plan', price: flat('49.00'), quantity: new D(1) },
    { price_type: 'USAGE', display_name: 'Storage (GB)', price: SLAB, quantity: new D('1234.5') },
  ],
  coupons: [{ coupon: pct('10'), line_index: 1 }, { coupon: off('5.00', 'USD') }],
  taxes: [{ rate: tax('8.25') }],
  prepaid: { available: new D('20.00'), allowed_price_types: ['USAGE'] },
}
const JPY_EXAMPLE: InvoiceInput = {
  currency: 'JPY',
  invoice_date: DATE,
  lines: [
    { price_type: 'FIXED', display_name: 'Basic plan', price: flat('980'), quantity: new D(1) },
    { price_type: 'USAGE', display_name: 'Requests', price: flat('0.5'), quantity: new D(12345) },
  ],
  coupons: [{ coupon: pct('10'), line_index: 1 }, { coupon: off('500', 'JPY') }],
  taxes: [{ rate: tax('10') }],
}
const KWD_EXAMPLE: InvoiceInput = {
  currency: 'KWD',
  invoice_date: DATE,
  lines: [
    { price_type: 'FIXED', display_name: 'Team plan', price: flat('12.500'), quantity: new D(1) },
    { price_type: 'USAGE', display_name: 'Messages', price: flat('0.00125'), quantity: new D(1234), commitment: { amount: '2.000', true_up_enabled: true } },
    { price_type: 'FIXED', display_name: 'Extra seats', price: flat('3.000'), quantity: new D(0) },
  ],
  coupons: [{ coupon: pct('10') }],
  taxes: [{ rate: tax('5') }],
}

describe('computeInvoice: the worked examples', () => {
  // Columns per line: amount, line discount, invoice discount share, tax share, prepaid credits.
  // Totals: subtotal, discount, tax, total, prepaid credits, amount due.
  it.each<[string, InvoiceInput, string[][], string[]]>([
    // Line 0: 49.00 × 1 = 49.00. Line 1 (SLAB): 100 × 0.10 + 900 × 0.08 + 5 + 234.5 × 0.05 = 98.725 → 98.73.
    // 10% of 98.73 = 9.873 → 9.87. Left 49.00 + 88.86 = 137.86; 5.00 spread 1.78 / 3.22 (1.777…, 3.222…).
    // Taxable 47.22 + 85.64 = 132.86 × 8.25% = 10.96095 → 10.96; split 3.90 / 7.06 (3.895…, 7.064…).
    // Subtotal 147.73, discount 9.87 + 5.00 = 14.87, total 147.73 − 14.87 + 10.96 = 143.82.
    // Prepaid 20.00 for USAGE only: line 1 costs 88.86 − 3.22 + 7.06 = 92.70 ≥ 20.00; due 123.82.
    ['USD', USD_EXAMPLE, [
      ['49.00', '0.00', '1.78', '3.90', '0.00'],
      ['98.73', '9.87', '3.22', '7.06', '20.00'],
    ], ['147.73', '14.87', '10.96', '143.82', '20.00', '123.82']],
    // Line 1: 0.5 × 12345 = 6172.5 → 6173 (half away from zero). 10% = 617.3 → 617.
    // Left 980 + 5556 = 6536; 500 spread 75 / 425 (74.97…, 425.03…). Taxable 905 + 5131 = 6036 × 10% = 603.6 → 604,
    // split 91 / 513 (90.56…, 513.44…). Total 7153 − 1117 + 604 = 6640.
    ['JPY', JPY_EXAMPLE, [
      ['980', '0', '75', '91', '0'],
      ['6173', '617', '425', '513', '0'],
    ], ['7153', '1117', '604', '6640', '0', '6640']],
    // Line 1: 0.00125 × 1234 = 1.5425 → 1.543; commitment 2.000 → true-up line 2.000 − 1.543 = 0.457 (last).
    // Line 2: 0 seats = 0. Subtotal 12.500 + 1.543 + 0 + 0.457 = 14.500; 10% = 1.450, spread exactly
    // 1.250 / 0.1543 → 0.154 / 0 / 0.0457 → 0.046. Taxable 11.250 + 1.389 + 0 + 0.411 = 13.050 × 5% = 0.6525
    // → 0.653 (half away from zero). Split 0.56293… → 0.563, 0.06950… → 0.070, 0, 0.02056… → 0.021: 0.654 is
    // one fils too many, taken from the largest line: 0.562. Total 14.500 − 1.450 + 0.653 = 13.703.
    ['KWD', KWD_EXAMPLE, [
      ['12.500', '0.000', '1.250', '0.562', '0.000'],
      ['1.543', '0.000', '0.154', '0.070', '0.000'],
      ['0.000', '0.000', '0.000', '0.000', '0.000'],
      ['0.457', '0.000', '0.046', '0.021', '0.000'],
    ], ['14.500', '1.450', '0.653', '13.703', '0.000', '13.703']],
  ])('%s', (_, input, lines, totals) => expect(summary(computeInvoice(input))).toEqual({ lines, totals }))

  it('USD: CouponApplication and TaxApplied records, tiers', () => {
    const inv = computeInvoice(USD_EXAMPLE)
    expect(inv.coupon_applications.map((a) => [a.line_index, a.original_price, a.discounted_amount, a.final_price].map(String))).toEqual([
      ['1', '98.73', '9.87', '88.86'],
      ['null', '137.86', '5', '132.86'],
    ])
    expect(inv.taxes.map((t) => [t.tax_rate_id, t.taxable_amount.toFixed(), t.tax_amount.toFixed()])).toEqual([['t8.25', '132.86', '10.96']])
    expect(inv.line_items[1].tiers!.map((t) => t.amount.toFixed())).toEqual(['10', '77', '11.725'])
  })

  it('KWD: the true-up line and the commitment_info', () => {
    const inv = computeInvoice(KWD_EXAMPLE)
    expect(inv.line_items[3]).toMatchObject({ display_name: 'True-up for Messages', true_up_for: [1] })
    const info = inv.line_items[1].commitment_info!
    expect([info.computed_commitment_utilized_amount, info.computed_overage_amount, info.computed_true_up_amount].map(String)).toEqual(['1.543', '0', '0.457'])
  })
})

describe('computeInvoice: edge cases', () => {
  const usage = (amount: string, q: string) => ({ price_type: 'USAGE' as const, price: flat(amount), quantity: new D(q) })
  const fixedLine = (amount: string) => ({ price_type: 'FIXED' as const, price: flat(amount), quantity: new D(1) })
  const base = (extra: Partial<InvoiceInput>): InvoiceInput => ({ currency: 'USD', invoice_date: DATE, lines: [], ...extra })

  it.each<[string, InvoiceInput, string[][], string[]]>([
    // Nothing used: 0 everywhere, and a fixed tax is not charged on nothing.
    ['all zero quantities', base({ lines: [usage('2.00', '0')], taxes: [{ rate: { id: 'f', tax_rate_type: 'fixed', fixed_value: '1.00' } }] }), [['0.00', '0.00', '0.00', '0.00', '0.00']], ['0.00', '0.00', '0.00', '0.00', '0.00', '0.00']],
    // A 50.00 coupon on 12.00 discounts 12.00; tax on 0 is 0.
    ['coupon bigger than the invoice', base({ lines: [fixedLine('12.00')], coupons: [{ coupon: off('50.00', 'USD') }], taxes: [{ rate: tax('10') }] }), [['12.00', '0.00', '12.00', '0.00', '0.00']], ['12.00', '12.00', '0.00', '0.00', '0.00', '0.00']],
    // A 10% coupon on 100.00 beside a 10.00 usage adjustment of an earlier period (not discountable): 10.00 off the first only.
    ['a line no coupon discounts', base({ lines: [fixedLine('100.00'), { price_type: 'USAGE', amount: new D('10.00'), quantity: new D(20), discountable: false }], coupons: [{ coupon: pct('10') }] }), [['100.00', '0.00', '10.00', '0.00', '0.00'], ['10.00', '0.00', '0.00', '0.00', '0.00']], ['110.00', '10.00', '0.00', '100.00', '0.00', '100.00']],
    // 1.005 × 3 lines → 1.01 each: subtotal 3.03 (a rounded sum would be 3.02).
    ['lines round once, totals add rounded lines', base({ lines: [usage('1.005', '1'), usage('1.005', '1'), usage('1.005', '1')] }), [['1.01', '0.00', '0.00', '0.00', '0.00'], ['1.01', '0.00', '0.00', '0.00', '0.00'], ['1.01', '0.00', '0.00', '0.00', '0.00']], ['3.03', '0.00', '0.00', '3.03', '0.00', '3.03']],
    // Credits 100.00 for ALL on a 22.00 invoice: all of it paid, amount due 0.
    ['prepaid credits above the total', base({ lines: [fixedLine('10.00'), usage('12.00', '1')], prepaid: { available: new D('100.00'), allowed_price_types: ['ALL'] } }), [['10.00', '0.00', '0.00', '0.00', '10.00'], ['12.00', '0.00', '0.00', '0.00', '12.00']], ['22.00', '0.00', '0.00', '22.00', '22.00', '0.00']],
    // 15.009 available is used as 15.00; FIXED only: line 0 takes 10.00, line 1 is usage, line 2 takes 5.00.
    ['prepaid credits in line order, eligible types only', base({ lines: [fixedLine('10.00'), usage('12.00', '1'), fixedLine('7.00')], prepaid: { available: new D('15.009'), allowed_price_types: ['FIXED'] } }), [['10.00', '0.00', '0.00', '0.00', '10.00'], ['12.00', '0.00', '0.00', '0.00', '0.00'], ['7.00', '0.00', '0.00', '0.00', '5.00']], ['29.00', '0.00', '0.00', '29.00', '15.00', '14.00']],
    // Downgrade 90.00 → 30.00 with 10 of 30 days left: −30.00 and +10.00; 10% tax of −20.00 = −2.00;
    // total −22.00; nothing is due and no credits are used.
    ['a net credit', base({ lines: [{ price_type: 'FIXED', amount: new D('-30') }, { price_type: 'FIXED', amount: new D('10') }], taxes: [{ rate: tax('10') }], prepaid: { available: new D(5), allowed_price_types: ['ALL'] } }), [['-30.00', '0.00', '0.00', '0.00', '0.00'], ['10.00', '0.00', '0.00', '-2.00', '0.00']], ['-20.00', '0.00', '-2.00', '-22.00', '0.00', '0.00']],
    // Proration lines from docs/billing.md: −48.3822… → −48.38 and 72.5758… → 72.58; net 24.20.
    ['proration amounts round per line', base({ lines: [{ price_type: 'FIXED', amount: new D('99.99').times(15).div(31).neg() }, { price_type: 'FIXED', amount: new D('149.99').times(15).div(31) }] }), [['-48.38', '0.00', '0.00', '0.00', '0.00'], ['72.58', '0.00', '0.00', '0.00', '0.00']], ['24.20', '0.00', '0.00', '24.20', '0.00', '24.20']],
    // Soft allowance of 1000: 1500.5 − 1000 = 500.5 × 0.02 = 10.01.
    ['allowance before pricing', base({ lines: [{ ...usage('0.02', '1500.5'), allowance: { usage_limit: 1000, is_soft_limit: true } }] }), [['10.01', '0.00', '0.00', '0.00', '0.00']], ['10.01', '0.00', '0.00', '10.01', '0.00', '10.01']],
    // 5% on line 1 only, which reaches its true-up line (2): 5% of (0.50 + 9.50) = 0.50, split 0.03 / 0.48 (0.025 → 0.03,
    // 0.475 → 0.48: one cent too many, taken from the largest line).
    ['a line tax covers the true-up of its line', base({ lines: [fixedLine('20.00'), { ...usage('0.50', '1'), commitment: { amount: '10.00', true_up_enabled: true } }], taxes: [{ rate: tax('5'), line_indexes: [1] }] }), [['20.00', '0.00', '0.00', '0.00', '0.00'], ['0.50', '0.00', '0.00', '0.03', '0.00'], ['9.50', '0.00', '0.00', '0.47', '0.00']], ['30.00', '0.00', '0.50', '30.50', '0.00', '30.50']],
  ])('%s', (_, input, lines, totals) => expect(summary(computeInvoice(input))).toEqual({ lines, totals }))

  it('a shared commitment over two usage lines: order, overage and its own true-up line', () => {
    // 80.00 and 50.00 of usage against 100.00 × 1.5: 80.00, then 20.00 + 30.00 × 1.5 = 65.00; the fixed line is outside.
    const above = computeInvoice(base({ lines: [usage('0.10', '800'), fixedLine('20.00'), usage('0.25', '200')], commitments: [{ commitment: { amount: '100.00', overage_factor: '1.5' }, line_indexes: [0, 2], display_name: 'Commitment true-up' }] }))
    expect(summary(above).lines.map((l) => l[0])).toEqual(['80.00', '20.00', '65.00'])
    expect(above.line_items[2].commitment_info!.computed_overage_amount.toFixed()).toBe('45')
    // 30.00 of usage, true-up 70.00 after every given line; a 10% tax covers it.
    const below = computeInvoice(base({ lines: [usage('0.10', '300'), fixedLine('20.00')], commitments: [{ commitment: { amount: '100.00', true_up_enabled: true }, line_indexes: [0], display_name: 'Commitment true-up' }], taxes: [{ rate: tax('10') }] }))
    expect(below.line_items[2]).toMatchObject({ display_name: 'Commitment true-up', true_up_for: [0], shared_commitment: 0, price_type: 'USAGE' })
    expect(summary(below)).toEqual({ lines: [['30.00', '0.00', '0.00', '3.00', '0.00'], ['20.00', '0.00', '0.00', '2.00', '0.00'], ['70.00', '0.00', '0.00', '7.00', '0.00']], totals: ['120.00', '0.00', '12.00', '132.00', '0.00', '132.00'] })
    expect(() => computeInvoice(base({ lines: [{ price_type: 'FIXED', amount: new D(1) }], commitments: [{ commitment: { amount: '1.00' }, line_indexes: [0], display_name: 'x' }] }))).toThrow(/commitments\[0\]/)
  })

  it('keeps quantity, billed quantity and names on the lines', () => {
    const inv = computeInvoice(base({ lines: [{ price_type: 'FIXED', price_id: 'p1', display_name: 'Seats', price: flat('2.00', { min_quantity: '10' }), quantity: new D(3) }] }))
    expect(inv.line_items[0]).toMatchObject({ price_id: 'p1', display_name: 'Seats', price_type: 'FIXED', currency: 'USD' })
    expect([inv.line_items[0].quantity, inv.line_items[0].billed_quantity, inv.line_items[0].amount].map(String)).toEqual(['3', '10', '20'])
  })

  it.each<[string, InvoiceInput, RegExp]>([
    ['price and amount', base({ lines: [{ price_type: 'FIXED', price: flat('1'), amount: new D(1) }] }), /exactly one of price and amount/],
    ['neither', base({ lines: [{ price_type: 'FIXED' }] }), /exactly one of price and amount/],
    ['an allowance without a price', base({ lines: [{ price_type: 'USAGE', amount: new D(1), allowance: { usage_limit: 1 } }] }), /allowance/],
    ['a bad currency', { ...base({ lines: [] }), currency: 'US' }, /currency/],
    ['negative credits', base({ lines: [fixedLine('1.00')], prepaid: { available: new D(-1), allowed_price_types: ['ALL'] } }), /prepaid/],
    ['a coupon in another currency', base({ lines: [fixedLine('1.00')], coupons: [{ coupon: off('1.00', 'EUR') }] }), /currency/],
  ])('rejects %s', (_, input, message) => expect(() => computeInvoice(input)).toThrow(message))
})
