import { describe, expect, it } from 'vitest'
import { AppError } from '../errors.ts'
import { D } from '../money.ts'
import { applyPayment, applyRefund, assertTransition, setPaymentStatus, type PaymentState, type PaymentStatus } from './payments.ts'

const AT = new Date('2024-05-10T12:00:00Z')
const LATER = new Date('2024-05-20T12:00:00Z')

const d = (s: string) => new D(s)
const BASE: PaymentState = {
  currency: 'USD',
  invoice_status: 'FINALIZED',
  payment_status: 'INITIATED',
  total: d('100.00'),
  amount_due: d('100.00'),
  amount_paid: d('0'),
  amount_remaining: d('100.00'),
  overpaid_amount: d('0'),
  refunded_amount: d('0'),
  adjustment_amount: d('0'),
  paid_at: null,
}
const invoice = (extra: Partial<PaymentState> = {}): PaymentState => ({ ...BASE, ...extra })
const amounts = (s: PaymentState) => [s.payment_status, s.amount_paid, s.amount_remaining, s.overpaid_amount].map(String)

function appError(f: () => unknown): AppError {
  try {
    f()
  } catch (e) {
    return e as AppError
  }
  throw new Error('did not throw')
}

describe('the transition table', () => {
  it.each<[PaymentStatus, PaymentStatus, boolean]>([
    ['INITIATED', 'PENDING', true],
    ['PENDING', 'PROCESSING', true],
    ['PROCESSING', 'SUCCEEDED', true],
    ['PROCESSING', 'FAILED', true],
    ['PENDING', 'PENDING', true], // a second partial payment
    ['FAILED', 'PROCESSING', true], // retry
    ['SUCCEEDED', 'OVERPAID', true],
    ['SUCCEEDED', 'PARTIALLY_REFUNDED', true],
    ['OVERPAID', 'REFUNDED', true],
    ['PARTIALLY_REFUNDED', 'REFUNDED', true],
    ['PROCESSING', 'PROCESSING', false],
    ['INITIATED', 'REFUNDED', false], // nothing paid, nothing to refund
    ['SUCCEEDED', 'FAILED', false], // a paid invoice stays paid
    ['SUCCEEDED', 'PENDING', false],
    ['REFUNDED', 'PARTIALLY_REFUNDED', false], // final
    ['REFUNDED', 'OVERPAID', false],
  ])('%s -> %s: %s', (from, to, ok) => {
    if (ok) expect(() => assertTransition(from, to)).not.toThrow()
    else expect(appError(() => assertTransition(from, to)).toBody()).toMatchObject({ code: 'invalid_operation', message: `payment_status cannot go from ${from} to ${to}` })
  })
})

describe('applyPayment: amounts decide the status', () => {
  // Columns: invoice, amount -> status, paid, remaining, overpaid.
  it.each<[string, PaymentState, string, string[]]>([
    ['part of 100.00', invoice(), '40.00', ['PENDING', '40', '60', '0']],
    ['the rest after 40.00', invoice({ payment_status: 'PENDING', amount_paid: d('40.00') }), '60.00', ['SUCCEEDED', '100', '0', '0']],
    ['all at once', invoice(), '100.00', ['SUCCEEDED', '100', '0', '0']],
    ['120.00 of 100.00: 20.00 overpaid', invoice(), '120.00', ['OVERPAID', '120', '0', '20']],
    ['5.00 more on a paid invoice', invoice({ payment_status: 'SUCCEEDED', amount_paid: d('100.00') }), '5.00', ['OVERPAID', '105', '0', '5']],
    // total 100.00, 30.00 prepaid credits, due 70.00: 80.00 paid is 10.00 over (80 − 100 would be −20).
    ['with prepaid credits', invoice({ amount_due: d('70.00') }), '80.00', ['OVERPAID', '80', '0', '10']],
    ['after a failed attempt', invoice({ payment_status: 'FAILED' }), '100.00', ['SUCCEEDED', '100', '0', '0']],
    ['while processing, in part', invoice({ payment_status: 'PROCESSING' }), '0.01', ['PENDING', '0.01', '99.99', '0']],
    ['JPY', invoice({ currency: 'JPY', total: d('6640'), amount_due: d('6640') }), '6640', ['SUCCEEDED', '6640', '0', '0']],
    ['KWD, 0.003 short', invoice({ currency: 'KWD', total: d('13.703'), amount_due: d('13.703') }), '13.700', ['PENDING', '13.7', '0.003', '0']],
  ])('%s', (_, state, amount, expected) => expect(amounts(applyPayment(state, new D(amount), AT))).toEqual(expected))

  it('sets paid_at when paid in full, and keeps the first one', () => {
    expect(applyPayment(invoice(), d('40.00'), AT).paid_at).toBeNull()
    const paid = applyPayment(invoice(), d('100.00'), AT)
    expect(paid.paid_at).toEqual(AT)
    expect(applyPayment(paid, d('1.00'), LATER).paid_at).toEqual(AT)
  })

  it.each<[string, PaymentState, string, string, RegExp]>([
    ['a refunded invoice', invoice({ payment_status: 'REFUNDED', amount_paid: d('100.00') }), '1.00', 'invalid_operation', /from REFUNDED to OVERPAID/],
    ['a draft', invoice({ invoice_status: 'DRAFT' }), '1.00', 'invalid_operation', /DRAFT invoice/],
    ['a voided invoice', invoice({ invoice_status: 'VOIDED' }), '1.00', 'invalid_operation', /VOIDED invoice/],
    ['zero', invoice(), '0', 'validation_error', /greater than 0/],
    ['a negative amount', invoice(), '-5.00', 'validation_error', /amount/],
    ['half a cent', invoice(), '1.005', 'validation_error', /decimals/],
    ['half a yen', invoice({ currency: 'JPY' }), '0.5', 'validation_error', /decimals/],
  ])('refuses %s', (_, state, amount, code, message) => {
    const e = appError(() => applyPayment(state, new D(amount), AT))
    expect(e.code).toBe(code)
    expect(e.message).toMatch(message)
  })
})

