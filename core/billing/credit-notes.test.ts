import { describe, expect, it } from 'vitest'
import { AppError } from '../errors.ts'
import { D } from '../money.ts'
import { applyCreditNote, buildCreditNote, creditableAmounts, creditNoteTax, creditNoteType, reverseCreditNote, type CreditableInvoice, type EarlierNote } from './credit-notes.ts'
import type { PaymentStatus } from './payments.ts'

const d = (s: string) => new D(s)
// The USD worked example of docs/billing.md: total 143.82, 20.00 paid by prepaid credits, 123.82 due.
// Fixed line: 49.00 − 1.78 + 3.90 = 51.12; usage line: 98.73 − 9.87 − 3.22 + 7.06 = 92.70; 51.12 + 92.70 = 143.82.
const LINES = [
  { id: 'li_fixed', amount: d('49.00'), line_item_discount: d('0'), invoice_level_discount: d('1.78'), tax_amount: d('3.90') },
  { id: 'li_usage', amount: d('98.73'), line_item_discount: d('9.87'), invoice_level_discount: d('3.22'), tax_amount: d('7.06') },
]
const PAID: CreditableInvoice = {
  currency: 'USD',
  invoice_status: 'FINALIZED',
  payment_status: 'SUCCEEDED',
  total: d('143.82'),
  amount_due: d('123.82'),
  amount_paid: d('123.82'),
  amount_remaining: d('0'),
  overpaid_amount: d('0'),
  refunded_amount: d('0'),
  adjustment_amount: d('0'),
  paid_at: new Date('2024-05-10T00:00:00Z'),
  line_items: LINES,
}
const UNPAID: CreditableInvoice = { ...PAID, payment_status: 'INITIATED', amount_paid: d('0'), amount_remaining: d('123.82'), paid_at: null }
const PART_PAID: CreditableInvoice = { ...UNPAID, payment_status: 'PENDING', amount_paid: d('100.00'), amount_remaining: d('23.82') }
const note = (type: EarlierNote['credit_note_type'], status: EarlierNote['credit_note_status'], id: string, amount: string): EarlierNote => ({
  credit_note_type: type,
  credit_note_status: status,
  line_items: [{ invoice_line_item_id: id, amount: d(amount) }],
})

describe('creditNoteType', () => {
  it.each<[PaymentStatus, string]>([
    ['SUCCEEDED', 'REFUND'],
    ['OVERPAID', 'REFUND'],
    ['PARTIALLY_REFUNDED', 'REFUND'],
    ['INITIATED', 'ADJUSTMENT'],
    ['PENDING', 'ADJUSTMENT'],
    ['PROCESSING', 'ADJUSTMENT'],
    ['FAILED', 'ADJUSTMENT'],
  ])('%s -> %s', (status, type) => expect(creditNoteType(status)).toBe(type))
})

describe('creditableAmounts: line total with its tax share, net of earlier notes', () => {
  // Columns: invoice, earlier notes -> per line, total.
  it.each<[string, CreditableInvoice, EarlierNote[], string[], string]>([
    ['paid, nothing credited yet: the invoice total', PAID, [], ['51.12', '92.70'], '143.82'],
    // 92.70 − 50.00 = 42.70; the voided note counts for nothing. 51.12 + 42.70 = 93.82.
    ['after a refund, a voided note ignored', PAID, [note('REFUND', 'FINALIZED', 'li_usage', '50.00'), note('REFUND', 'VOIDED', 'li_fixed', '10.00')], ['51.12', '42.70'], '93.82'],
    // A draft reserves its amount: 51.12 − 51.12 = 0.
    ['a draft reserves', PAID, [note('REFUND', 'DRAFT', 'li_fixed', '51.12')], ['0', '92.70'], '92.70'],
    // Unpaid: the lines give 143.82 but only 123.82 is owed (20.00 was paid with credits).
    ['unpaid: no more than is owed', UNPAID, [], ['51.12', '92.70'], '123.82'],
    // Lines 51.12 + 52.70 = 103.82; owed 123.82 − the 40.00 draft adjustment = 83.82.
    ['unpaid with a draft adjustment', UNPAID, [note('ADJUSTMENT', 'DRAFT', 'li_usage', '40.00')], ['51.12', '52.70'], '83.82'],
    // 100.00 of 123.82 paid: only 23.82 can be adjusted.
    ['partly paid', PART_PAID, [], ['51.12', '92.70'], '23.82'],
  ])('%s', (_, invoice, earlier, lines, total) => {
    const r = creditableAmounts(invoice, earlier)
    expect(r.lines.map((l) => l.amount.toFixed())).toEqual(lines.map((x) => d(x).toFixed()))
    expect(r.total.toFixed()).toBe(d(total).toFixed())
  })
})

