// A back-dated subscription whose customer holds a prepaid wallet: one billing run catches up every
// period it owes, in order, each invoice taking the credits the one before left.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../../core/clock.ts'
import { customer, fixedPrice, plan, subscribed } from '../../../test/catalog.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { call, ledger, newWallet } from '../../../test/wallets.ts'

const clock = fixedClock('2025-04-15T12:00:00Z')
let h: Harness

beforeAll(async () => {
  h = await startHarness({ clock, env: { KAFKA_BROKERS: '', INVOICE_GRACE_PERIOD_MINUTES: '0' } })
})
afterAll(() => h?.stop())

describe('catch-up with a prepaid wallet', () => {
  it('bills four owed months in one run, the credits running out on the third', async () => {
    const p = await plan(h, { prices: [fixedPrice('30.00', { invoice_cadence: 'ADVANCE', display_name: 'Seat' })] })
    const c = await customer(h)
    const w = await newWallet(h, c.id, { initial_credits_to_load: '70' })
    const sub = await subscribed(h, { customer_id: c.id, plan_id: p.id, start_date: '2025-01-01T00:00:00Z', collection_method: 'send_invoice' })

    const run = await call(h, 'POST', '/v1/jobs/billing-run/run')
    expect(run.summary).toMatchObject({ invoices_created: 4, finalized: 4, failed: 0, errors: [] })

    const invoices = (await call(h, 'GET', `/v1/invoices?subscription_id=${sub.id}`)).items.sort((a: any, b: any) => a.billing_sequence - b.billing_sequence)
    // Each month's seat is billed in advance on its first day. 70 credits: January 30, February 30, March the last 10 (20 owed), April nothing (30 owed).
    expect(invoices.map((i: any) => [i.line_items[0].period_start.slice(0, 10), i.invoice_status, i.total, i.total_prepaid_credits_applied, i.amount_due, i.payment_status])).toEqual([
      ['2025-01-01', 'FINALIZED', '30', '30', '0', 'SUCCEEDED'],
      ['2025-02-01', 'FINALIZED', '30', '30', '0', 'SUCCEEDED'],
      ['2025-03-01', 'FINALIZED', '30', '10', '20', 'PENDING'],
      ['2025-04-01', 'FINALIZED', '30', '0', '30', 'PENDING'],
    ])
    const debits = await ledger(h, w.id, '&type=debit')
    expect(debits.map((t: any) => [t.reference_id, t.credit_amount])).toEqual([
      [invoices[0].id, '30'],
      [invoices[1].id, '30'],
      [invoices[2].id, '10'],
    ])
    expect((await call(h, 'GET', `/v1/wallets/${w.id}`)).credit_balance).toBe('0')

    const again = await call(h, 'POST', '/v1/jobs/billing-run/run')
    expect(again.summary).toMatchObject({ invoices_created: 0, failed: 0 })
  })
})
