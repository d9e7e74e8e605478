// Closed periods settle themselves, end to end over HTTP on the embedded engines, every amount by hand: a billing run
// finalizes last month's usage, late events and corrections arrive, and the usage-adjustments job issues the
// difference once — a USAGE_ADJUSTMENT invoice taxed at the original rate, a refund credit note on a paid invoice,
// nothing inside an allowance, nothing on a rerun, a difference under the minimum carried to the next run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../../core/clock.ts'
import { customer, fixedPrice, plan, subscribed, usagePrice } from '../../../test/catalog.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { readyMeter, send } from '../../../test/usage-helpers.ts'
import { runUsageAdjustments } from './run.ts'

const DAY = 86_400_000
// Recent days: a correction needs its event inside the dedup window (35 days) by the real clock.
const START = new Date(Math.floor(Date.now() / DAY) * DAY - 32 * DAY)
const END = new Date(Date.UTC(START.getUTCFullYear(), START.getUTCMonth() + 1, START.getUTCDate()))
const PERIOD = `${START.toISOString().slice(0, 10)} – ${END.toISOString().slice(0, 10)}`
const clock = fixedClock(new Date(END.getTime() + 2 * 3_600_000))
const during = (day: number, n: number, prefix: string) => Array.from({ length: n }, (_, i) => ({ id: `${prefix}-${i}`, at: new Date(START.getTime() + day * DAY + i * 1000).toISOString() }))

let h: Harness
const cus: Record<string, any> = {}

const ok = async (method: string, path: string, body?: unknown, status = 200) => {
  const res = await h.http(method, path, { body })
  expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(status)
  return res.body
}
const adjust = async () => (await ok('POST', '/v1/jobs/usage-adjustments/run')).summary
const invoicesOf = async (customerId: string) =>
  ((await ok('GET', `/v1/invoices?customer_id=${customerId}&limit=100`)).items as any[]).filter((i) => i.invoice_status === 'FINALIZED').sort((a, b) => a.invoice_number.localeCompare(b.invoice_number))
// The clock stands still, so documents are told apart by number, not by when they were made.
const billed = async (customerId: string) => (await invoicesOf(customerId)).find((i) => i.billing_reason === 'SUBSCRIPTION_CYCLE')
const adjustmentsOf = async (customerId: string) => (await invoicesOf(customerId)).filter((i) => i.billing_reason === 'USAGE_ADJUSTMENT')
const creditNotesOf = async (invoiceId: string) => (await ok('GET', `/v1/creditnotes?invoice_id=${invoiceId}`)).items as any[]

async function customerOn(key: string, prices: unknown[], extra: Record<string, unknown> = {}) {
  const p = await plan(h, { prices, ...extra })
  cus[key] = await customer(h, { name: key })
  await subscribed(h, { customer_id: cus[key].id, plan_id: p.id, start_date: START.toISOString(), collection_method: 'send_invoice' })
}