describe('buildCreditNote: validation names the offending line', () => {
  it('builds a REFUND for a paid invoice', () => {
    const n = buildCreditNote(PAID, [], { line_items: [{ invoice_line_item_id: 'li_usage', amount: '92.70' }, { invoice_line_item_id: 'li_fixed', amount: '0.01' }] })
    expect([n.credit_note_type, n.currency, n.total_amount.toFixed()]).toEqual(['REFUND', 'USD', '92.71'])
  })

  it('builds an ADJUSTMENT for an unpaid one', () => expect(buildCreditNote(UNPAID, [], { line_items: [{ invoice_line_item_id: 'li_fixed', amount: '51.12' }] }).credit_note_type).toBe('ADJUSTMENT'))

  it.each<[string, CreditableInvoice, EarlierNote[], { invoice_line_item_id: string; amount: string }[], string, string]>([
    ['one cent more than the line', PAID, [], [{ invoice_line_item_id: 'li_usage', amount: '92.71' }], 'line_items[0].amount', '92.71 exceeds the 92.70 still creditable on line li_usage'],
    ['more than is left after a refund', PAID, [note('REFUND', 'FINALIZED', 'li_usage', '50.00')], [{ invoice_line_item_id: 'li_fixed', amount: '1.00' }, { invoice_line_item_id: 'li_usage', amount: '42.71' }], 'line_items[1].amount', 'line_items[1].amount: 42.71 exceeds the 42.70 still creditable on line li_usage'],
    // 20.00 + 5.00 = 25.00 fits each line but not the 23.82 still owed.
    ['more than is owed in total', PART_PAID, [], [{ invoice_line_item_id: 'li_fixed', amount: '20.00' }, { invoice_line_item_id: 'li_usage', amount: '5.00' }], 'line_items', 'the total 25.00 exceeds the 23.82'],
    ['a line twice', PAID, [], [{ invoice_line_item_id: 'li_fixed', amount: '1.00' }, { invoice_line_item_id: 'li_fixed', amount: '1.00' }], 'line_items[1].invoice_line_item_id', 'twice'],
    ['zero', PAID, [], [{ invoice_line_item_id: 'li_fixed', amount: '0' }], 'line_items[0].amount', 'greater than 0'],
    ['half a cent', PAID, [], [{ invoice_line_item_id: 'li_fixed', amount: '1.005' }], 'line_items[0].amount', 'decimals'],
    ['no lines', PAID, [], [], 'line_items', 'at least one'],
  ])('refuses %s', (_, invoice, earlier, lines, field, message) => {
    let error: AppError | undefined
    try {
      buildCreditNote(invoice, earlier, { line_items: lines })
    } catch (e) {
      error = e as AppError
    }
    expect(error?.code).toBe('validation_error')
    expect(Object.keys(error!.details)).toEqual([field])
    expect(error!.message).toContain(message)
  })

  it('does not find a line of another invoice, naming the field', () => {
    const lines = [{ invoice_line_item_id: 'li_fixed', amount: '1.00' }, { invoice_line_item_id: 'li_other', amount: '1.00' }]
    expect(() => buildCreditNote(PAID, [], { line_items: lines })).toThrow(expect.objectContaining({ code: 'not_found', details: { id: 'li_other', 'line_items[1].invoice_line_item_id': 'li_other' } }))
  })

  it('refuses a draft invoice', () => expect(() => buildCreditNote({ ...PAID, invoice_status: 'DRAFT' }, [], { line_items: [] })).toThrow(/finalized invoice/))

  it.each([
    // JPY: 6173 − 617 − 425 + 513 = 5644 creditable on the usage line.
    ['JPY', { id: 'l', amount: d('6173'), line_item_discount: d('617'), invoice_level_discount: d('425'), tax_amount: d('513') }, '5644', '5645'],
    // KWD: 12.500 − 1.250 + 0.562 = 11.812 on the plan line.
    ['KWD', { id: 'l', amount: d('12.500'), line_item_discount: d('0'), invoice_level_discount: d('1.250'), tax_amount: d('0.562') }, '11.812', '11.813'],
  ])('%s: exactly the creditable amount passes, one minor unit more does not', (currency, line, ok, tooMuch) => {
    const invoice = { ...PAID, currency, line_items: [line] }
    expect(buildCreditNote(invoice, [], { line_items: [{ invoice_line_item_id: 'l', amount: ok }] }).total_amount.toFixed()).toBe(ok)
    expect(() => buildCreditNote(invoice, [], { line_items: [{ invoice_line_item_id: 'l', amount: tooMuch }] })).toThrow(`exceeds the ${ok} still creditable`)
  })
})

