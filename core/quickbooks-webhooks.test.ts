import { describe, expect, it } from 'vitest'
import { D } from './money.ts'
import { changedPayments, intuitSignature, paymentApplications, verifyIntuitSignature } from './quickbooks-webhooks.ts'

describe("Intuit's webhook signature", () => {
  const body = '{"eventNotifications":[]}'
  it('is the base64 HMAC-SHA256 of the raw body with the verifier token', () => {
    // openssl: printf '{"eventNotifications":[]}' | openssl dgst -sha256 -hmac verifier -binary | base64
    expect(intuitSignature('verifier', body)).toBe('bMlzRCQm2LZWdYu47/x0QKWgW3o3rEKU8Shp+xkpYaE=')
    expect(verifyIntuitSignature(intuitSignature('verifier', body), body, 'verifier')).toBe('ok')
  })
  it('refuses another token, another body, no header and garbage', () => {
    expect(verifyIntuitSignature(intuitSignature('other', body), body, 'verifier')).toBe('mismatch')
    expect(verifyIntuitSignature(intuitSignature('verifier', body), `${body} `, 'verifier')).toBe('mismatch')
    expect(verifyIntuitSignature(undefined, body, 'verifier')).toBe('missing')
    expect(verifyIntuitSignature('not base64 at all', body, 'verifier')).toBe('mismatch')
  })
})

describe('changedPayments', () => {
  const entity = (name: string, id: string, operation = 'Create') => ({ name, id, operation, lastUpdated: '2026-11-28T10:00:00.000Z' })
  it("lists the company's created and updated payments once, nothing else", () => {
    const body = {
      eventNotifications: [
        { realmId: '42', dataChangeEvent: { entities: [entity('Payment', '7'), entity('Invoice', '8'), entity('Payment', '7', 'Update'), entity('Payment', '9', 'Delete'), entity('Payment', '10', 'Update')] } },
        { realmId: '43', dataChangeEvent: { entities: [entity('Payment', '11')] } },
      ],
    }
    expect(changedPayments(body, '42')).toEqual(['7', '10'])
  })
  it('reads the CloudEvents form the same way', () => {
    const event = (type: string, id: string, account = '42') => ({ specversion: '1.0', id: `evt-${id}-${type}`, source: 'intuit.x', type, datacontenttype: 'application/json', time: '2026-11-28T10:00:00Z', intuitentityid: id, intuitaccountid: account, data: {} })
    const body = [event('qbo.payment.created.v1', '7'), event('qbo.payment.updated.v1', '7'), event('qbo.invoice.created.v1', '8'), event('qbo.payment.deleted.v1', '9'), event('qbo.payment.created.v1', '11', '43'), event('qbo.payment.updated.v2', '10')]
    expect(changedPayments(body, '42')).toEqual(['7', '10'])
    expect(changedPayments([{ id: 'no type' }], '42')).toBeUndefined()
  })
  it('is undefined for a body that is not a notification', () => {
    expect(changedPayments({ id: 'evt_1' }, '42')).toBeUndefined()
    expect(changedPayments(null, '42')).toBeUndefined()
  })
})

describe('paymentApplications', () => {
  it("reads each invoice line's amount exactly: 19.99 and 0.01", () => {
    const payment = { Id: '7', TotalAmt: 20, CurrencyRef: { value: 'usd' }, Line: [{ Amount: 19.99, LinkedTxn: [{ TxnId: '3', TxnType: 'Invoice' }] }, { Amount: 0.01, LinkedTxn: [{ TxnId: '4', TxnType: 'Invoice' }] }, { Amount: 5, LinkedTxn: [{ TxnId: '9', TxnType: 'CreditMemo' }] }] }
    expect(paymentApplications(payment)).toEqual({ currency: 'USD', invoices: [{ invoice_ref: '3', amount: new D('19.99') }, { invoice_ref: '4', amount: new D('0.01') }] })
  })
  it('has no currency when QuickBooks names none (a single-currency company)', () => {
    expect(paymentApplications({ Line: [] })).toEqual({ currency: null, invoices: [] })
  })
})
