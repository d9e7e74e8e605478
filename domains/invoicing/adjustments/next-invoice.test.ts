// The default method, end to end over HTTP on the embedded engines, every amount by hand: 100 calls billed on tiers
// 0–100 at 1.00 and above at 0.50 (+ 18% VAT), then 20 late calls: the usage-adjustments job schedules 10.00 (+ 1.80 at
// the original 18%) and the next month's invoice carries it as a line beside its own usage (taxed at today's 10%), once,
// however often the jobs run and even when the invoice's transaction fails at the mark; a subscription that will not
// bill again gets the adjustment on an invoice of its own instead.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../../core/clock.ts'
import { customer, plan, subscribed, usagePrice } from '../../../test/catalog.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { readyMeter, send } from '../../../test/usage-helpers.ts'

const DAY = 86_400_000
// Recent days by the real clock (as late events are: the jobs list them by when they were stored), so the period ended
// 1 to 4 days ago and the next one ends within a month.
const START = new Date(Math.floor(Date.now() / DAY) * DAY - 32 * DAY)
const month = (d: Date) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate()))
const END = month(START)
const NEXT_END = month(END)
const PERIOD = `${START.toISOString().slice(0, 10)} – ${END.toISOString().slice(0, 10)}`
// The wall clock while the first period is billed and late usage arrives; moved past the next period to bill it.
const clock = fixedClock(new Date())
const inPeriod = (from: Date, day: number, n: number, prefix: string) => Array.from({ length: n }, (_, i) => ({ id: `${prefix}-${i}`, at: new Date(from.getTime() + day * DAY + i * 1000).toISOString() }))

let h: Harness
const cus: Record<string, any> = {}
const subs: Record<string, any> = {}

const ok = async (method: string, path: string, body?: unknown, status = 200) => {
  const res = await h.http(method, path, { body })
  expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(status)
  return res.body
}
const now = () => clock.set(new Date())
const adjust = async () => {
  const { summary } = await ok('POST', '/v1/jobs/usage-adjustments/run')
  if (summary.failed) console.log(summary.errors)
  return summary
}
const bill = async () => (await ok('POST', '/v1/jobs/billing-run/run')).summary
const invoicesOf = async (customerId: string) =>
  ((await ok('GET', `/v1/invoices?customer_id=${customerId}&limit=100`)).items as any[]).filter((i) => i.invoice_status === 'FINALIZED' && i.total !== '0').sort((a, b) => a.invoice_number.localeCompare(b.invoice_number))
const adjustmentsOf = async (customerId: string) => (await ok('GET', `/v1/usage-adjustments?customer_id=${customerId}`)).items as any[]
const taxesOf = (invoice: any) => invoice.taxes.map((t: any) => [t.tax_rate.percentage_value, t.taxable_amount, t.tax_amount])

async function customerOn(key: string, meter: string) {
  const tiers = [{ up_to: 100, unit_amount: '1.00' }, { up_to: null, unit_amount: '0.50' }]
  const p = await plan(h, { prices: [usagePrice(meter, '0', { display_name: 'API calls', billing_model: 'TIERED', tier_mode: 'SLAB', tiers })] })
  cus[key] = await customer(h, { name: key })
  subs[key] = await subscribed(h, { customer_id: cus[key].id, plan_id: p.id, start_date: START.toISOString(), collection_method: 'send_invoice' })
  await send(h, inPeriod(START, 1, 100, key), { customer: cus[key].external_id, name: 'api_call' })
}

