// Whole lifecycles on a fixed calendar, every amount computed by hand: plan → subscribe in the past →
// events → billing run (catch-up, in order) → finalize → pay → credit note. USD with an anchor on the
// 31st and tiers crossing their boundaries; JPY with a trial and a cancellation mid-period; KWD with a
// coupon and a tax. Also: two runs at once, reruns, the preview and the usage query agreeing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../../core/clock.ts'
import { D } from '../../../core/money.ts'
import { customer, eventsOf, fixedPrice, plan, usagePrice } from '../../../test/catalog.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { readyMeter, send, usage } from '../../../test/usage-helpers.ts'

let h: Harness
const clock = fixedClock('2024-04-02T00:00:00Z')

beforeAll(async () => {
  h = await startHarness({ clock, env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0', INVOICE_GRACE_PERIOD_MINUTES: '0' } })
})
afterAll(() => h?.stop())

const post = (path: string, body?: unknown) => h.http('POST', path, { body })
const run = () => post('/v1/jobs/billing-run/run')
const invoicesOf = async (subId: string) =>
  (await h.http('GET', `/v1/invoices?subscription_id=${subId}&sort=period_start&order=asc&limit=100`)).body.items.sort((a: any, b: any) => a.billing_sequence - b.billing_sequence)
const brief = (i: any) => [i.billing_sequence, i.billing_reason, i.period_start.slice(0, 10), i.period_end.slice(0, 10), i.invoice_status, i.total]
const lines = (i: any) => i.line_items.map((l: any) => [l.display_name, l.quantity, l.amount, l.period_start.slice(0, 10), l.period_end.slice(0, 10)])
const at = (start: string, n: number) => Array.from({ length: n }, (_, i) => new Date(Date.parse(start) + i * 1000).toISOString())

async function subscribe(body: Record<string, unknown>) {
  const res = await post('/v1/subscriptions', { billing_period: 'MONTHLY', collection_method: 'send_invoice', ...body })
  expect(res.status, JSON.stringify(res.body)).toBe(201)
  return res.body
}

describe('USD: anchor on the 31st, SLAB tiers, catch-up from January', () => {
  const TIERS = [
    { up_to: 100, unit_amount: '0.10' },
    { up_to: 1000, unit_amount: '0.08', flat_amount: '5' },
    { up_to: null, unit_amount: '0.05' },
  ]
  let sub: any
  let cus: any
  let meterId: string

  beforeAll(async () => {
    meterId = await readyMeter(h, { name: 'API calls', event_name: 'api_call', aggregation: { type: 'COUNT' } })
    const p = await plan(h, { prices: [fixedPrice('30.00', { display_name: 'Platform' }), usagePrice(meterId, '0', { display_name: 'API calls', billing_model: 'TIERED', tier_mode: 'SLAB', tiers: TIERS })] })
    cus = await customer(h, { name: 'Thirty-One Ltd' })
    sub = await subscribe({ customer_id: cus.id, plan_id: p.id, currency: 'USD', start_date: '2024-01-31T00:00:00Z', proration_behavior: 'create_prorations' })
    const events = [...at('2024-02-10T00:00:00Z', 150), ...at('2024-03-10T00:00:00Z', 1001), ...at('2024-04-01T00:00:00Z', 7)]
    await send(h, events.map((t, i) => ({ id: `usd-${i}`, at: t })), { customer: cus.external_id, name: 'api_call' })
  })

  it('two runs at once: one bills every period in order, the other is refused; a rerun bills nothing', async () => {
    const [a, b] = await Promise.all([run(), run()])
    expect([a.status, b.status].sort()).toEqual([200, 400])
    const summary = (a.status === 200 ? a : b).body.summary
    expect([summary.invoices_created, summary.finalized, summary.failed]).toEqual([3, 3, 0])
    const again = await run()
    expect(again.body.summary.invoices_created).toBe(0)
    const invoices = await invoicesOf(sub.id)
    expect(invoices.map(brief)).toEqual([
      [1, 'SUBSCRIPTION_CREATE', '2024-01-31', '2024-02-29', 'FINALIZED', '30'],
      // 150 calls: 100 × 0.10 + 50 × 0.08 + 5 = 19.00; February in arrear, March in advance.
      [2, 'SUBSCRIPTION_CYCLE', '2024-01-31', '2024-02-29', 'FINALIZED', '49'],
      // 1001 calls: 10 + 900 × 0.08 + 5 + 1 × 0.05 = 87.05.
      [3, 'SUBSCRIPTION_CYCLE', '2024-02-29', '2024-03-31', 'FINALIZED', '117.05'],
    ])
    expect(lines(invoices[1])).toEqual([
      ['API calls', '150', '19', '2024-01-31', '2024-02-29'],
      ['Platform', '1', '30', '2024-02-29', '2024-03-31'],
    ])
    expect(lines(invoices[2])).toEqual([
      ['API calls', '1001', '87.05', '2024-02-29', '2024-03-31'],
      ['Platform', '1', '30', '2024-03-31', '2024-04-30'],
    ])
    expect(invoices.map((i: any) => i.invoice_number)).toEqual(['INV-202404-00001', 'INV-202404-00002', 'INV-202404-00003'])
    expect(invoices[2].line_items[0].calculation.tiers.map((t: any) => t.amount)).toEqual(['10', '77', '0.05'])
  })

  it('bills exactly what the usage query answers for the same window', async () => {
    const u = await usage(h, { meter_id: meterId, external_customer_id: cus.external_id, start_time: '2024-02-29T00:00:00Z', end_time: '2024-03-31T00:00:00Z' })
    const [, , third] = await invoicesOf(sub.id)
    expect(third.line_items[0].quantity).toBe(u.value)
  })

  it('previews the April invoice with the usage so far, writing nothing', async () => {
    const before = (await invoicesOf(sub.id)).length
    const preview = await post('/v1/invoices/preview', { subscription_id: sub.id })
    expect(preview.status, JSON.stringify(preview.body)).toBe(200)
    expect([preview.body.billing_sequence, preview.body.period_start, preview.body.period_end, preview.body.total]).toEqual([4, '2024-03-31T00:00:00.000Z', '2024-04-30T00:00:00.000Z', '30.7'])
    expect(preview.body.line_items.map((l: any) => [l.quantity, l.amount])).toEqual([
      ['7', '0.7'],
      ['1', '30'],
    ])
    expect((await invoicesOf(sub.id)).length).toBe(before)
  })

  it('payment, then a refund credit note on the usage line', async () => {
    const [, , third] = await invoicesOf(sub.id)
    const paid = await h.http('PUT', `/v1/invoices/${third.id}/payment`, { body: { payment_status: 'SUCCEEDED', amount: '117.05' } })
    expect([paid.body.payment_status, paid.body.amount_remaining]).toEqual(['SUCCEEDED', '0'])
    const note = await post('/v1/creditnotes', { invoice_id: third.id, reason: 'SERVICE_ISSUE', line_items: [{ invoice_line_item_id: third.line_items[0].id, amount: '20.00' }] })
    expect([note.body.credit_note_type, note.body.customer.id, note.body.subscription.id]).toEqual(['REFUND', cus.id, sub.id])
    await post(`/v1/creditnotes/${note.body.id}/finalize`)
    const after = (await h.http('GET', `/v1/invoices/${third.id}`)).body
    expect([after.refunded_amount, after.payment_status]).toEqual(['20', 'PARTIALLY_REFUNDED'])
    expect(await eventsOf(h, third.id)).toEqual(['invoice.update.finalized', 'invoice.update.payment', 'invoice.update.payment'])
  })
  it('usage lines expand to their usage; a voided period is replaced, and late usage counts when the draft is finalized', async () => {
    const [, second] = await invoicesOf(sub.id)
    const expanded = await h.http('GET', `/v1/invoices/${second.id}?expand=usage_analytics`)
    // 150 calls, all sent without a source: one row holding the whole line.
    expect(expanded.body.line_items[0].usage_analytics).toEqual([{ source: '', usage: '150', cost: '19', percentage: '100', event_count: 150 }])
    expect((await post(`/v1/invoices/${second.id}/void`)).body.invoice_status).toBe('VOIDED')
    const replacement = (await post(`/v1/invoices/${second.id}/recalculate`)).body
    expect([replacement.invoice_status, replacement.billing_sequence, replacement.total]).toEqual(['DRAFT', 2, '49'])
    expect((await h.http('GET', `/v1/invoices/${second.id}`)).body.recalculated_invoice_id).toBe(replacement.id)
    // A late event of February, then the run finalizes the draft computed again: 151 calls = 19.08.
    await send(h, [{ id: 'usd-late', at: '2024-02-28T23:59:59Z' }], { customer: cus.external_id, name: 'api_call' })
    const summary = (await run()).body.summary
    expect([summary.invoices_created, summary.finalized]).toEqual([0, 1])
    const done = (await h.http('GET', `/v1/invoices/${replacement.id}`)).body
    expect([done.invoice_status, done.total, done.line_items[0].quantity, done.invoice_number]).toEqual(['FINALIZED', '49.08', '151', expect.stringMatching(/^INV-202404-/)])
  })
})

describe('JPY: a trial, then a cancellation mid-period with prorations', () => {
  it('zero trial invoice paid at once (rule 6), charges from the trial end, the unused rest credited', async () => {
    clock.set('2024-03-20T00:00:00Z')
    const p = await plan(h, { prices: [fixedPrice('3000', { currency: 'JPY', display_name: 'Basic', trial_period_days: 14 })] })
    const cus = await customer(h)
    const sub = await subscribe({ customer_id: cus.id, plan_id: p.id, currency: 'JPY', start_date: '2024-03-01T00:00:00Z', proration_behavior: 'create_prorations' })
    expect(sub.trial_end).toBe('2024-03-15T00:00:00.000Z')
    await run()
    const [trial, start] = await invoicesOf(sub.id)
    expect(brief(trial)).toEqual([1, 'SUBSCRIPTION_TRIAL_START', '2024-03-01', '2024-03-15', 'FINALIZED', '0'])
    expect([trial.payment_status, trial.invoice_number, lines(trial)]).toEqual(['SUCCEEDED', expect.stringMatching(/^INV-202403-/), [['Basic (trial)', '1', '0', '2024-03-01', '2024-03-15']]])
    expect(brief(start)).toEqual([2, 'SUBSCRIPTION_TRIAL_END', '2024-03-15', '2024-04-15', 'FINALIZED', '3000'])

    clock.set('2024-03-25T00:00:00Z')
    const cancel = await post(`/v1/subscriptions/${sub.id}/cancel`, { cancellation_type: 'immediate' })
    expect(cancel.status, JSON.stringify(cancel.body)).toBe(200)
    await run()
    const [, , last] = await invoicesOf(sub.id)
    // 21 of the period's 31 days unused: 3000 × 21 / 31 = 2032.26 → −2032 yen (no minor unit).
    expect(brief(last)).toEqual([3, 'PRORATION', '2024-03-15', '2024-03-25', 'FINALIZED', '-2032'])
    expect(lines(last)).toEqual([['Unused time on Basic from 2024-03-25', '1', '-2032', '2024-03-25', '2024-04-15']])
    // The same amount the cancellation announced.
    expect(cancel.body.total_credit_amount).toBe('-2032')
    expect(last.amount_due).toBe('0')
    expect((await run()).body.summary.invoices_created).toBe(0)
  })
})

describe('KWD: a forever coupon and a customer tax on every invoice', () => {
  it('10% off before 5% tax, rounded to the fils', async () => {
    clock.set('2024-06-20T00:00:00Z')
    const meterId = await readyMeter(h, { name: 'Messages', event_name: 'message', aggregation: { type: 'COUNT' } })
    const p = await plan(h, { prices: [fixedPrice('12.500', { currency: 'KWD', display_name: 'Team' }), usagePrice(meterId, '0.00125', { currency: 'KWD', display_name: 'Messages' })] })
    const cus = await customer(h)
    await post('/v1/taxes/rates', { name: 'VAT', code: 'VAT5', tax_rate_type: 'percentage', percentage_value: '5' })
    expect((await post('/v1/taxes/associations', { tax_rate_code: 'VAT5', entity_type: 'customer', entity_id: cus.id })).status).toBe(200) // as Flexprice answers
    const coupon = (await post('/v1/coupons', { name: 'Launch', type: 'percentage', cadence: 'forever', percentage_off: '10' })).body
    const sub = await subscribe({ customer_id: cus.id, plan_id: p.id, currency: 'KWD', start_date: '2024-05-01T00:00:00Z', coupons: [coupon.id] })
    await send(h, at('2024-05-05T00:00:00Z', 1234).map((t, i) => ({ id: `kwd-${i}`, at: t })), { customer: cus.external_id, name: 'message' })
    await run()
    const [first, second] = await invoicesOf(sub.id)
    const amounts = (i: any) => [i.subtotal, i.total_discount, i.total_tax, i.total]
    // 12.500 − 1.250 = 11.250; × 5% = 0.5625 → 0.563; 11.813.
    expect(amounts(first)).toEqual(['12.5', '1.25', '0.563', '11.813'])
    // 1234 × 0.00125 = 1.5425 → 1.543; + 12.500 = 14.043; 10% = 1.4043 → 1.404; 12.639 × 5% = 0.63195 → 0.632.
    expect(amounts(second)).toEqual(['14.043', '1.404', '0.632', '13.271'])
    expect(second.coupon_applications.map((a: any) => [a.coupon_id, a.original_price, a.discounted_amount])).toEqual([[coupon.id, '14.043', '1.404']])
    expect(second.taxes.map((t: any) => [t.tax_rate.code, t.taxable_amount, t.tax_amount])).toEqual([['VAT5', '12.639', '0.632']])
    expect((await h.http('GET', `/v1/coupons/${coupon.id}`)).body.total_redemptions).toBe(1)
  })
})

describe('grouped and delegated invoicing, overdue notices', () => {
  it("the parent's invoices carry its grouped child's lines (rule 8); an invoicing customer is billed for another's subscription", async () => {
    clock.set('2024-08-15T00:00:00Z')
    const meterId = await readyMeter(h, { name: 'Grouped calls', event_name: 'grouped_call', aggregation: { type: 'COUNT' } })
    const p = await plan(h, { prices: [fixedPrice('10.00', { display_name: 'Seat' }), usagePrice(meterId, '0.01', { display_name: 'Calls' })] })
    const [parentCus, childCus, payer] = await Promise.all([customer(h), customer(h), customer(h)])
    const child = await subscribe({ customer_id: childCus.id, plan_id: p.id, currency: 'USD', start_date: '2024-07-01T00:00:00Z' })
    const parent = await subscribe({ customer_id: parentCus.id, plan_id: p.id, currency: 'USD', start_date: '2024-07-01T00:00:00Z', inheritance: { subscriptions_ids_for_grouped_invoicing: [child.id] } })
    const delegated = await subscribe({ customer_id: childCus.id, plan_id: p.id, currency: 'USD', start_date: '2024-07-01T00:00:00Z', invoicing_customer_id: payer.id })
    await send(h, at('2024-07-05T00:00:00Z', 50).map((t, i) => ({ id: `gp-${i}`, at: t })), { customer: parentCus.external_id, name: 'grouped_call' })
    await send(h, at('2024-07-06T00:00:00Z', 100).map((t, i) => ({ id: `gc-${i}`, at: t })), { customer: childCus.external_id, name: 'grouped_call' })

    const preview = await post('/v1/invoices/preview', { subscription_id: parent.id })
    expect(preview.body.line_items.map((l: any) => [l.customer_id, l.display_name, l.amount])).toEqual([
      [parentCus.id, 'Calls', '0'],
      [parentCus.id, 'Seat', '10'],
      [childCus.id, 'Calls', '0'],
      [childCus.id, 'Seat', '10'],
    ])
    expect((await post('/v1/invoices/preview', { subscription_id: child.id })).body.code).toBe('invalid_operation')
    await run()
    const invoices = await invoicesOf(parent.id)
    expect(invoices.map(brief)).toEqual([
      [1, 'SUBSCRIPTION_CREATE', '2024-07-01', '2024-08-01', 'FINALIZED', '20'],
      // July: the parent's 50 calls (0.50) and the child's 100 (1.00), and both seats for August.
      [2, 'SUBSCRIPTION_CYCLE', '2024-07-01', '2024-08-01', 'FINALIZED', '21.5'],
    ])
    expect(invoices[1].line_items.map((l: any) => [l.customer_id, l.subscription_id, l.amount])).toEqual([
      [parentCus.id, parent.id, '0.5'],
      [parentCus.id, parent.id, '10'],
      [childCus.id, child.id, '1'],
      [childCus.id, child.id, '10'],
    ])
    expect(await invoicesOf(child.id)).toEqual([])
    const [paidBy] = await invoicesOf(delegated.id)
    expect([paidBy.customer_id, paidBy.subscription_customer_id]).toEqual([payer.id, childCus.id])

    // Unpaid and due on their invoice date: one overdue notice each, once.
    const overdue = await post('/v1/jobs/invoice-overdue/run')
    expect(overdue.body.summary.overdue).toBeGreaterThanOrEqual(4)
    expect(await eventsOf(h, invoices[1].id)).toEqual(['invoice.update.finalized', 'invoice.payment.overdue'])
    expect((await post('/v1/jobs/invoice-overdue/run')).body.summary.overdue).toBe(0)
  })
})

describe('auto_invoice_threshold (rule 5)', () => {
  it('bills usage so far once it reaches the threshold; the cycle bills the rest from the cut', async () => {
    clock.set('2024-08-15T00:00:00Z')
    const meterId = await readyMeter(h, { name: 'Threshold calls', event_name: 'threshold_call', aggregation: { type: 'COUNT' } })
    const p = await plan(h, { prices: [usagePrice(meterId, '0.01', { display_name: 'Calls' })] })
    const cus = await customer(h)
    const sub = await subscribe({ customer_id: cus.id, plan_id: p.id, currency: 'USD', start_date: '2024-08-01T00:00:00Z', auto_invoice_threshold: '5.00' })
    await send(h, at('2024-08-02T00:00:00Z', 600).map((t, i) => ({ id: `th-${i}`, at: t })), { customer: cus.external_id, name: 'threshold_call' })
    const first = (await run()).body.summary
    expect([first.threshold_invoices, first.skipped]).toEqual([1, 1])
    const all = (await h.http('GET', `/v1/invoices?subscription_id=${sub.id}`)).body.items
    const [created, cut] = ['SUBSCRIPTION_CREATE', 'AUTO_INVOICE_THRESHOLD'].map((r) => all.find((i: any) => i.billing_reason === r))
    expect([created.billing_reason, created.invoice_status]).toEqual(['SUBSCRIPTION_CREATE', 'SKIPPED'])
    expect([cut.billing_reason, cut.period_start, cut.period_end, cut.total, cut.billing_sequence]).toEqual(['AUTO_INVOICE_THRESHOLD', '2024-08-01T00:00:00.000Z', '2024-08-15T00:00:00.000Z', '6', null])

    clock.set('2024-08-20T00:00:00Z')
    await send(h, at('2024-08-16T00:00:00Z', 100).map((t, i) => ({ id: `th2-${i}`, at: t })), { customer: cus.external_id, name: 'threshold_call' })
    expect((await run()).body.summary.threshold_invoices).toBe(0)
    clock.set('2024-09-01T00:00:00Z')
    await run()
    const cycle = (await invoicesOf(sub.id)).find((i: any) => i.billing_reason === 'SUBSCRIPTION_CYCLE')
    // Only the 100 calls after the cut: 1.00.
    expect([cycle.total, cycle.line_items[0].quantity, cycle.line_items[0].period_start]).toEqual(['1', '100', '2024-08-15T00:00:00.000Z'])
  })
})

describe('the accounting journal of every scenario above', () => {
  it('balances each entry to zero, to the last minor unit, with tiers, prorations, coupons and taxes in three currencies', async () => {
    const res = await h.http('GET', '/v1/accounting/journal?start_time=2024-01-01T00:00:00Z&end_time=2024-12-31T00:00:00Z')
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    const entries = res.body.entries as { id: string; currency: string; lines: { debit: string; credit: string }[] }[]
    expect(new Set(entries.map((e) => e.currency))).toEqual(new Set(['USD', 'JPY', 'KWD']))
    const unbalanced = entries.filter((e) => !e.lines.reduce((acc, l) => acc.plus(l.debit).minus(l.credit), new D(0)).isZero()).map((e) => e.id)
    expect(unbalanced).toEqual([])
    expect(entries.filter((e) => e.id.startsWith('invoice:')).length).toBeGreaterThan(10)
  })
})
