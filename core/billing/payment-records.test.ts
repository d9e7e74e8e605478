import { describe, expect, it } from 'vitest'
import { D } from '../money.ts'
import { assertRecordTransition, paymentEvents, paymentRecordOf } from './payment-records.ts'

describe('paymentRecordOf', () => {
  const remaining = new D('120.50')

  it('records money as a succeeded payment of that amount', () => {
    expect(paymentRecordOf(remaining, { payment_status: 'PENDING', amount: '20.25' })).toEqual({ status: 'SUCCEEDED', amount: new D('20.25') })
    expect(paymentRecordOf(remaining, { payment_status: 'OVERPAID', amount: '130' })).toEqual({ status: 'SUCCEEDED', amount: new D('130') })
  })

  it('pays what remains when SUCCEEDED names no amount: 120.50', () => {
    expect(paymentRecordOf(remaining, { payment_status: 'SUCCEEDED' })).toEqual({ status: 'SUCCEEDED', amount: new D('120.50') })
  })

  it('keeps a provider state without money as a payment of what remains', () => {
    expect(paymentRecordOf(remaining, { payment_status: 'PROCESSING' })).toEqual({ status: 'PROCESSING', amount: new D('120.50') })
    expect(paymentRecordOf(remaining, { payment_status: 'FAILED' })).toEqual({ status: 'FAILED', amount: new D('120.50') })
  })

  it('records nothing when nothing remains and no money moves', () => {
    expect(paymentRecordOf(new D(0), { payment_status: 'SUCCEEDED' })).toBeNull()
    expect(paymentRecordOf(new D(0), { payment_status: 'PENDING' })).toBeNull()
  })
})

describe('paymentEvents', () => {
  it('announces a new payment and its state', () => {
    expect(paymentEvents(null, 'SUCCEEDED')).toEqual(['payment.created', 'payment.success'])
    expect(paymentEvents(null, 'PENDING')).toEqual(['payment.created', 'payment.pending'])
    expect(paymentEvents(null, 'FAILED')).toEqual(['payment.created', 'payment.failed'])
    expect(paymentEvents(null, 'PROCESSING')).toEqual(['payment.created'])
  })

  it('announces a change, and a new state only when it moved', () => {
    expect(paymentEvents('PENDING', 'SUCCEEDED')).toEqual(['payment.updated', 'payment.success'])
    expect(paymentEvents('PROCESSING', 'FAILED')).toEqual(['payment.updated', 'payment.failed'])
    expect(paymentEvents('PENDING', 'PENDING')).toEqual(['payment.updated'])
  })
})

describe('assertRecordTransition', () => {
  it('moves a payment forward until it ends', () => {
    for (const [from, to] of [['INITIATED', 'PENDING'], ['INITIATED', 'SUCCEEDED'], ['PENDING', 'PROCESSING'], ['PROCESSING', 'FAILED'], ['PENDING', 'PENDING']] as const) {
      expect(() => assertRecordTransition(from, to)).not.toThrow()
    }
  })

  it('refuses to move back or out of an end, naming both', () => {
    for (const [from, to] of [['PENDING', 'INITIATED'], ['PROCESSING', 'PENDING'], ['SUCCEEDED', 'FAILED'], ['FAILED', 'SUCCEEDED']] as const) {
      expect(() => assertRecordTransition(from, to)).toThrow(`a ${from} payment cannot become ${to}`)
    }
  })
})