beforeAll(async () => {
  h = await startHarness({ clock, env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0', INVOICE_GRACE_PERIOD_MINUTES: '0' } })
  const meter = await readyMeter(h, { name: 'API calls', event_name: 'api_call', aggregation: { type: 'COUNT' } })
  await ok('POST', '/v1/taxes/rates', { name: 'VAT', code: 'VAT18', tax_rate_type: 'percentage', percentage_value: '18' }, 201)
  await ok('POST', '/v1/taxes/rates', { name: 'GST', code: 'GST10', tax_rate_type: 'percentage', percentage_value: '10' }, 201)
  for (const key of ['tiered', 'cancelled', 'later']) await customerOn(key, meter)
  await ok('POST', '/v1/taxes/associations', { tax_rate_code: 'VAT18', entity_type: 'customer', entity_id: cus.tiered.id })
  now()
  expect(await bill()).toMatchObject({ failed: 0 })
})
afterAll(() => h?.stop())

describe('usage adjustments on the next invoice (the default)', () => {
  it('the period as billed: 100 calls, 100.00 + 18% VAT = 118.00', async () => {
    const [first] = await invoicesOf(cus.tiered.id)
    expect([first.subtotal, first.total_tax, first.total, first.line_items[0].quantity]).toEqual(['100', '18', '118', '100'])
  })

  it('20 late calls: 10.00 + 1.80 scheduled for the next invoice, naming the 20 late events; no document yet; a rerun schedules nothing more', async () => {
    await send(h, inPeriod(START, 10, 20, 'tiered-late'), { customer: cus.tiered.external_id, name: 'api_call' })
    now()
    expect(await adjust()).toMatchObject({ scheduled: 1, charged: 0, failed: 0 })
    expect(await invoicesOf(cus.tiered.id)).toHaveLength(1)
    const [a] = await adjustmentsOf(cus.tiered.id)
    // 120 calls: 100 × 1.00 + 20 × 0.50 = 110.00, billed 100.00: 10.00, and 18% of it 1.80.
    expect(a).toMatchObject({ kind: 'charge', method: 'next_invoice', status: 'scheduled', usage_delta: '20', amount: '10', tax: '1.8', total: '11.8', document_id: null, late_event_count: 20, correction_count: 0 })
    expect(a.late_event_ids.sort()).toEqual(inPeriod(START, 10, 20, 'tiered-late').map((e) => e.id).sort())
    expect(a.carry_by).toBe(NEXT_END.toISOString())
    // The upcoming invoice shows it as the billing run will add it; the subscription's usage so far does not count it.
    const preview = await ok('POST', '/v1/invoices/preview', { subscription_id: subs.tiered.id })
    expect(preview.line_items.map((l: any) => [l.display_name, l.amount, l.tax_amount])).toContainEqual([`API calls: usage adjustment for ${PERIOD}`, '10', '1.8'])
    const usage = await ok('POST', '/v1/subscriptions/usage', { subscription_id: subs.tiered.id })
    expect(usage.charges.map((c: any) => c.quantity)).toEqual(['0'])
    expect(await adjust()).toMatchObject({ scheduled: 0, charged: 0, credited: 0, failed: 0 })
    expect(await adjustmentsOf(cus.tiered.id)).toHaveLength(1)
  })

  it('a subscription cancelled before late usage: no next invoice, so an invoice of its own at once', async () => {
    await ok('POST', `/v1/subscriptions/${subs.cancelled.id}/cancel`, { cancellation_type: 'immediate' })
    await send(h, inPeriod(START, 11, 20, 'cancelled-late'), { customer: cus.cancelled.external_id, name: 'api_call' })
    now()
    expect(await adjust()).toMatchObject({ charged: 1, scheduled: 0, failed: 0 })
    const own = (await invoicesOf(cus.cancelled.id)).filter((i) => i.billing_reason === 'USAGE_ADJUSTMENT')
    expect(own.map((i) => [i.total, i.line_items[0].display_name])).toEqual([['10', `API calls: usage adjustment for ${PERIOD}`]])
    expect(await adjustmentsOf(cus.cancelled.id)).toMatchObject([{ method: 'own_invoice', status: 'issued', document_id: own[0].id, late_event_count: 20 }])
  })

  it('a subscription cancelled while its adjustment waits: the next run issues it on an invoice of its own, once', async () => {
    await send(h, inPeriod(START, 12, 20, 'later-late'), { customer: cus.later.external_id, name: 'api_call' })
    now()
    expect(await adjust()).toMatchObject({ scheduled: 1, failed: 0 })
    await ok('POST', `/v1/subscriptions/${subs.later.id}/cancel`, { cancellation_type: 'immediate' })
    now()
    expect(await adjust()).toMatchObject({ fallen_back: 1, charged: 0, failed: 0 })
    expect(await adjust()).toMatchObject({ fallen_back: 0, charged: 0, resumed: 0 })
    const own = (await invoicesOf(cus.later.id)).filter((i) => i.billing_reason === 'USAGE_ADJUSTMENT')
    expect(own.map((i) => i.total)).toEqual(['10'])
    expect(await adjustmentsOf(cus.later.id)).toMatchObject([{ method: 'own_invoice', status: 'issued', document_id: own[0].id }])
  })

  it("the next month's invoice: 30 calls at today's 10% and the adjustment at the original 18%, 44.80, once — even after its transaction failed at the mark", async () => {
    // The customer's rate changed since: 10% now.
    const vat = (await ok('GET', `/v1/taxes/associations?entity_id=${cus.tiered.id}`)).items[0]
    expect([200, 204]).toContain((await h.http('DELETE', `/v1/taxes/associations/${vat.id}`)).status)
    await ok('POST', '/v1/taxes/associations', { tax_rate_code: 'GST10', entity_type: 'customer', entity_id: cus.tiered.id })
    await send(h, inPeriod(END, 0, 30, 'tiered-next'), { customer: cus.tiered.external_id, name: 'api_call' })
    clock.set(new Date(NEXT_END.getTime() + 3_600_000))

    // As if the process stopped between storing the invoice and marking its adjustment: the mark fails inside the
    // invoice's transaction, so neither is stored, and the adjustment still waits.
    const { sql } = h.running.deps
    await sql.unsafe(`CREATE FUNCTION fail_mark() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'stopped before the mark'; END $$;
      CREATE TRIGGER fail_mark BEFORE UPDATE ON usage_adjustments FOR EACH ROW WHEN (NEW.status = 'issued') EXECUTE FUNCTION fail_mark();`)
    try {
      expect((await bill()).failed).toBeGreaterThan(0)
    } finally {
      await sql.unsafe('DROP TRIGGER fail_mark ON usage_adjustments; DROP FUNCTION fail_mark();')
    }
    expect(await invoicesOf(cus.tiered.id)).toHaveLength(1)
    expect(await adjustmentsOf(cus.tiered.id)).toMatchObject([{ status: 'scheduled' }])

    expect(await bill()).toMatchObject({ failed: 0 })
    const [, next] = await invoicesOf(cus.tiered.id)
    expect(next.billing_reason).toBe('SUBSCRIPTION_CYCLE')
    // 30 calls × 1.00 = 30.00 at 10% = 3.00; the adjustment 10.00 at 18% = 1.80; 40.00 + 4.80 = 44.80.
    expect(next.line_items.map((l: any) => [l.display_name, l.quantity, l.amount, l.tax_amount])).toEqual([
      ['API calls', '30', '30', '3'],
      [`API calls: usage adjustment for ${PERIOD}`, '20', '10', '1.8'],
    ])
    expect([next.subtotal, next.total_tax, next.total]).toEqual(['40', '4.8', '44.8'])
    expect(taxesOf(next)).toEqual([
      ['10', '30', '3'],
      ['18', '10', '1.8'],
    ])
    expect(next.line_items[1].metadata).toMatchObject({ adjusted_invoice_id: (await invoicesOf(cus.tiered.id))[0].id, late_event_count: '20' })
    expect(await adjustmentsOf(cus.tiered.id)).toMatchObject([{ status: 'issued', method: 'next_invoice', document_type: 'invoice', document_id: next.id }])
    expect((await ok('GET', `/v1/usage-adjustments?invoice_id=${next.id}`)).items).toHaveLength(1)
  })

  it('a repeated billing run and adjustments run: nothing more', async () => {
    expect(await bill()).toMatchObject({ invoices_created: 0, failed: 0 })
    expect(await adjust()).toMatchObject({ scheduled: 0, charged: 0, credited: 0, fallen_back: 0, resumed: 0, failed: 0 })
    const invoices = await invoicesOf(cus.tiered.id)
    expect(invoices.map((i) => i.total)).toEqual(['118', '44.8'])
    expect(invoices.flatMap((i) => i.line_items).filter((l: any) => l.display_name.includes('usage adjustment'))).toHaveLength(1)
  })

  it('the carrying invoice voided and recalculated: its replacement carries the adjustment again, computed twice (draft, finalization)', async () => {
    const [, next] = await invoicesOf(cus.tiered.id)
    await ok('POST', `/v1/invoices/${next.id}/void`)
    const replacement = await ok('POST', `/v1/invoices/${next.id}/recalculate?finalize=true`)
    expect(replacement.line_items.map((l: any) => [l.display_name, l.amount, l.tax_amount])).toEqual([
      ['API calls', '30', '3'],
      [`API calls: usage adjustment for ${PERIOD}`, '10', '1.8'],
    ])
    expect([replacement.invoice_status, replacement.total]).toEqual(['FINALIZED', '44.8'])
    expect(await adjust()).toMatchObject({ scheduled: 0, charged: 0, fallen_back: 0, failed: 0 })
  })
})
