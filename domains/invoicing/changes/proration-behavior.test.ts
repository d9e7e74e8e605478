// proration_behavior of quantity changes and cancellations, through HTTP on a fixed clock, amounts by
// hand: a 30.00 seat billed in advance monthly from 1 April (30 days); on 11 April (10 days used, 20 left)
// 1 → 3 seats.
// Unused 1 seat: −30.00 × 20/30 = −20.00; 3 seats for the rest: 90.00 × 20/30 = 60.00; net 40.00.
// create_prorations bills them on the 1 May invoice, always_invoice on a SUBSCRIPTION_UPDATE invoice now
// (and never again), none not at all.
//
// Cancellations of the same seat, April paid on its first day:
// - Now (11 April, 20 days left): the unused rest is 30.00 × 20/30 = −20.00.
// - On 21 April (asked on 11 April, 10 days left): −10.00; moved to 26 April (5 days left): −5.00.
// - On 11 May (a period not billed yet when asked; May has 31 days, 21 left): 30.00 × 21/31 =
//   20.3225… → −20.32, whatever was asked.
// - A parent with an inherited child, cancelled now: −20.00 for each seat.
// create_prorations puts the credit on the subscription's last invoice, always_invoice on an invoice made
// at the request (and never again), none nowhere.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../../core/clock.ts'
import { D, sumMoney } from '../../../core/money.ts'
import { customer, eventsOf, fixedPrice, plan } from '../../../test/catalog.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import type { InvoiceWire, LineItemWire, Page, ProrationLineWire, SubscriptionLineItemWire, SubscriptionWire } from '../../../test/wire.ts'

let h: Harness
const clock = fixedClock('2024-04-11T00:00:00Z')
let planId: string

beforeAll(async () => {
  h = await startHarness({ clock, env: { KAFKA_BROKERS: '', INVOICE_GRACE_PERIOD_MINUTES: '0' } })
  planId = (await plan(h, { prices: [fixedPrice('30.00', { display_name: 'Seat' })] })).id
})
afterAll(() => h?.stop())

const post = (path: string, body?: unknown) => h.http('POST', path, { body })
const job = async (name: string) => {
  const res = await post(`/v1/jobs/${name}/run`)
  expect(res.body.summary.failed ?? 0, JSON.stringify(res.body.summary)).toBe(0)
  return res.body.summary
}
const run = () => job('billing-run')
/** The lifecycle ends what is due, then the billing run bills it. */
const runAt = async (iso: string) => {
  clock.set(iso)
  await job('subscription-lifecycle')
  return run()
}
const invoicesOf = async (subId: string) =>
  (await h.http<Page<InvoiceWire>>('GET', `/v1/invoices?subscription_id=${subId}&sort=created_at&order=asc&limit=100`)).body.items
const brief = (i: InvoiceWire) => [i.billing_reason, i.period_start.slice(0, 10), i.period_end.slice(0, 10), i.invoice_status, i.total]
const lines = (i: InvoiceWire) => i.line_items.map((l) => [l.display_name, l.quantity, l.amount])
const billed = async (id: string) => sumMoney((await invoicesOf(id)).map((i) => new D(i.subtotal))).toFixed()
const upgrade = (sub: SubscriptionWire, proration_behavior?: string) => ({
  type: 'quantity_change',
  quantity_change_params: { line_items: [{ id: sub.line_items[0].id, quantity: '3' }], ...(proration_behavior && { proration_behavior }) },
})

const UNUSED = ['Unused time on Seat from 2024-04-11', '1', '-20']
const REMAINING = ['Remaining time on Seat from 2024-04-11', '3', '60']

/** A subscription from 1 April, billed for April at its start; `body` may set its default proration_behavior. */
async function seats(body: Record<string, unknown> = {}) {
  const cus = await customer(h)
  const res = await post('/v1/subscriptions', { customer_id: cus.id, plan_id: planId, currency: 'USD', billing_period: 'MONTHLY', collection_method: 'send_invoice', start_date: '2024-04-01T00:00:00Z', ...body })
  expect(res.status, JSON.stringify(res.body)).toBe(201)
  return res.body
}

