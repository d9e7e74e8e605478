import { describe, expect, it } from 'vitest'
import { D } from '../money.ts'
import { creditNoteEntry, creditNoteVoidEntry, imbalance, invoiceEntry, paymentEntry, voidEntry, walletEntry, type InvoiceSource, type JournalEntry, type WalletTransactionSource } from './journal.ts'

const at = new Date('2025-03-01T00:00:00Z')
const shown = (e: JournalEntry) => e.lines.map((l) => [l.account, l.debit.toFixed(2), l.credit.toFixed(2)])
const line = (price_type: string | null, amount: string, extra: Partial<InvoiceSource['lines'][number]> = {}) => ({
  price_type,
  amount: new D(amount),
  line_item_discount: new D(0),
  invoice_level_discount: new D(0),
  calculation: null,
  ...extra,
})
const invoice: InvoiceSource = {
  id: 'inv_1',
  invoice_number: 'INV-1',
  invoice_type: 'SUBSCRIPTION',
  customer_id: 'cus_1',
  currency: 'USD',
  // Usage 40.00 with a 4.00 discount, a seat 30.00 in advance less 3.00 of an invoice coupon, a −5.00 proration credit; 10% tax on 58.00.
  total_tax: new D('5.80'),
  finalized_at: at,
  voided_at: null,
  lines: [
    line('USAGE', '40.00', { line_item_discount: new D('4.00') }),
    line('FIXED', '30.00', { invoice_level_discount: new D('3.00'), calculation: { kind: 'advance' } }),
    line('FIXED', '-5.00', { calculation: { kind: 'proration_credit' } }),
  ],
}