describe('setPaymentStatus: provider states only', () => {
  it('moves INITIATED -> PROCESSING -> FAILED -> PENDING', () => {
    let s = setPaymentStatus(invoice(), 'PROCESSING')
    s = setPaymentStatus(s, 'FAILED')
    expect(setPaymentStatus(s, 'PENDING').payment_status).toBe('PENDING')
  })
  it.each<[PaymentState, PaymentStatus, RegExp]>([
    [invoice({ payment_status: 'PROCESSING' }), 'PROCESSING', /from PROCESSING to PROCESSING/],
    [invoice({ payment_status: 'SUCCEEDED' }), 'FAILED', /from SUCCEEDED to FAILED/],
    [invoice(), 'SUCCEEDED', /follows from amounts/],
    [invoice(), 'REFUNDED', /follows from amounts/],
    [invoice({ invoice_status: 'VOIDED' }), 'PENDING', /VOIDED/],
  ])('refuses %#: -> %s', (state, to, message) => expect(() => setPaymentStatus(state, to)).toThrow(message))
})

describe('applyRefund', () => {
  const paid = invoice({ payment_status: 'SUCCEEDED', amount_paid: d('100.00'), amount_remaining: d('0') })
  it.each<[string, PaymentState, string, string, string]>([
    ['part', paid, '30.00', 'PARTIALLY_REFUNDED', '30'],
    ['the rest', { ...paid, payment_status: 'PARTIALLY_REFUNDED', refunded_amount: d('30.00') }, '70.00', 'REFUNDED', '100'],
    // total 100.00, 30.00 adjusted before payment: the 70.00 paid is everything left to refund.
    ['after an adjustment', { ...paid, adjustment_amount: d('30.00'), amount_due: d('70.00'), amount_paid: d('70.00') }, '70.00', 'REFUNDED', '70'],
    ['an overpaid invoice, its total', { ...paid, payment_status: 'OVERPAID', amount_paid: d('120.00') }, '100.00', 'REFUNDED', '100'],
  ])('%s', (_, state, amount, status, refunded) => {
    const r = applyRefund(state, new D(amount))
    expect([r.payment_status, r.refunded_amount.toFixed()]).toEqual([status, refunded])
  })

  it.each<[PaymentState, string, RegExp]>([
    [paid, '100.01', /refunds of 100.01 would exceed the 100.00 charged/],
    [invoice({ payment_status: 'PENDING', amount_paid: d('40.00') }), '10.00', /from PENDING to PARTIALLY_REFUNDED/],
    [{ ...paid, payment_status: 'REFUNDED', refunded_amount: d('100.00') }, '0.01', /exceed/],
  ])('refuses %#', (state, amount, message) => expect(() => applyRefund(state, new D(amount))).toThrow(message))
})
