import { describe, expect, it } from 'vitest'
import { computeInvoice } from './billing/invoice.ts'
import { D } from './money.ts'
import { priceTerms } from './price-rules.ts'
import { amountInUnit, conversionRate, displayUnitAmount } from './price-units.ts'

describe('conversionRate', () => {
  it('takes a plain decimal above zero', () => {
    expect(conversionRate('0.003').toFixed()).toBe('0.003')
    expect(() => conversionRate('0')).toThrow(/conversion_rate: must be greater than zero/)
    expect(() => conversionRate('-1')).toThrow(/not a plain decimal/)
    expect(() => conversionRate('1e3')).toThrow(/not a plain decimal/)
  })
})

describe('a usage price in a custom unit, billed', () => {
  it('converts the unit price exactly, rounds the line once, and shows the billed amount in the unit', () => {
    // 7 TOK a call at 0.003 USD a TOK: 0.021 USD a call, kept exact.
    const terms = priceTerms({ currency: 'USD', type: 'USAGE', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', meter_id: 'm', price_unit_type: 'CUSTOM', price_unit: 'tok', price_unit_amount: '7', conversion_rate: '0.003' })
    expect([terms.amount.toFixed(), terms.price_unit, terms.price_unit_amount!.toFixed()]).toEqual(['0.021', 'TOK', '7'])

    // 333 calls: 333 × 0.021 = 6.993 USD, rounded half up once: 6.99 USD.
    const invoice = computeInvoice({
      currency: 'USD',
      invoice_date: new Date('2025-01-01T00:00:00Z'),
      lines: [{ price_type: 'USAGE', quantity: new D(333), price: { billing_model: 'FLAT_FEE', amount: terms.amount.toFixed() } }],
    })
    const [line] = invoice.line_items
    expect(line.amount.toFixed()).toBe('6.99')
    // In the unit: 6.99 ÷ 0.003 = 2330 TOK (the 2331 TOK used less what the rounding to the cent left out).
    expect(amountInUnit(line.amount, new D('0.003'), 'USD').toFixed(2)).toBe('2330.00')
  })

  it('rounds the amount in the unit half up to the currency minor unit', () => {
    // 0.05 ÷ 0.03 = 1.6666… → 1.67; 100 JPY ÷ 1.5 = 66.66… → 67 (JPY has no minor unit); 0.025 ÷ 0.01 exactly 2.5.
    expect(amountInUnit(new D('0.05'), new D('0.03'), 'USD').toFixed()).toBe('1.67')
    expect(amountInUnit(new D('100'), new D('1.5'), 'JPY').toFixed()).toBe('67')
    expect(amountInUnit(new D('0.025'), new D('0.01'), 'USD').toFixed()).toBe('2.5')
  })
})

describe('displayUnitAmount', () => {
  it("puts the unit's symbol first, or its code after when it has none", () => {
    expect(displayUnitAmount(new D('250'), '₵', 'CRD')).toBe('₵250')
    expect(displayUnitAmount(new D('0.5'), null, 'CRD')).toBe('0.5 CRD')
  })
})