describe('applyCreditNote: the invoice amounts follow', () => {
  it('REFUND: partially refunded, then refunded', () => {
    const first = applyCreditNote(PAID, { credit_note_type: 'REFUND', total_amount: d('92.70') })
    expect([first.payment_status, first.refunded_amount.toFixed()]).toEqual(['PARTIALLY_REFUNDED', '92.7'])
    const second = applyCreditNote(first, { credit_note_type: 'REFUND', total_amount: d('51.12') })
    expect([second.payment_status, second.refunded_amount.toFixed()]).toEqual(['REFUNDED', '143.82'])
  })

  it.each<[string, CreditableInvoice, string, string[]]>([
    // 123.82 − 20.00 = 103.82 due and still owed; not settled.
    ['part of an unpaid invoice', UNPAID, '20.00', ['INITIATED', '20', '103.82', '103.82']],
    // 123.82 − 23.82 = 100.00 due, 100.00 paid: nothing owed, settled.
    ['the rest of a partly paid invoice', PART_PAID, '23.82', ['SUCCEEDED', '23.82', '100', '0']],
  ])('ADJUSTMENT: %s', (_, invoice, amount, expected) => {
    const r = applyCreditNote(invoice, { credit_note_type: 'ADJUSTMENT', total_amount: d(amount) })
    expect([r.payment_status, r.adjustment_amount, r.amount_due, r.amount_remaining].map(String)).toEqual(expected)
  })

  it('refuses an adjustment beyond what is owed', () =>
    expect(() => applyCreditNote(PART_PAID, { credit_note_type: 'ADJUSTMENT', total_amount: d('23.83') })).toThrow(/exceeds the 23.82 still owed/))
})