describe('journal entries', () => {
  it('an invoice: 63.80 owed = 36.00 usage + 27.00 deferred − 5.00 credit + 5.80 tax', () => {
    const e = invoiceEntry(invoice)
    expect(shown(e)).toEqual([
      ['accounts_receivable', '63.80', '0.00'],
      ['revenue:usage', '0.00', '36.00'],
      ['deferred_revenue', '0.00', '27.00'],
      ['revenue:fixed', '5.00', '0.00'],
      ['tax_payable', '0.00', '5.80'],
    ])
    expect(imbalance(e).isZero()).toBe(true)
    expect([e.id, e.source_type, e.source_id, e.date]).toEqual(['invoice:inv_1', 'invoice', 'inv_1', at])
  })

  it('a voided invoice turns its entry around on the day it was voided', () => {
    const voided = new Date('2025-03-05T00:00:00Z')
    const e = voidEntry({ ...invoice, voided_at: voided })
    expect(shown(e)[0]).toEqual(['accounts_receivable', '0.00', '63.80'])
    expect([e.id, e.date, imbalance(e).isZero()]).toEqual(['invoice_void:inv_1', voided, true])
  })

  it("a credit purchase invoice owes the credits' value as a liability, not revenue", () => {
    const e = invoiceEntry({ ...invoice, invoice_type: 'CREDIT', total_tax: new D(0), lines: [line(null, '50.00')] })
    expect(shown(e)).toEqual([
      ['accounts_receivable', '50.00', '0.00'],
      ['customer_credit_liability', '0.00', '50.00'],
    ])
  })

  it('a payment, an adjustment and a refund', () => {
    const p = paymentEntry({ id: 'pay_1', destination_id: 'inv_1', customer_id: 'cus_1', currency: 'USD', amount: new D('63.80'), payment_method_type: 'CARD', succeeded_at: at })
    expect(shown(p)).toEqual([
      ['cash', '63.80', '0.00'],
      ['accounts_receivable', '0.00', '63.80'],
    ])
    const note = { id: 'cn_1', credit_note_number: 'CN-1', invoice_id: 'inv_1', customer_id: 'cus_1', currency: 'USD', total_amount: new D('10.00'), total_tax: new D(0), finalized_at: at, voided_at: null }
    expect(shown(creditNoteEntry({ ...note, credit_note_type: 'ADJUSTMENT' }))).toEqual([
      ['sales_returns', '10.00', '0.00'],
      ['accounts_receivable', '0.00', '10.00'],
    ])
    expect(shown(creditNoteEntry({ ...note, credit_note_type: 'REFUND' }))[1]).toEqual(['cash', '0.00', '10.00'])
    const voided = creditNoteVoidEntry({ ...note, credit_note_type: 'ADJUSTMENT', voided_at: at })
    expect([voided.id, ...shown(voided)]).toEqual(['credit_note_void:cn_1', ['sales_returns', '0.00', '10.00'], ['accounts_receivable', '10.00', '0.00']])
  })

  it('a credit note gives back its tax: 110.00 with 10.00 tax reverses 10.00 payable and returns 100.00 of sales', () => {
    const note = { id: 'cn_2', credit_note_number: 'CN-2', invoice_id: 'inv_1', customer_id: 'cus_1', currency: 'USD', total_amount: new D('110.00'), total_tax: new D('10.00'), finalized_at: at, voided_at: null }
    const adjustment = creditNoteEntry({ ...note, credit_note_type: 'ADJUSTMENT' })
    expect(shown(adjustment)).toEqual([
      ['sales_returns', '100.00', '0.00'],
      ['tax_payable', '10.00', '0.00'],
      ['accounts_receivable', '0.00', '110.00'],
    ])
    expect(imbalance(adjustment).isZero()).toBe(true)
    const refund = creditNoteEntry({ ...note, credit_note_type: 'REFUND' })
    expect(shown(refund)).toEqual([
      ['sales_returns', '100.00', '0.00'],
      ['tax_payable', '10.00', '0.00'],
      ['cash', '0.00', '110.00'],
    ])
    // Voided, the tax is payable again.
    const voided = creditNoteVoidEntry({ ...note, credit_note_type: 'ADJUSTMENT', voided_at: at })
    expect(shown(voided)).toEqual([
      ['sales_returns', '0.00', '100.00'],
      ['tax_payable', '0.00', '10.00'],
      ['accounts_receivable', '110.00', '0.00'],
    ])
    expect(imbalance(voided).isZero()).toBe(true)
  })

  it('wallet transactions move the credit liability against what gave or took them', () => {
    const tx = (over: Partial<WalletTransactionSource>): WalletTransactionSource => ({
      id: 'wtx_1',
      wallet_id: 'w_1',
      customer_id: 'cus_1',
      currency: 'USD',
      type: 'credit',
      transaction_reason: 'FREE_CREDIT_GRANT',
      amount: new D('25.00'),
      reference_type: null,
      reference_id: null,
      parent_transaction_id: null,
      created_at: at,
      ...over,
    })
    const cases: [Partial<WalletTransactionSource>, string[][]][] = [
      [{}, [['promotional_credits', '25.00', '0.00'], ['customer_credit_liability', '0.00', '25.00']]],
      [{ transaction_reason: 'PURCHASED_CREDIT_DIRECT' }, [['cash', '25.00', '0.00'], ['customer_credit_liability', '0.00', '25.00']]],
      [{ type: 'debit', transaction_reason: 'INVOICE_PAYMENT' }, [['accounts_receivable', '0.00', '25.00'], ['customer_credit_liability', '25.00', '0.00']]],
      [{ type: 'debit', transaction_reason: 'CREDIT_EXPIRED' }, [['credit_breakage', '0.00', '25.00'], ['customer_credit_liability', '25.00', '0.00']]],
      [{ type: 'debit', transaction_reason: 'MANUAL_DEBIT' }, [['credit_adjustments', '0.00', '25.00'], ['customer_credit_liability', '25.00', '0.00']]],
      [{ parent_transaction_id: 'wtx_0', reference_type: 'INVOICE', reference_id: 'inv_1' }, [['accounts_receivable', '25.00', '0.00'], ['customer_credit_liability', '0.00', '25.00']]],
    ]
    for (const [over, lines] of cases) {
      const e = walletEntry(tx(over))!
      expect(shown(e), JSON.stringify(over)).toEqual(lines)
      expect(imbalance(e).isZero()).toBe(true)
    }
    expect(walletEntry(tx({ transaction_reason: 'PURCHASED_CREDIT_INVOICED' }))).toBeNull()
    // 3.333333333334 credits at 3.00 each pay a 10.00 invoice: 10.00 moves, not 10.000000000002.
    expect(shown(walletEntry(tx({ type: 'debit', transaction_reason: 'INVOICE_PAYMENT', amount: new D('10.000000000002') }))!)[0]).toEqual(['accounts_receivable', '0.00', '10.00'])
    expect(walletEntry(tx({ type: 'debit', transaction_reason: 'INVOICE_PAYMENT', amount: new D('10.000000000002') }))!.lines[0].credit.toFixed()).toBe('10')
  })
})