/** Preview, then execute: the change and its proration lines are the ones announced. */
async function change(sub: SubscriptionWire, behavior?: string) {
  const preview = await post(`/v1/subscriptions/${sub.id}/modify/preview`, upgrade(sub, behavior))
  expect(preview.status, JSON.stringify(preview.body)).toBe(200)
  const done = await post(`/v1/subscriptions/${sub.id}/modify/execute`, upgrade(sub, behavior))
  expect(done.status, JSON.stringify(done.body)).toBe(200)
  expect(done.body.proration).toEqual(preview.body.proration)
  return { preview: preview.body, done: done.body }
}

describe('proration_behavior on a quantity change', () => {
  const subs: Record<string, SubscriptionWire> = {}
  const changes: Record<string, Awaited<ReturnType<typeof change>>> = {}

  beforeAll(async () => {
    subs.create = await seats()
    subs.always = await seats({ proration_behavior: 'create_prorations' })
    subs.none = await seats({ proration_behavior: 'create_prorations' })
    // The always_invoice customer pays a 10% tax, so the update invoice is taxed like any invoice.
    await post('/v1/taxes/rates', { name: 'VAT', code: 'VAT10', tax_rate_type: 'percentage', percentage_value: '10' })
    expect((await post('/v1/taxes/associations', { tax_rate_code: 'VAT10', entity_type: 'customer', entity_id: subs.always.customer_id })).status).toBe(200) // as Flexprice answers
    await run() // April in advance: 30.00 each (33.00 with the tax).
    // The subscription's default is none here: the request's create_prorations is what counts.
    changes.create = await change(subs.create, 'create_prorations')
    changes.always = await change(subs.always, 'always_invoice')
    // The subscription's default is create_prorations here: the request's none is what counts.
    changes.none = await change(subs.none, 'none')
  })

  it('create_prorations: the lines wait for the next invoice; nothing is invoiced now', async () => {
    const { preview, done } = changes.create
    expect(done.proration.lines.map((l: ProrationLineWire) => [l.description, l.amount])).toEqual([
      ['Unused time on Seat from 2024-04-11', '-20.00'],
      ['Remaining time on Seat from 2024-04-11', '60.00'],
    ])
    expect([done.proration.total, done.invoice, preview.invoice]).toEqual(['40.00', null, null])
    expect((await invoicesOf(subs.create.id)).map(brief)).toEqual([['SUBSCRIPTION_CREATE', '2024-04-01', '2024-05-01', 'FINALIZED', '30']])
    // The upcoming invoice shows them: May's 3 seats 90.00 − 20.00 + 60.00.
    const upcoming = (await post('/v1/invoices/preview', { subscription_id: subs.create.id })).body
    expect([upcoming.total, lines(upcoming)]).toEqual(['130', [UNUSED, REMAINING, ['Seat', '3', '90']]])
  })

  it('always_invoice: a SUBSCRIPTION_UPDATE invoice now, finalized, with the lines the preview showed', async () => {
    const { preview, done } = changes.always
    expect(done.proration.total).toBe('40.00')
    // 40.00 + 10% tax 4.00.
    expect([done.invoice.billing_reason, done.invoice.invoice_status, done.invoice.subtotal, done.invoice.total_tax, done.invoice.total]).toEqual(['SUBSCRIPTION_UPDATE', 'FINALIZED', '40', '4', '44'])
    expect(done.invoice.invoice_number).toMatch(/^INV-202404-/)
    expect(lines(done.invoice)).toEqual([UNUSED, REMAINING])
    expect(done.invoice.line_items.map((l: LineItemWire) => [l.period_start, l.period_end])).toEqual([
      ['2024-04-11T00:00:00.000Z', '2024-05-01T00:00:00.000Z'],
      ['2024-04-11T00:00:00.000Z', '2024-05-01T00:00:00.000Z'],
    ])
    // The credit names the ended line, the charge the new one.
    const [ended, started] = done.subscription.line_items
    expect(done.invoice.line_items.map((l: LineItemWire) => l.subscription_line_item_id)).toEqual([ended.id, started.id])
    expect([ended.end_proration_behavior, started.proration_behavior, started.quantity]).toEqual(['always_invoice', 'always_invoice', '3'])
    expect([preview.invoice.billing_reason, preview.invoice.total, lines(preview.invoice)]).toEqual(['SUBSCRIPTION_UPDATE', '44', [UNUSED, REMAINING]])
    expect(await eventsOf(h, done.invoice.id)).toEqual(['invoice.update.finalized'])
    const stored = await invoicesOf(subs.always.id)
    expect(stored.map(brief)).toEqual([
      ['SUBSCRIPTION_CREATE', '2024-04-01', '2024-05-01', 'FINALIZED', '33'],
      ['SUBSCRIPTION_UPDATE', '2024-04-11', '2024-05-01', 'FINALIZED', '44'],
    ])
    // The upcoming invoice has no proration left: May's 3 seats 90.00 + 9.00 tax.
    const upcoming = (await post('/v1/invoices/preview', { subscription_id: subs.always.id })).body
    expect([upcoming.total, lines(upcoming)]).toEqual(['99', [['Seat', '3', '90']]])
  })

  it('none: no proration at all', async () => {
    const { preview, done } = changes.none
    expect([done.proration, done.invoice, preview.invoice]).toEqual([{ currency: 'USD', lines: [], total: '0.00' }, null, null])
    const upcoming = (await post('/v1/invoices/preview', { subscription_id: subs.none.id })).body
    expect([upcoming.total, lines(upcoming)]).toEqual(['90', [['Seat', '3', '90']]])
  })

  it('a second always_invoice change at the same instant is refused and changes nothing', async () => {
    const sub = (await h.http('GET', `/v1/subscriptions/${subs.always.id}`)).body
    const started = sub.line_items.find((l: SubscriptionLineItemWire) => l.end_date === null)
    const res = await post(`/v1/subscriptions/${sub.id}/modify/execute`, { type: 'quantity_change', quantity_change_params: { line_items: [{ id: started.id, quantity: '5' }], proration_behavior: 'always_invoice' } })
    expect([res.status, res.body.code]).toEqual([400, 'invalid_operation'])
    expect((await h.http('GET', `/v1/subscriptions/${sub.id}`)).body.version).toBe(sub.version)
    expect((await invoicesOf(sub.id)).length).toBe(2)
  })

  it('the billing runs bill each proration once: on the May invoice with create_prorations, never again', async () => {
    clock.set('2024-05-02T00:00:00Z')
    await run()
    clock.set('2024-06-02T00:00:00Z')
    await run()
    expect((await run()).invoices_created).toBe(0)
    const cycles = async (id: string) => (await invoicesOf(id)).filter((i) => i.billing_reason === 'SUBSCRIPTION_CYCLE').map((i) => [i.period_start.slice(0, 10), i.total, lines(i)])
    expect(await cycles(subs.create.id)).toEqual([
      ['2024-04-01', '130', [UNUSED, REMAINING, ['Seat', '3', '90']]],
      ['2024-05-01', '90', [['Seat', '3', '90']]],
    ])
    expect(await cycles(subs.always.id)).toEqual([
      ['2024-04-01', '99', [['Seat', '3', '90']]],
      ['2024-05-01', '99', [['Seat', '3', '90']]],
    ])
    expect(await cycles(subs.none.id)).toEqual([
      ['2024-04-01', '90', [['Seat', '3', '90']]],
      ['2024-05-01', '90', [['Seat', '3', '90']]],
    ])
    // April to June for one seat upgraded to three on 11 April, whatever the behavior, except none's 40.00:
    // 30 + 40 + 90 + 90 = 250.00 before tax.
    expect([await billed(subs.create.id), await billed(subs.always.id), await billed(subs.none.id)]).toEqual(['250', '250', '210'])
  })
})

