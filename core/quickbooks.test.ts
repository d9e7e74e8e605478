import { describe, expect, it } from 'vitest'
import { D } from './money.ts'
import { creditMemoBody, invoiceBody, invoiceCharges, paymentBody, qboJson, qboName, qboQuery } from './quickbooks.ts'

const line = (display_name: string | null, amount: string, discount = '0', tax = '0') => ({
  display_name,
  amount: new D(amount),
  line_item_discount: new D(discount),
  invoice_level_discount: new D(0),
  tax_amount: new D(tax),
})

describe('invoiceCharges', () => {
  it('charges each line net of discounts with its tax share; prepaid credits become a discount', () => {
    // 100.00 − 10.00 + 8.55 = 98.55; 20.10 + 1.90 = 22.00; 0 dropped. Sum 120.55; asked at finalization
    // 95.55 + 5.00 (a later adjustment note, pushed as a Credit Memo of its own) = 100.55: 20.00 off.
    const c = invoiceCharges({ currency: 'USD', amount_due: new D('95.55'), adjustment_amount: new D('5'), line_items: [line('API: calls', '100.00', '10.00', '8.55'), line('Seats', '20.10', '0', '1.90'), line(null, '0')] })
    expect(c.lines.map((l) => [l.name, l.amount.toFixed(2)])).toEqual([
      ['API- calls', '98.55'],
      ['Seats', '22.00'],
    ])
    expect(c.discount.toFixed(2)).toBe('20.00')
  })

  it('adds an Adjustments line when the invoice asks more than its lines', () => {
    const c = invoiceCharges({ currency: 'JPY', amount_due: new D('1001'), adjustment_amount: new D(0), line_items: [line('Usage', '1000')] })
    expect(c.lines.map((l) => [l.name, l.amount.toFixed()])).toEqual([
      ['Usage', '1000'],
      ['Adjustments', '1'],
    ])
    expect(c.discount.isZero()).toBe(true)
  })
})

describe('bodies', () => {
  const h = { id: 'inv_1', number: 'INV-0001', currency: 'USD', customer_ref: '58', date: new Date('2024-05-10T12:00:00Z') }

  it('writes amounts as exact number literals, never through a float', () => {
    expect(qboJson({ a: new D('0.1').plus('0.2'), b: 'x', c: undefined, d: [new D('12345678901234567.89')] })).toBe('{"a":0.3,"b":"x","d":[12345678901234567.89]}')
  })

  it('an invoice: sales lines under their items, the discount line, dates as days', () => {
    const charges = { lines: [{ name: 'Seats', amount: new D('22.00') }], discount: new D('2.5') }
    const body = JSON.parse(invoiceBody({ ...h, due_date: new Date('2024-06-09T00:00:00Z') }, charges, new Map([['Seats', '7']])))
    expect(body).toEqual({
      CustomerRef: { value: '58' },
      CurrencyRef: { value: 'USD' },
      TxnDate: '2024-05-10',
      DocNumber: 'INV-0001',
      PrivateNote: 'meterbill inv_1 INV-0001',
      DueDate: '2024-06-09',
      Line: [
        { DetailType: 'SalesItemLineDetail', Amount: 22, Description: 'Seats', SalesItemLineDetail: { ItemRef: { value: '7' }, Qty: 1, UnitPrice: 22 } },
        { DetailType: 'DiscountLineDetail', Amount: 2.5, Description: 'Prepaid credits and adjustments', DiscountLineDetail: { PercentBased: false } },
      ],
    })
  })

  it('a payment links the pushed invoice; a long number is kept out of the 21-character fields', () => {
    const body = JSON.parse(paymentBody({ ...h, id: 'pay_1', number: 'INV-2024-05-000000000001', reference: null }, new D('98.555'), '130'))
    expect(body.PaymentRefNum).toBeUndefined()
    expect(body.DocNumber).toBeUndefined()
    expect(body.TotalAmt).toBe(98.56)
    expect(body.Line).toEqual([{ Amount: 98.56, LinkedTxn: [{ TxnId: '130', TxnType: 'Invoice' }] }])
  })

  it('a credit memo lists the credited lines', () => {
    const body = JSON.parse(creditMemoBody({ ...h, id: 'cn_1', number: 'CN-1' }, [{ name: 'Seats', amount: new D('5') }], new Map([['Seats', '7']])))
    expect(body.Line[0]).toEqual({ DetailType: 'SalesItemLineDetail', Amount: 5, Description: 'Seats', SalesItemLineDetail: { ItemRef: { value: '7' }, Qty: 1, UnitPrice: 5 } })
    expect(body.DocNumber).toBe('CN-1')
  })
})

describe('names and queries', () => {
  it('cleans names and escapes quotes', () => {
    expect(qboName('  a:b\n c ', 100, 'x')).toBe('a-b c')
    expect(qboName('', 100, 'Charge')).toBe('Charge')
    expect(qboName('x'.repeat(150), 100, 'y')).toHaveLength(100)
    expect(qboQuery('Customer', 'DisplayName', "O'Brien \\ Co")).toBe("select * from Customer where DisplayName = 'O\\'Brien \\\\ Co'")
  })
})
