import { describe, expect, it } from 'vitest'
import { D } from '../money.ts'
import { ongoingBalance, type UnpaidInvoice } from './realtime.ts'

const inv = (amount: string, invoice_type: UnpaidInvoice['invoice_type'] = 'SUBSCRIPTION'): UnpaidInvoice => ({ amount_remaining: new D(amount), invoice_type })

describe('ongoingBalance = wallet balance − unbilled usage − unpaid invoices', () => {
  // [wallet balance, unbilled usage charges, unpaid invoices, ongoing balance]
  it.each([
    ['100', [], [], '100'],
    ['100', ['12.5', '7.25'], [], '80.25'],
    ['100', [], [inv('30'), inv('0.005', 'ONE_OFF')], '69.995'], // unrounded
    ['100', ['12.5'], [inv('30')], '57.5'],
    ['10', ['12.5'], [inv('30')], '-32.5'], // no floor
    ['0', [], [], '0'],
    ['100', ['10'], [inv('50', 'CREDIT')], '90'], // a top-up invoice is paid into the wallet, not from it
  ] as [string, string[], UnpaidInvoice[], string][])('%s − %j − %j = %s', (wallet, usage, invoices, expected) => {
    expect(ongoingBalance(new D(wallet), usage.map((u) => new D(u)), invoices).toFixed()).toBe(new D(expected).toFixed())
  })
})