const details = (c: { proration_details: ProrationLineWire[] }) => c.proration_details.map((l) => [l.description, l.amount])

async function cancel(sub: SubscriptionWire, body: Record<string, unknown>) {
  const res = await post(`/v1/subscriptions/${sub.id}/cancel`, body)
  expect(res.status, JSON.stringify(res.body)).toBe(200)
  return res.body
}

const now = (proration_behavior: string) => ({ cancellation_type: 'immediate', proration_behavior })
const on = (cancel_at: string, proration_behavior: string) => ({ cancellation_type: 'scheduled_date', cancel_at, proration_behavior })

describe('proration_behavior on a cancellation', () => {
  const subs: Record<string, SubscriptionWire> = {}
  const done: Record<string, Awaited<ReturnType<typeof cancel>>> = {}

  beforeAll(async () => {
    clock.set('2024-04-11T00:00:00Z')
    // The subscriptions' own default is none, or create_prorations where the request says none: the request counts.
    for (const name of ['nowCreate', 'nowAlways', 'onCreate', 'onAlways', 'moved', 'later']) subs[name] = await seats()
    for (const name of ['nowNone', 'onNone']) subs[name] = await seats({ proration_behavior: 'create_prorations' })
    // A parent with an inherited child, billed through it (April: 2 × 30.00).
    subs.family = await seats()
    subs.child = await seats({ parent_subscription_id: subs.family.id })
    await runAt('2024-04-11T00:00:00Z') // April in advance: 30.00 each.
    done.nowCreate = await cancel(subs.nowCreate, now('create_prorations'))
    done.nowAlways = await cancel(subs.nowAlways, now('always_invoice'))
    done.nowNone = await cancel(subs.nowNone, now('none'))
    done.onCreate = await cancel(subs.onCreate, on('2024-04-21T00:00:00Z', 'create_prorations'))
    done.onAlways = await cancel(subs.onAlways, on('2024-04-21T00:00:00Z', 'always_invoice'))
    done.onNone = await cancel(subs.onNone, on('2024-04-21T00:00:00Z', 'none'))
    await cancel(subs.moved, on('2024-04-21T00:00:00Z', 'create_prorations'))
    done.moved = await cancel(subs.moved, on('2024-04-26T00:00:00Z', 'create_prorations'))
    done.later = await cancel(subs.later, on('2024-05-11T00:00:00Z', 'none'))
    done.family = await cancel(subs.family, now('always_invoice'))
  })

  it('answers with the credit each behavior settles, and ends the line items recording it', async () => {
    expect([details(done.nowCreate), done.nowCreate.total_credit_amount, done.nowCreate.invoice]).toEqual([[['Unused time on Seat from 2024-04-11', '-20.00']], '-20.00', null])
    expect([details(done.nowNone), done.nowNone.total_credit_amount, done.nowNone.invoice]).toEqual([[], '0.00', null])
    expect([details(done.onCreate), done.onCreate.total_credit_amount, done.onCreate.status]).toEqual([[['Unused time on Seat from 2024-04-21', '-10.00']], '-10.00', 'active'])
    expect([details(done.onNone), done.onNone.invoice]).toEqual([[], null])
    expect(details(done.moved)).toEqual([['Unused time on Seat from 2024-04-26', '-5.00']])
    // A cut May is prorated even though none was asked: May was not paid when the cancellation was made.
    expect([done.later.proration_behavior, details(done.later)]).toEqual(['create_prorations', [['Unused time on Seat from 2024-05-11', '-20.32']]])
    const ends = (c: { subscription: SubscriptionWire }) => c.subscription.line_items.map((l) => [l.end_date, l.end_proration_behavior])
    expect(ends(done.nowNone)).toEqual([['2024-04-11T00:00:00.000Z', 'none']])
    expect(ends(done.onAlways)).toEqual([['2024-04-21T00:00:00.000Z', 'always_invoice']])
    expect(ends(done.moved)).toEqual([['2024-04-26T00:00:00.000Z', 'create_prorations']])
  })

  it('always_invoice: a SUBSCRIPTION_UPDATE invoice at the request with the credit, now or for a later date', async () => {
    for (const [c, from, amount] of [
      [done.nowAlways, '2024-04-11', '-20'],
      [done.onAlways, '2024-04-21', '-10'],
    ] as const) {
      expect(c.total_credit_amount).toBe(`${amount}.00`)
      expect([c.invoice.id, ...brief(c.invoice), c.invoice.amount_due]).toEqual([c.invoice_id, 'SUBSCRIPTION_UPDATE', from, '2024-05-01', 'FINALIZED', amount, '0'])
      expect(lines(c.invoice)).toEqual([[`Unused time on Seat from ${from}`, '1', amount]])
    }
  })

  it("credits an inherited child's unused time with its parent's, under the child's name", async () => {
    const { invoice } = done.family
    expect([invoice.subscription_id, invoice.total, lines(invoice)]).toEqual([subs.family.id, '-40', [['Unused time on Seat from 2024-04-11', '1', '-20'], ['Unused time on Seat from 2024-04-11', '1', '-20']]])
    expect(invoice.line_items.map((l: LineItemWire) => l.subscription_id)).toEqual([subs.family.id, subs.child.id])
    const child = (await h.http('GET', `/v1/subscriptions/${subs.child.id}`)).body
    expect([child.subscription_status, child.line_items[0].end_proration_behavior]).toEqual(['cancelled', 'always_invoice'])
  })

  it('refuses to move an end whose credit was already invoiced, and changes nothing', async () => {
    const sub = (await h.http('GET', `/v1/subscriptions/${subs.onAlways.id}`)).body
    const again = await post(`/v1/subscriptions/${sub.id}/cancel`, now('create_prorations'))
    expect([again.status, again.body.code]).toEqual([400, 'invalid_operation'])
    const modify = await post(`/v1/subscriptions/${sub.id}/modify/execute`, { type: 'quantity_change', quantity_change_params: { line_items: [{ id: sub.line_items[0].id, quantity: '2' }] } })
    expect([modify.status, modify.body.code]).toEqual([400, 'invalid_operation'])
    const after = (await h.http('GET', `/v1/subscriptions/${sub.id}`)).body
    expect([after.version, after.line_items.length, after.cancel_at]).toEqual([sub.version, 1, '2024-04-21T00:00:00.000Z'])
  })

  it('bills each credit once: on the last invoice with create_prorations, never again with always_invoice or none', async () => {
    expect((await runAt('2024-04-11T00:00:00Z')).invoices_created).toBe(4)
    expect((await invoicesOf(subs.nowCreate.id)).map(brief)).toEqual([
      ['SUBSCRIPTION_CREATE', '2024-04-01', '2024-05-01', 'FINALIZED', '30'],
      ['SUBSCRIPTION_CYCLE', '2024-04-01', '2024-04-11', 'FINALIZED', '-20'],
    ])
    expect((await invoicesOf(subs.nowAlways.id)).map(brief)).toEqual([
      ['SUBSCRIPTION_CREATE', '2024-04-01', '2024-05-01', 'FINALIZED', '30'],
      ['SUBSCRIPTION_UPDATE', '2024-04-11', '2024-05-01', 'FINALIZED', '-20'],
      ['SUBSCRIPTION_CYCLE', '2024-04-01', '2024-04-11', 'SKIPPED', '0'],
    ])
    expect((await invoicesOf(subs.nowNone.id)).map(brief).slice(1)).toEqual([['PRORATION', '2024-04-01', '2024-04-11', 'SKIPPED', '0']])

    await runAt('2024-04-22T00:00:00Z')
    const last = async (id: string) => (await invoicesOf(id)).filter((i) => i.billing_reason !== 'SUBSCRIPTION_UPDATE').slice(1).map((i) => [...brief(i), lines(i)])
    expect(await last(subs.onCreate.id)).toEqual([['SUBSCRIPTION_CYCLE', '2024-04-01', '2024-04-21', 'FINALIZED', '-10', [['Unused time on Seat from 2024-04-21', '1', '-10']]]])
    expect(await last(subs.onAlways.id)).toEqual([['SUBSCRIPTION_CYCLE', '2024-04-01', '2024-04-21', 'SKIPPED', '0', []]])
    expect(await last(subs.onNone.id)).toEqual([['PRORATION', '2024-04-01', '2024-04-21', 'SKIPPED', '0', []]])
    expect((await h.http('GET', `/v1/subscriptions/${subs.onAlways.id}`)).body.subscription_status).toBe('cancelled')

    await runAt('2024-04-27T00:00:00Z')
    expect(await last(subs.moved.id)).toEqual([['SUBSCRIPTION_CYCLE', '2024-04-01', '2024-04-26', 'FINALIZED', '-5', [['Unused time on Seat from 2024-04-26', '1', '-5']]]])

    await runAt('2024-05-02T00:00:00Z')
    await runAt('2024-05-12T00:00:00Z')
    expect(await last(subs.later.id)).toEqual([
      ['SUBSCRIPTION_CYCLE', '2024-04-01', '2024-05-01', 'FINALIZED', '30', [['Seat', '1', '30']]],
      ['SUBSCRIPTION_CYCLE', '2024-05-01', '2024-05-11', 'FINALIZED', '-20.32', [['Unused time on Seat from 2024-05-11', '1', '-20.32']]],
    ])
    clock.set('2024-06-02T00:00:00Z')
    await job('subscription-lifecycle')
    expect((await job('billing-run')).invoices_created).toBe(0)

    // 30.00 paid for April less each credit, once.
    const totals = await Promise.all(['nowCreate', 'nowAlways', 'nowNone', 'onCreate', 'onAlways', 'onNone', 'moved', 'later', 'family'].map((n) => billed(subs[n].id)))
    expect(totals).toEqual(['10', '10', '30', '20', '20', '30', '25', '39.68', '20'])
  })
})
