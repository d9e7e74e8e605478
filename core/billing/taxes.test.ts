import { describe, expect, it } from 'vitest'
import { D, type Decimal } from '../money.ts'
import { applyTaxes, ratesByLine, taxAmount, type TaxRate, type TaxUse } from './taxes.ts'

const pct = (p: string): TaxRate => ({ id: `tax${p}`, tax_rate_type: 'percentage', percentage_value: p })
const fixed = (v: string): TaxRate => ({ id: `fix${v}`, tax_rate_type: 'fixed', fixed_value: v })
const s = (xs: Decimal[]) => xs.map((x) => x.toFixed())
const dec = (xs: string[]) => s(xs.map((x) => new D(x)))

describe('taxAmount: one rounding per rate, half away from zero', () => {
  it.each([
    [pct('8.25'), '132.86', 'USD', '10.96'], // 10.96095
    [pct('8.25'), '100.00', 'USD', '8.25'],
    [pct('10'), '0.05', 'USD', '0.01'], // 0.005
    [pct('10'), '-0.05', 'USD', '-0.01'], // −0.005, away from zero
    [pct('0'), '99.99', 'USD', '0'],
    [pct('10'), '6036', 'JPY', '604'], // 603.6
    [pct('10'), '6035', 'JPY', '604'], // 603.5
    [pct('5'), '28.887', 'KWD', '1.444'], // 1.44435
    [pct('5'), '28.890', 'KWD', '1.445'], // 1.4445
    [fixed('1.50'), '10.00', 'USD', '1.50'],
    [fixed('1.50'), '0', 'USD', '0'], // nothing to tax: a zero invoice stays zero
    [fixed('1.50'), '-3.00', 'USD', '0'],
  ] as const)('%j on %s %s -> %s', (rate, taxable, currency, expected) => expect(taxAmount(rate, new D(taxable), currency).toFixed()).toBe(new D(expected).toFixed()))

  it.each([
    [fixed('1.005'), /fixed_value/],
    [pct('101'), /percentage_value/],
    [{ id: 'x', tax_rate_type: 'vat' } as unknown as TaxRate, /tax_rate_type/],
  ])('rejects %j', (rate, message) => expect(() => taxAmount(rate, new D(1), 'USD')).toThrow(message))
})

describe('applyTaxes: per rate on the taxable total, then split over the lines', () => {
  // Columns: taxable per line, rates, currency -> tax per rate, total tax, tax share per line.
  it.each<[string, string[], TaxUse[], string, string[], string, string[]]>([
    // 47.22 + 85.64 = 132.86 × 8.25% = 10.96095 → 10.96; shares 10.96 × 47.22/132.86 = 3.895… → 3.90,
    // 10.96 × 85.64/132.86 = 7.064… → 7.06.
    ['the USD worked example', ['47.22', '85.64'], [{ rate: pct('8.25') }], 'USD', ['10.96'], '10.96', ['3.90', '7.06']],
    // Per line 0.005 → 0.01 three times would be 0.03; on the total, 0.15 × 10% = 0.015 → 0.02.
    // Split: 0.01 each is one cent too many, taken from the first (largest, tied) line.
    ['rounded once on the total, not per line', ['0.05', '0.05', '0.05'], [{ rate: pct('10') }], 'USD', ['0.02'], '0.02', ['0', '0.01', '0.01']],
    // 8.25% and 5% both on 132.86: 10.96 + 6.643 → 6.64 (not 5% of 143.82); plus a fixed 1.00.
    ['rates add, no compounding', ['132.86'], [{ rate: pct('8.25') }, { rate: pct('5') }, { rate: fixed('1.00') }], 'USD', ['10.96', '6.64', '1.00'], '18.60', ['18.60']],
    // 10% on both lines = 15.00; 5% on line 1 only = 2.50 on 50.00.
    ['a rate on some lines', ['100.00', '50.00'], [{ rate: pct('10') }, { rate: pct('5'), line_indexes: [1] }], 'USD', ['15.00', '2.50'], '17.50', ['10.00', '7.50']],
    // 30.00 − 40.00 = −10.00 × 10% = −1.00: a net credit gets its tax back.
    ['a net credit', ['30.00', '-40.00'], [{ rate: pct('10') }], 'USD', ['-1.00'], '-1.00', ['-1.00', '0']],
    // JPY: (980 − 75) + (5556 − 425) = 6036 × 10% = 603.6 → 604; 604 × 905/6036 = 90.56 → 91, 604 × 5131/6036 = 513.44 → 513.
    ['JPY', ['905', '5131'], [{ rate: pct('10') }], 'JPY', ['604'], '604', ['91', '513']],
    // Zero quantity: nothing to tax.
    ['zero', ['0'], [{ rate: pct('8.25') }, { rate: fixed('2.00') }], 'USD', ['0', '0'], '0', ['0']],
  ])('%s', (_, taxable, uses, currency, perRate, total, perLine) => {
    const r = applyTaxes(taxable.map((t) => new D(t)), uses, currency)
    expect(s(r.taxes.map((t) => t.tax_amount))).toEqual(dec(perRate))
    expect(r.total_tax.toFixed()).toBe(new D(total).toFixed())
    expect(s(r.line_tax)).toEqual(dec(perLine))
  })

  it('records TaxApplied with the taxable amount of each rate', () => {
    const r = applyTaxes([new D('100.00'), new D('50.00')], [{ rate: pct('5'), line_indexes: [1], tax_association_id: 'ta_1' }], 'USD')
    expect(r.taxes.map((t) => [t.tax_rate_id, t.tax_association_id, t.currency, t.taxable_amount.toFixed(), t.tax_amount.toFixed()])).toEqual([['tax5', 'ta_1', 'USD', '50', '2.5']])
  })

  it('rejects a line index that is not on the invoice', () => expect(() => applyTaxes([new D(1)], [{ rate: pct('5'), line_indexes: [2] }], 'USD')).toThrow(/no invoice line 2/))
})

describe('ratesByLine: lines with rates of their own', () => {
  const vat = pct('18')
  const gst = pct('10')
  it('no line has its own: every rate on every line, as before', () => expect(ratesByLine([vat, fixed('1')], [undefined, undefined])).toEqual([{ rate: vat }, { rate: fixed('1') }]))
  it("an adjustment at the original 18% on an invoice now taxed at 10%: 10% on the others, 18% on it alone", () =>
    expect(ratesByLine([gst], [undefined, undefined, [vat]])).toEqual([{ rate: gst, line_indexes: [0, 1] }, { rate: vat, line_indexes: [2] }]))
  it('the same rate on both: one rate over all lines; an untaxed adjustment ([]) is left out of it', () => {
    expect(ratesByLine([vat], [undefined, [vat]])).toEqual([{ rate: vat }])
    expect(ratesByLine([vat], [undefined, []])).toEqual([{ rate: vat, line_indexes: [0] }])
  })
  it('a rate of the same id at another value is another rate; a rate on no line is left out', () =>
    expect(ratesByLine([pct('18')], [[{ ...vat, percentage_value: '20' }]])).toEqual([{ rate: { ...vat, percentage_value: '20' } }]))
  it('18% of a 10.00 adjustment beside a 50.00 line at 10%: 1.80 and 5.00', () => {
    const taxes = applyTaxes([new D(50), new D(10)], ratesByLine([gst], [undefined, [vat]]), 'USD')
    expect([s(taxes.taxes.map((t) => t.tax_amount)), s(taxes.line_tax)]).toEqual([dec(['5', '1.8']), dec(['5', '1.8'])])
  })
})