describe('reverseCreditNote: voiding a finalized note', () => {
  const adjustment = (amount: string) => ({ credit_note_type: 'ADJUSTMENT' as const, total_amount: d(amount) })

  it.each<[string, CreditableInvoice, string, string[]]>([
    // 20.00 adjusted off an unpaid 123.82: 103.82 due; voided, 123.82 is due and owed again, status unchanged.
    ['on an unpaid invoice', UNPAID, '20.00', ['INITIATED', '0', '123.82', '123.82', '0']],
    // The note settled a partly paid invoice (100.00 due, 100.00 paid); voided, 23.82 is owed again: PENDING.
    ['that settled a partly paid invoice', PART_PAID, '23.82', ['PENDING', '0', '123.82', '23.82', '0']],
  ])('ADJUSTMENT %s comes back', (_, invoice, amount, expected) => {
    const applied = applyCreditNote(invoice, adjustment(amount))
    const r = reverseCreditNote(applied, adjustment(amount))
    expect([r.payment_status, r.adjustment_amount, r.amount_due, r.amount_remaining, r.overpaid_amount].map(String)).toEqual(expected)
    expect(r.paid_at).toBeNull()
  })

  it('an invoice overpaid after the adjustment stays OVERPAID by less, or is just paid', () => {
    // 123.82 − 23.82 = 100.00 due, 110.00 paid: 10.00 over. Voided, 123.82 is due: 13.82 owed again.
    const over = { ...applyCreditNote(PART_PAID, adjustment('23.82')), payment_status: 'OVERPAID' as PaymentStatus, amount_paid: d('110.00'), overpaid_amount: d('10.00') }
    const back = reverseCreditNote(over, adjustment('23.82'))
    expect([back.payment_status, back.amount_remaining, back.overpaid_amount].map(String)).toEqual(['PENDING', '13.82', '0'])
    // 5.00 adjusted off 123.82 (118.82 due), 130.00 paid: 11.18 over; voided, 6.18 over.
    const more = { ...applyCreditNote(UNPAID, adjustment('5.00')), payment_status: 'OVERPAID' as PaymentStatus, amount_paid: d('130.00'), amount_remaining: d('0'), overpaid_amount: d('11.18') }
    const still = reverseCreditNote(more, adjustment('5.00'))
    expect([still.payment_status, still.amount_remaining, still.overpaid_amount].map(String)).toEqual(['OVERPAID', '0', '6.18'])
  })

  it('refuses a REFUND (its money has left) and an adjustment under later refunds', () => {
    expect(() => reverseCreditNote(PAID, { credit_note_type: 'REFUND', total_amount: d('10.00') })).toThrow(/refund succeeded/)
    expect(() => reverseCreditNote({ ...PAID, refunded_amount: d('10.00') }, adjustment('5.00'))).toThrow(/10.00 refunded/)
  })
})

describe('creditNoteTax: the tax part a note gives back', () => {
  it('in proportion per line, rounded per line; a line credited whole gives back its tax exactly', () => {
    // Fixed line charges 51.12 of which 3.90 tax: whole → 3.90. Usage line 92.70 with 7.06 tax: 50.00 → 50 × 7.06 / 92.70 = 3.8079 → 3.81.
    expect(creditNoteTax([{ invoice_line_item_id: 'li_fixed', amount: d('51.12') }], LINES, 'USD').toFixed(2)).toBe('3.90')
    expect(creditNoteTax([{ invoice_line_item_id: 'li_usage', amount: d('50.00') }], LINES, 'USD').toFixed(2)).toBe('3.81')
    expect(creditNoteTax([{ invoice_line_item_id: 'li_fixed', amount: d('51.12') }, { invoice_line_item_id: 'li_usage', amount: d('50.00') }], LINES, 'USD').toFixed(2)).toBe('7.71')
    // 100.00 net + 10.00 tax credited whole: 10.00 of the 110.00 is tax.
    const taxed = [{ id: 'li', amount: d('100.00'), line_item_discount: d('0'), invoice_level_discount: d('0'), tax_amount: d('10.00') }]
    expect(creditNoteTax([{ invoice_line_item_id: 'li', amount: d('110.00') }], taxed, 'USD').toFixed(2)).toBe('10.00')
    // Untaxed, unknown or non-charging lines carry none.
    const untaxed = [{ id: 'li', amount: d('20.00'), line_item_discount: d('0'), invoice_level_discount: d('0'), tax_amount: d('0') }]
    expect(creditNoteTax([{ invoice_line_item_id: 'li', amount: d('5.00') }], untaxed, 'USD').isZero()).toBe(true)
    expect(creditNoteTax([{ invoice_line_item_id: 'li_other', amount: d('5.00') }], LINES, 'USD').isZero()).toBe(true)
  })
})
