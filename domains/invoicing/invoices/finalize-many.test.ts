// The billing run finalizing a page of drafts whose grace period ended, a batch per transaction
// (finalize-many.ts): each draft as one by one — computed again with late usage, prepaid credits taken
// oldest first, numbered in order, announced once — and a draft that cannot be computed again stays a
// draft, reported, while the others are finalized.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../../core/clock.ts'
import { customer, eventsOf, fixedPrice, plan, usagePrice } from '../../../test/catalog.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { readyMeter, send } from '../../../test/usage-helpers.ts'
import { call, newWallet, topUp } from '../../../test/wallets.ts'

const clock = fixedClock('2024-03-01T00:10:00Z')
let h: Harness

beforeAll(async () => {
  // A grace period of 30 days: on March 1st January's and February's invoices are both drafts.
  h = await startHarness({ clock, env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0', INVOICE_GRACE_PERIOD_MINUTES: String(30 * 24 * 60) } })
})
afterAll(() => h?.stop())

const run = async () => (await call(h, 'POST', '/v1/jobs/billing-run/run')).summary
const at = (start: string, n: number) => Array.from({ length: n }, (_, i) => new Date(Date.parse(start) + i * 1000).toISOString())
const cycleInvoices = async (subId: string) =>
  (await call(h, 'GET', `/v1/invoices?subscription_id=${subId}&limit=100`)).items.filter((i: any) => i.billing_reason === 'SUBSCRIPTION_CYCLE').sort((a: any, b: any) => a.billing_sequence - b.billing_sequence)

describe('finalizing a page of drafts', () => {
  it('finalizes each once, in order, with late usage and the wallet taken oldest first; one that fails stays a draft', async () => {
    const meterId = await readyMeter(h, { name: 'Page calls', event_name: 'page_call', aggregation: { type: 'COUNT' } })
    const p = await plan(h, { prices: [fixedPrice('10.00', { display_name: 'Seat', invoice_cadence: 'ARREAR' }), usagePrice(meterId, '0.01', { display_name: 'Calls' })] })
    const [a, b, c] = await Promise.all([customer(h), customer(h), customer(h)])
    const subscribe = (customerId: string) =>
      call(h, 'POST', '/v1/subscriptions', { customer_id: customerId, plan_id: p.id, currency: 'USD', billing_period: 'MONTHLY', collection_method: 'send_invoice', start_date: '2024-01-01T00:00:00Z' }, 201)
    const [subA, subB, subC] = [await subscribe(a.id), await subscribe(b.id), await subscribe(c.id)]
    const wallet = await newWallet(h, a.id)
    await topUp(h, wallet.id, { credits_to_add: '15' })
    await send(h, at('2024-01-10T00:00:00Z', 100).map((t, i) => ({ id: `page-a-${i}`, at: t })), { customer: a.external_id, name: 'page_call' })

    await run()
    const drafts = [...(await cycleInvoices(subA.id)), ...(await cycleInvoices(subB.id)), ...(await cycleInvoices(subC.id))]
    expect(drafts.map((i: any) => [i.customer_id, i.period_start.slice(0, 7), i.invoice_status, i.total])).toEqual([
      [a.id, '2024-01', 'DRAFT', '11'],
      [a.id, '2024-02', 'DRAFT', '10'],
      [b.id, '2024-01', 'DRAFT', '10'],
      [b.id, '2024-02', 'DRAFT', '10'],
      [c.id, '2024-01', 'DRAFT', '10'],
      [c.id, '2024-02', 'DRAFT', '10'],
    ])
    // Late usage inside the grace period counts at finalization; C's January draft names a billing point its
    // subscription (ended with February) does not have, so it cannot be computed again.
    await send(h, at('2024-02-10T00:00:00Z', 50).map((t, i) => ({ id: `page-a-late-${i}`, at: t })), { customer: a.external_id, name: 'page_call' })
    const broken = drafts[4].id
    await h.running.deps.sql`UPDATE subscriptions SET end_date = '2024-03-01T00:00:00Z' WHERE id = ${subC.id}`
    await h.running.deps.sql`UPDATE invoices SET billing_sequence = 99 WHERE id = ${broken}`

    clock.set('2024-04-15T00:00:00Z')
    const summary = await run()
    expect(summary).toMatchObject({ finalized: 5, failed: 1 })
    expect(summary.errors).toEqual([{ invoice_id: broken, error: expect.stringContaining('has no billing point 99') }])

    const [janA, febA] = await cycleInvoices(subA.id)
    // 15 credits: January's 11.00 first, February's 10.50 gets the 4 left.
    expect([janA.total, janA.total_prepaid_credits_applied, janA.amount_due]).toEqual(['11', '11', '0'])
    expect([febA.total, febA.total_prepaid_credits_applied, febA.amount_due]).toEqual(['10.5', '4', '6.5'])
    expect((await call(h, 'GET', `/v1/wallets/${wallet.id}`)).credit_balance).toBe('0')
    expect(febA.line_items.map((l: any) => [l.display_name, l.quantity, l.amount])).toEqual([
      ['Seat', '1', '10'],
      ['Calls', '50', '0.5'],
    ])

    // (March's invoices, made by this run, are drafts until May.)
    const finalized = [janA, febA, ...(await cycleInvoices(subB.id)), ...(await cycleInvoices(subC.id))].filter((i: any) => i.id !== broken && i.period_start < '2024-03')
    expect(finalized.map((i: any) => i.invoice_status)).toEqual(Array(5).fill('FINALIZED'))
    for (const i of finalized) expect(await eventsOf(h, i.id)).toEqual(['invoice.update', 'invoice.update.finalized'])
    // The event carries the invoice as finalized: its lines computed again, with what the wallet paid.
    const [event] = await h.running.deps.sql<{ payload: any }[]>`SELECT payload FROM webhook_events WHERE entity_id = ${febA.id} AND event_type = 'invoice.update.finalized'`
    expect(event.payload.invoice).toMatchObject({ invoice_number: febA.invoice_number, total: '10.5', amount_due: '6.5' })
    expect(event.payload.invoice.line_items.map((l: any) => [l.id, l.amount, l.prepaid_credits_applied])).toEqual(febA.line_items.map((l: any) => [l.id, l.amount, l.prepaid_credits_applied]))
    // Gap-free, January's before February's (the drafts' order: finalize_after).
    const number = (i: any) => Number(/(\d+)$/.exec(i.invoice_number)![1])
    const numbers = finalized.map(number).sort((x: number, y: number) => x - y)
    expect(numbers).toEqual(numbers.map((_: number, k: number) => numbers[0] + k))
    const month = (m: string) => finalized.filter((i: any) => i.period_start.startsWith(m)).map(number)
    expect(Math.max(...month('2024-01'))).toBeLessThan(Math.min(...month('2024-02')))

    expect((await call(h, 'GET', `/v1/invoices/${broken}`)).invoice_status).toBe('DRAFT')
    expect(await eventsOf(h, broken)).toEqual(['invoice.update'])
    // A rerun finalizes nothing again and reports the broken draft again.
    expect(await run()).toMatchObject({ finalized: 0, failed: 1 })
  })

  it('numbers an auto top-up invoice that a debit starts between the invoices, as one by one', async () => {
    clock.set('2024-06-01T00:10:00Z')
    const p = await plan(h, { prices: [fixedPrice('10.00', { display_name: 'Seat', invoice_cadence: 'ARREAR' })] })
    const [plain, topped] = await Promise.all([customer(h), customer(h)])
    const subscribe = (customerId: string) =>
      call(h, 'POST', '/v1/subscriptions', { customer_id: customerId, plan_id: p.id, currency: 'USD', billing_period: 'MONTHLY', collection_method: 'send_invoice', start_date: '2024-05-01T00:00:00Z' }, 201)
    const [subPlain, subTopped] = [await subscribe(plain.id), await subscribe(topped.id)]
    // 15 credits, topped up by invoice at 5 or less: May's 10.00 leaves 5.
    await newWallet(h, topped.id, { initial_credits_to_load: '15', auto_topup: { enabled: true, threshold: 5, amount: 50, invoicing: true } })
    await run()
    clock.set('2024-07-02T00:00:00Z')
    // (The first test's subscriptions bill on: only this one's invoices are looked at.)
    await run()

    const [may] = await cycleInvoices(subTopped.id)
    const [other] = await cycleInvoices(subPlain.id)
    const [topup] = (await call(h, 'GET', `/v1/invoices?customer_id=${topped.id}&billing_reason=WALLET_AUTO_TOPUP`)).items
    expect([may.invoice_status, may.total_prepaid_credits_applied, other.invoice_status, topup.invoice_status, topup.total]).toEqual(['FINALIZED', '10', 'FINALIZED', 'FINALIZED', '50'])
    // One by one in the drafts' order (their finalize_after, then id), the top-up is numbered by the debit, before its invoice.
    const number = (i: any) => Number(/(\d+)$/.exec(i.invoice_number)![1])
    const order = may.id < other.id ? [topup, may, other] : [other, topup, may]
    expect(order.map(number)).toEqual(order.map((_, k) => number(order[0]) + k))
  })

  it("takes one wallet's credits for two of its customer's invoices in one batch, one after the other", async () => {
    clock.set('2024-08-01T00:10:00Z')
    const p = await plan(h, { prices: [fixedPrice('10.00', { display_name: 'Seat', invoice_cadence: 'ARREAR' })] })
    const c = await customer(h)
    const subscribe = () => call(h, 'POST', '/v1/subscriptions', { customer_id: c.id, plan_id: p.id, currency: 'USD', billing_period: 'MONTHLY', collection_method: 'send_invoice', start_date: '2024-07-01T00:00:00Z' }, 201)
    const [first, second] = [await subscribe(), await subscribe()]
    const wallet = await newWallet(h, c.id, { initial_credits_to_load: '15' })
    await run()
    clock.set('2024-09-01T00:00:00Z')
    await run()
    const [one] = await cycleInvoices(first.id)
    const [two] = await cycleInvoices(second.id)
    expect([one, two].map((i: any) => [i.invoice_status, i.total_prepaid_credits_applied, i.amount_due])).toEqual([
      ['FINALIZED', '10', '0'],
      ['FINALIZED', '5', '5'],
    ])
    expect((await call(h, 'GET', `/v1/wallets/${wallet.id}`)).credit_balance).toBe('0')
  })
})