beforeAll(async () => {
  h = await startHarness({ clock, env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0', INVOICE_GRACE_PERIOD_MINUTES: '0' } })
  const tiered = await readyMeter(h, { name: 'Tiered calls', event_name: 'tiered_call', aggregation: { type: 'COUNT' } })
  const flat = await readyMeter(h, { name: 'Flat calls', event_name: 'flat_call', aggregation: { type: 'COUNT' } })
  const included = await readyMeter(h, { name: 'Included calls', event_name: 'included_call', aggregation: { type: 'COUNT' } })
  const tiers = [{ up_to: 100, unit_amount: '1.00' }, { up_to: null, unit_amount: '0.50' }]
  await customerOn('tiered', [usagePrice(tiered, '0', { display_name: 'API calls', billing_model: 'TIERED', tier_mode: 'SLAB', tiers })])
  await customerOn('flat', [usagePrice(flat, '0.25', { display_name: 'Calls' })])
  const feature = await ok('POST', '/v1/features', { name: 'Included calls', type: 'metered', meter_id: included }, 201)
  await customerOn('included', [fixedPrice('10.00', { display_name: 'Platform' }), usagePrice(included, '0.10', { display_name: 'Calls' })], {
    entitlements: [{ feature_id: feature.id, usage_limit: 1000, usage_reset_period: 'MONTHLY', is_soft_limit: true }],
  })
  await ok('POST', '/v1/taxes/rates', { name: 'VAT', code: 'VAT18', tax_rate_type: 'percentage', percentage_value: '18' }, 201)
  await ok('POST', '/v1/taxes/associations', { tax_rate_code: 'VAT18', entity_type: 'customer', entity_id: cus.tiered.id })
  await send(h, during(1, 100, 'tiered'), { customer: cus.tiered.external_id, name: 'tiered_call' })
  await send(h, during(2, 40, 'flat'), { customer: cus.flat.external_id, name: 'flat_call' })
  await send(h, during(3, 500, 'included'), { customer: cus.included.external_id, name: 'included_call' })
  const run = (await ok('POST', '/v1/jobs/billing-run/run')).summary
  expect(run.failed).toBe(0)
})
afterAll(() => h?.stop())

describe('usage adjustments', () => {
  it('the billed periods as they stood: 100 calls 100.00 + 18% VAT, 40 calls 10.00 paid, 500 included calls 0.00', async () => {
    const tiered = await billed(cus.tiered.id)
    expect([tiered.subtotal, tiered.total_tax, tiered.total, tiered.line_items[0].quantity]).toEqual(['100', '18', '118', '100'])
    const flat = await billed(cus.flat.id)
    expect([flat.total, flat.line_items[0].quantity]).toEqual(['10', '40'])
    await ok('PUT', `/v1/invoices/${flat.id}/payment`, { payment_status: 'SUCCEEDED', amount: '10' })
    const included = await billed(cus.included.id)
    expect(included.line_items.find((l: any) => l.display_name === 'Calls')).toMatchObject({ quantity: '500', amount: '0' })
    // Nothing moved yet: the job issues nothing.
    expect(await adjust()).toMatchObject({ charged: 0, credited: 0, deferred: 0, failed: 0 })
  })

  it('settings: defaults, a bad minimum refused naming it and changing nothing, a minimum set, invoices of their own', async () => {
    expect(await ok('GET', '/v1/usage-adjustments/settings')).toMatchObject({ late_usage: 'adjust', method: 'next_invoice', minimum_amount: '0', horizon_periods: 3 })
    const bad = await h.http('PUT', '/v1/usage-adjustments/settings', { body: { minimum_amount: '-1', horizon_periods: 2 } })
    expect(bad.status).toBe(400)
    expect(JSON.stringify(bad.body)).toContain('minimum_amount')
    expect(await ok('GET', '/v1/usage-adjustments/settings')).toMatchObject({ minimum_amount: '0', horizon_periods: 3 })
    const bad2 = await h.http('PUT', '/v1/usage-adjustments/settings', { body: { method: 'later' } })
    expect([bad2.status, JSON.stringify(bad2.body)]).toEqual([400, expect.stringContaining('method')])
    // This file walks the own_invoice method (next-invoice.test.ts the default).
    expect(await ok('PUT', '/v1/usage-adjustments/settings', { minimum_amount: '1.00', method: 'own_invoice' })).toMatchObject({ late_usage: 'adjust', method: 'own_invoice', minimum_amount: '1', horizon_periods: 3 })
  })

  it('1 late call above 100: 0.50 is under the 1.00 minimum, carried; 19 more: 20 late calls issue 10.00 + 1.80 VAT once', async () => {
    await send(h, during(10, 1, 'tiered-late-a'), { customer: cus.tiered.external_id, name: 'tiered_call' })
    expect(await adjust()).toMatchObject({ charged: 0, deferred: 1, failed: 0 })
    expect(await adjustmentsOf(cus.tiered.id)).toEqual([])

    await send(h, during(11, 19, 'tiered-late-b'), { customer: cus.tiered.external_id, name: 'tiered_call' })
    expect(await adjust()).toMatchObject({ charged: 1, deferred: 0, failed: 0 })
    // 120 calls: 100 × 1.00 + 20 × 0.50 = 110.00, billed 100.00: 10.00, and 18% of it 1.80.
    const [adjustment] = await adjustmentsOf(cus.tiered.id)
    expect([adjustment.invoice_type, adjustment.subtotal, adjustment.total_tax, adjustment.total, adjustment.amount_due]).toEqual(['ONE_OFF', '10', '1.8', '11.8', '11.8'])
    expect(adjustment.line_items.map((l: any) => [l.display_name, l.quantity, l.amount])).toEqual([['API calls: usage adjustment for ' + PERIOD, '20', '10']])
    expect(adjustment.taxes.map((t: any) => [t.tax_rate.percentage_value, t.tax_amount])).toEqual([['18', '1.8']])
  })

  it('a repeated run issues nothing more, nor does one after a crash between the document and its record', async () => {
    expect(await adjust()).toMatchObject({ charged: 0, credited: 0, deferred: 0, failed: 0 })
    // As if the run stopped right after making the invoice: its adjustment still pending.
    await h.running.deps.sql`UPDATE usage_adjustments SET status = 'pending', document_id = NULL WHERE status = 'issued'`
    expect(await adjust()).toMatchObject({ resumed: 1, charged: 0, failed: 0 })
    expect(await adjustmentsOf(cus.tiered.id)).toHaveLength(1)
  })

  it('4 calls of a paid invoice cancelled: a 1.00 refund credit note on it, once', async () => {
    const res = await ok('POST', '/v1/events/corrections', { items: [0, 1, 2, 3].map((i) => ({ event_id: `flat-${i}`, action: 'cancel', reason: 'test traffic' })) })
    expect(res.applied).toBe(4)
    expect(await adjust()).toMatchObject({ credited: 1, charged: 0, failed: 0 })
    const flat = await billed(cus.flat.id)
    // 36 × 0.25 = 9.00 against 10.00 billed and paid.
    const notes = await creditNotesOf(flat.id)
    expect(notes.map((n: any) => [n.credit_note_type, n.credit_note_status, n.total_amount, n.memo])).toEqual([['REFUND', 'FINALIZED', '1', `usage correction: usage adjustment for ${PERIOD}`]])
    // It names the four corrections it settles.
    const corrections = (await ok('GET', `/v1/events/corrections?external_customer_id=${cus.flat.external_id}`)).items.map((c: any) => c.id)
    expect(notes[0].metadata.correction_ids.split(',').sort()).toEqual(corrections.sort())
    expect(notes[0].metadata.correction_count).toBe('4')
    expect(corrections).toHaveLength(4)
    expect(await adjust()).toMatchObject({ credited: 0, charged: 0 })
    expect(await creditNotesOf(flat.id)).toHaveLength(1)
  })

  it('50 late calls inside a 1,000-call allowance: nothing', async () => {
    await ok('PUT', '/v1/usage-adjustments/settings', { minimum_amount: '0' })
    await send(h, during(12, 50, 'included-late'), { customer: cus.included.external_id, name: 'included_call' })
    expect(await adjust()).toMatchObject({ charged: 0, credited: 0, deferred: 0, failed: 0 })
    expect(await adjustmentsOf(cus.included.id)).toEqual([])
  })

  it('a late call cancelled after its adjustment: 0.50 + 0.09 VAT credited; sent again under a new id: charged again', async () => {
    const res = await ok('POST', '/v1/events/corrections', { items: [{ event_id: 'tiered-late-b-0', action: 'cancel', reason: 'sent twice' }] })
    expect(res.applied).toBe(1)
    expect(await adjust()).toMatchObject({ credited: 1, charged: 0, failed: 0 })
    const original = await billed(cus.tiered.id)
    // 119 calls: 109.50, settled 110.00: 0.50 back and its 18%, 0.09; the invoice is unpaid, so an adjustment of what is owed.
    expect((await creditNotesOf(original.id)).map((n: any) => [n.credit_note_type, n.total_amount])).toEqual([['ADJUSTMENT', '0.59']])
    // Back to 120 calls: the usage of the first adjustment, but a new one (its third), not taken for the first.
    await send(h, during(11, 1, 'tiered-late-c'), { customer: cus.tiered.external_id, name: 'tiered_call' })
    expect(await adjust()).toMatchObject({ charged: 1, credited: 0, failed: 0 })
    expect((await adjustmentsOf(cus.tiered.id)).map((i: any) => i.total)).toEqual(['11.8', '0.59'])
  })

  it("a customer on a test clock: left alone by the wall clock's run, adjusted by its clock's", async () => {
    const sandbox = await ok('POST', '/v1/secrets/api/keys', { name: 'sandbox', roles: ['admin'], environment_id: h.tenant.environments.sandbox }, 201)
    const made = await h.http('POST', '/v1/test_clocks', { body: { name: 'adjustments', frozen_time: clock.now().toISOString() }, key: sandbox.api_key })
    expect(made.status, JSON.stringify(made.body)).toBe(201)
    const { sql } = h.running.deps
    // Only the selection is under test: the customer is put on the clock directly.
    await sql`UPDATE customers SET test_clock_id = ${made.body.id} WHERE id = ${cus.flat.id}`
    try {
      // Back to 40 calls: 4 × 0.25 = 1.00 to charge, by the clock's run only.
      await send(h, during(14, 4, 'flat-late'), { customer: cus.flat.external_id, name: 'flat_call' })
      expect(await adjust()).toMatchObject({ charged: 0, failed: 0 })
      expect(await adjustmentsOf(cus.flat.id)).toEqual([])
      expect(await runUsageAdjustments({ ...h.running.deps, testClockId: made.body.id })).toMatchObject({ lines: 1, charged: 1, failed: 0 })
      expect((await adjustmentsOf(cus.flat.id)).map((i) => i.total)).toEqual(['1'])
    } finally {
      await sql`UPDATE customers SET test_clock_id = NULL WHERE id = ${cus.flat.id}`
    }
  })

  it('late_usage ignore: late calls are left alone', async () => {
    await ok('PUT', '/v1/usage-adjustments/settings', { late_usage: 'ignore' })
    await send(h, during(13, 10, 'tiered-ignored'), { customer: cus.tiered.external_id, name: 'tiered_call' })
    expect(await adjust()).toMatchObject({ lines: 0, charged: 0 })
    expect(await adjustmentsOf(cus.tiered.id)).toHaveLength(2)
  })
})
