// Plan changes through HTTP on a fixed clock, every amount by hand. April 2024 has 30 days; a change on 21 April
// leaves 10 of them (20 used).
// - Pro: a 30.00 seat in advance + 0.10 a call. Business: a 90.00 seat in advance + 0.05 a call.
// - Upgrade Pro → Business on 21 April (create_prorations): credit −30.00 × 10/30 = −10.00, charge
//   90.00 × 10/30 = 30.00, net 20.00. With 100 calls on 15 April (old price: 10.00) and 200 on 25 April (new
//   price: 200 × 0.05 = 10.00), the 1 May invoice bills May's 90.00 + −10.00 + 30.00 + 10.00 + 10.00 = 130.00.
// - The same upgrade with always_invoice: a SUBSCRIPTION_UPDATE invoice of 20.00 on 21 April.
// - Downgrade Business → Pro at period end: nothing prorated; the 1 May invoice bills Pro's 30.00 for May.
// - A trialing subscription changes plan with nothing prorated (nothing was paid).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../../core/clock.ts'
import { customer, eventsOf, feature, fixedPrice, plan, usagePrice } from '../../../test/catalog.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { readyMeter, send } from '../../../test/usage-helpers.ts'
import type { InvoiceWire, Page } from '../../../test/wire.ts'

let h: Harness
const clock = fixedClock('2024-04-01T00:00:00Z')
let pro: string, business: string, euro: string, meterId: string

beforeAll(async () => {
  h = await startHarness({ clock, env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0', INVOICE_GRACE_PERIOD_MINUTES: '0' } })
  meterId = await readyMeter(h, { name: 'API calls', event_name: 'api_call', aggregation: { type: 'COUNT' } })
  pro = (await plan(h, { name: 'Pro', prices: [fixedPrice('30.00', { display_name: 'Pro seat' }), usagePrice(meterId, '0.10', { display_name: 'Pro calls' })] })).id
  business = (await plan(h, { name: 'Business', prices: [fixedPrice('90.00', { display_name: 'Business seat' }), usagePrice(meterId, '0.05', { display_name: 'Business calls' })] })).id
  euro = (await plan(h, { name: 'Euro', prices: [fixedPrice('80.00', { currency: 'EUR' })] })).id
})
afterAll(() => h?.stop())

const post = (path: string, body?: unknown) => h.http('POST', path, { body })
const get = (path: string) => h.http('GET', path)
const job = async (name: string) => {
  const res = await post(`/v1/jobs/${name}/run`)
  expect(res.body.summary.failed ?? 0, JSON.stringify(res.body.summary)).toBe(0)
  return res.body.summary
}
const invoicesOf = async (subId: string) => (await h.http<Page<InvoiceWire>>('GET', `/v1/invoices?subscription_id=${subId}&sort=created_at&order=asc&limit=100`)).body.items
const lines = (i: InvoiceWire) => i.line_items.map((l) => [l.display_name, l.quantity, l.amount])
const stamps = (start: string, n: number) => Array.from({ length: n }, (_, i) => new Date(Date.parse(start) + i * 1000).toISOString())

/** A subscription from 1 April, April billed in advance on its first day. */
async function subscribe(planId: string, body: Record<string, unknown> = {}) {
  const cus = await customer(h)
  const res = await post('/v1/subscriptions', { customer_id: cus.id, plan_id: planId, currency: 'USD', billing_period: 'MONTHLY', collection_method: 'send_invoice', start_date: '2024-04-01T00:00:00Z', ...body })
  expect(res.status, JSON.stringify(res.body)).toBe(201)
  return { ...res.body, external_id: cus.external_id }
}

const change = (target: string, extra: Record<string, unknown> = {}) => ({ target_plan_id: target, billing_cadence: 'RECURRING', billing_cycle: 'anniversary', billing_period: 'MONTHLY', ...extra })

describe('plan changes', () => {
  const subs: Record<string, any> = {}

  beforeAll(async () => {
    subs.upgrade = await subscribe(pro)
    subs.invoiced = await subscribe(pro)
    subs.downgrade = await subscribe(business)
    subs.withdrawn = await subscribe(business)
    await job('billing-run') // April in advance: 30.00, 30.00, 90.00, 90.00
    clock.set('2024-04-21T00:00:00Z')
    await send(h, stamps('2024-04-15T00:00:00Z', 100).map((t, i) => ({ id: `before-${i}`, at: t })), { customer: subs.upgrade.external_id, name: 'api_call' })
  })

  it('previews an upgrade mid-period: −10.00 for Pro, +30.00 for Business, changing nothing', async () => {
    const preview = await post(`/v1/subscriptions/${subs.upgrade.id}/change/preview`, change(business, { proration_behavior: 'create_prorations' }))
    expect(preview.status, JSON.stringify(preview.body)).toBe(200)
    expect([preview.body.change_type, preview.body.is_scheduled, preview.body.effective_date, preview.body.current_plan.id, preview.body.target_plan.id]).toEqual(['upgrade', false, '2024-04-21T00:00:00.000Z', pro, business])
    const d = preview.body.proration_details
    expect([d.credit_amount, d.charge_amount, d.net_amount, d.days_used, d.days_remaining, d.currency]).toEqual(['10.00', '30.00', '20.00', 20, 10, 'USD'])
    expect(d.lines.map((l: any) => [l.description, l.amount])).toEqual([
      ['Unused time on Pro seat from 2024-04-21', '-10.00'],
      ['Remaining time on Business seat from 2024-04-21', '30.00'],
    ])
    // The next invoice with the change made (and undone): May's Business seat, the prorations, April's 100 calls so far at Pro's price.
    const next = preview.body.next_invoice_preview
    expect([next.billing_reason, next.subtotal]).toEqual(['SUBSCRIPTION_CYCLE', '120'])
    expect(next.line_items.map((l: any) => [l.description, l.amount, l.is_proration]).sort()).toEqual(
      [
        ['Business calls', '0', false],
        ['Business seat', '90', false],
        ['Pro calls', '10', false],
        ['Remaining time on Business seat from 2024-04-21', '30', true],
        ['Unused time on Pro seat from 2024-04-21', '-10', true],
      ].sort(),
    )
    expect((await get(`/v1/subscriptions/${subs.upgrade.id}`)).body.plan_id).toBe(pro)
  })

  it('executes it: Business from 21 April, the old plan\'s lines ended there, subscription.updated announced', async () => {
    const done = await post(`/v1/subscriptions/${subs.upgrade.id}/change/execute`, change(business, { proration_behavior: 'create_prorations' }))
    expect(done.status, JSON.stringify(done.body)).toBe(200)
    expect([done.body.is_scheduled, done.body.new_subscription.plan_id, done.body.old_subscription.plan_id, done.body.proration_applied.net_amount, done.body.invoice]).toEqual([false, business, pro, '20.00', null])
    const sub = (await get(`/v1/subscriptions/${subs.upgrade.id}`)).body
    expect(sub.plan_id).toBe(business)
    expect(sub.line_items.map((l: any) => [l.display_name, l.start_date.slice(0, 10), l.end_date?.slice(0, 10) ?? null])).toEqual([
      ['Pro seat', '2024-04-01', '2024-04-21'],
      ['Pro calls', '2024-04-01', '2024-04-21'],
      ['Business seat', '2024-04-21', null],
      ['Business calls', '2024-04-21', null],
    ])
    expect(await eventsOf(h, subs.upgrade.id)).toContain('subscription.updated')
    // 200 calls after the change, on the new plan's line.
    await send(h, stamps('2024-04-21T00:00:01Z', 200).map((t, i) => ({ id: `after-${i}`, at: t })), { customer: subs.upgrade.external_id, name: 'api_call' })
  })

  it('with always_invoice, bills the 20.00 on a SUBSCRIPTION_UPDATE invoice now', async () => {
    const preview = await post(`/v1/subscriptions/${subs.invoiced.id}/change/preview`, change(business, { proration_behavior: 'always_invoice' }))
    expect([preview.body.update_invoice_preview.billing_reason, preview.body.update_invoice_preview.total]).toEqual(['SUBSCRIPTION_UPDATE', '20'])
    // The next invoice leaves the prorations to the update invoice: May's 90.00 and April's usage.
    expect(preview.body.next_invoice_preview.line_items.map((l: any) => [l.description, l.amount]).sort()).toEqual([['Business calls', '0'], ['Business seat', '90'], ['Pro calls', '0']])
    expect(await invoicesOf(subs.invoiced.id)).toHaveLength(1)
    const done = await post(`/v1/subscriptions/${subs.invoiced.id}/change/execute`, change(business, { proration_behavior: 'always_invoice' }))
    expect(done.status, JSON.stringify(done.body)).toBe(200)
    expect([done.body.invoice.billing_reason, done.body.invoice.total, done.body.invoice_id]).toEqual(['SUBSCRIPTION_UPDATE', '20', done.body.invoice.id])
    expect(lines(done.body.invoice)).toEqual([
      ['Unused time on Pro seat from 2024-04-21', '1', '-10'],
      ['Remaining time on Business seat from 2024-04-21', '1', '30'],
    ])
  })

  it('schedules a downgrade at period end: nothing prorated, visible as a pending schedule', async () => {
    const preview = await post(`/v1/subscriptions/${subs.downgrade.id}/change/preview`, change(pro, { change_at: 'end_of_period', proration_behavior: 'create_prorations' }))
    expect([preview.body.change_type, preview.body.is_scheduled, preview.body.scheduled_at, preview.body.proration_details]).toEqual(['downgrade', true, '2024-05-01T00:00:00.000Z', null])
    // The 1 May invoice: April's usage on Business's line, May in advance on Pro's.
    expect(preview.body.next_invoice_preview.line_items.map((l: any) => [l.description, l.amount])).toEqual([
      ['Business calls', '0'],
      ['Pro seat', '30'],
    ])
    const done = await post(`/v1/subscriptions/${subs.downgrade.id}/change/execute`, change(pro, { change_at: 'end_of_period', proration_behavior: 'create_prorations' }))
    expect(done.status, JSON.stringify(done.body)).toBe(200)
    expect([done.body.is_scheduled, done.body.scheduled_at, done.body.proration_applied, done.body.new_subscription.plan_id]).toEqual([true, '2024-05-01T00:00:00.000Z', null, business])
    const shown = (await get(`/v1/subscriptions/${subs.downgrade.id}`)).body.scheduled_plan_change
    expect([shown.id, shown.status, shown.configuration.target_plan_id, shown.scheduled_at]).toEqual([done.body.schedule_id, 'pending', pro, '2024-05-01T00:00:00.000Z'])
    const schedules = (await get(`/v1/subscriptions/${subs.downgrade.id}/schedules`)).body
    expect(schedules.count).toBe(1)
    expect([schedules.schedules[0].id, schedules.schedules[0].status, schedules.schedules[0].schedule_type, schedules.schedules[0].can_be_cancelled, schedules.schedules[0].days_until_execution]).toEqual([done.body.schedule_id, 'pending', 'plan_change', true, 10])
    // A second change while one is pending is refused.
    const again = await post(`/v1/subscriptions/${subs.downgrade.id}/change/execute`, change(pro, { change_at: 'end_of_period' }))
    expect([again.status, again.body.code]).toEqual([400, 'invalid_operation'])
  })

  it('a pending schedule can be cancelled: the old plan keeps running', async () => {
    const done = await post(`/v1/subscriptions/${subs.withdrawn.id}/change/execute`, change(pro, { change_at: 'end_of_period' }))
    const cancelled = await post(`/v1/subscriptions/schedules/${done.body.schedule_id}/cancel`, {})
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200)
    expect(cancelled.body.status).toBe('cancelled')
    expect((await get(`/v1/subscriptions/${subs.withdrawn.id}`)).body.scheduled_plan_change).toBeNull()
    const sub = (await get(`/v1/subscriptions/${subs.withdrawn.id}`)).body
    expect(sub.line_items.map((l: any) => [l.display_name, l.end_date])).toEqual([
      ['Business seat', null],
      ['Business calls', null],
    ])
    const twice = await post(`/v1/subscriptions/schedules/${done.body.schedule_id}/cancel`, {})
    expect([twice.status, twice.body.code]).toEqual([400, 'invalid_operation'])
  })

  it('applies the downgrade at the period end: May bills Pro 30.00', async () => {
    clock.set('2024-05-01T00:00:00Z')
    await job('subscription-lifecycle')
    expect((await job('subscription-schedules')).executed).toBe(1)
    await job('billing-run')
    const sub = (await get(`/v1/subscriptions/${subs.downgrade.id}`)).body
    expect(sub.plan_id).toBe(pro)
    // April's usage (none) on Business's line, May in advance on Pro's.
    expect(lines((await invoicesOf(subs.downgrade.id)).at(-1)!)).toEqual([
      ['Business calls', '0', '0'],
      ['Pro seat', '1', '30'],
    ])
    const schedule = (await get(`/v1/subscription-schedules?subscription_id=${subs.downgrade.id}`)).body.schedules[0]
    expect([schedule.status, schedule.executed_at, schedule.can_be_cancelled]).toEqual(['executed', '2024-05-01T00:00:00.000Z', false])
    // The withdrawn one kept Business: 90.00 for May.
    expect(lines((await invoicesOf(subs.withdrawn.id)).at(-1)!).sort()).toEqual([
      ['Business calls', '0', '0'],
      ['Business seat', '1', '90'],
    ])
  })

  it('bills the upgraded one 130.00 on 1 May: May\'s Business seat, the proration, usage before and after at their prices', async () => {
    const may = (await invoicesOf(subs.upgrade.id)).at(-1)!
    expect(lines(may).sort()).toEqual(
      [
        ['Business calls', '200', '10'],
        ['Business seat', '1', '90'],
        ['Pro calls', '100', '10'],
        ['Remaining time on Business seat from 2024-04-21', '1', '30'],
        ['Unused time on Pro seat from 2024-04-21', '1', '-10'],
      ].sort(),
    )
    expect([may.billing_reason, may.subtotal]).toEqual(['SUBSCRIPTION_CYCLE', '130'])
  })
})

describe('plan changes refused or settling nothing', () => {
  beforeAll(() => clock.set('2024-06-15T00:00:00Z'))

  it('refuses a target plan without prices in the subscription currency, naming target_plan_id and changing nothing', async () => {
    const sub = await subscribe(pro, { start_date: '2024-06-01T00:00:00Z' })
    const res = await post(`/v1/subscriptions/${sub.id}/change/execute`, change(euro))
    expect([res.status, res.body.code, Object.keys(res.body.details)]).toEqual([400, 'validation_error', ['target_plan_id']])
    expect(res.body.message).toMatch(/no recurring prices in USD.*its currencies: EUR/)
    expect((await get(`/v1/subscriptions/${sub.id}`)).body.plan_id).toBe(pro)
    const same = await post(`/v1/subscriptions/${sub.id}/change/preview`, change(pro))
    expect([same.status, Object.keys(same.body.details)]).toEqual([400, ['target_plan_id']])
    const period = await post(`/v1/subscriptions/${sub.id}/change/preview`, change(business, { billing_period: 'ANNUAL' }))
    expect([period.status, Object.keys(period.body.details)]).toEqual([400, ['billing_period']])
  })

  it('in a trial, changes the plan with nothing prorated and the trial kept', async () => {
    const sub = await subscribe(pro, { start_date: '2024-06-10T00:00:00Z', trial_period_days: 14 })
    expect(sub.subscription_status).toBe('trialing')
    const done = await post(`/v1/subscriptions/${sub.id}/change/execute`, change(business, { proration_behavior: 'create_prorations' }))
    expect(done.status, JSON.stringify(done.body)).toBe(200)
    expect([done.body.proration_applied.net_amount, done.body.proration_applied.lines, done.body.warnings[0]]).toEqual(['0.00', [], 'the subscription is trialing: nothing was paid for this period, so nothing is prorated'])
    const after = (await get(`/v1/subscriptions/${sub.id}`)).body
    expect([after.plan_id, after.trial_end, after.subscription_status]).toEqual([business, sub.trial_end, 'trialing'])
  })

  it('a subscription not started yet changes from its start', async () => {
    const sub = await subscribe(pro, { start_date: '2024-07-01T00:00:00Z' })
    const done = await post(`/v1/subscriptions/${sub.id}/change/execute`, change(business))
    expect([done.status, done.body.effective_date, done.body.proration_applied.net_amount]).toEqual([200, '2024-07-01T00:00:00.000Z', '0.00'])
    const lines = (await get(`/v1/subscriptions/${sub.id}`)).body.line_items
    expect(lines.map((l: any) => [l.display_name, l.start_date, l.end_date])).toEqual([
      ['Pro seat', '2024-07-01T00:00:00.000Z', '2024-07-01T00:00:00.000Z'],
      ['Pro calls', '2024-07-01T00:00:00.000Z', '2024-07-01T00:00:00.000Z'],
      ['Business seat', '2024-07-01T00:00:00.000Z', null],
      ['Business calls', '2024-07-01T00:00:00.000Z', null],
    ])
  })

  it('refuses a reset to a plan in another currency the same way', async () => {
    const sub = await subscribe(pro, { start_date: '2024-06-01T00:00:00Z' })
    const res = await post(`/v1/subscriptions/${sub.id}/change/execute`, change(euro, { billing_cycle_anchor: 'now' }))
    expect([res.status, Object.keys(res.body.details)]).toEqual([400, ['target_plan_id']])
    expect((await get(`/v1/subscriptions/${sub.id}`)).body.subscription_status).toBe('active')
  })

  it('refuses an inherited child: it is billed through its parent', async () => {
    const parent = await subscribe(pro, { start_date: '2024-06-01T00:00:00Z' })
    const child = await subscribe(pro, { start_date: '2024-06-01T00:00:00Z', parent_subscription_id: parent.id })
    const res = await post(`/v1/subscriptions/${child.id}/change/execute`, change(business))
    expect([res.status, res.body.code]).toEqual([400, 'invalid_operation'])
    expect(res.body.message).toMatch(/inherited and billed through its parent/)
  })

  it('refuses a grouped child; its parent changes plan with the child left as it is', async () => {
    const parent = await subscribe(pro, { start_date: '2024-06-01T00:00:00Z' })
    const child = await subscribe(pro, { start_date: '2024-06-01T00:00:00Z' })
    const grouped = await post(`/v1/subscriptions/${parent.id}/modify/execute`, { type: 'grouped_invoicing_add', grouped_invoicing_params: { child_subscription_ids: [child.id] } })
    expect(grouped.status, JSON.stringify(grouped.body)).toBe(200)
    const res = await post(`/v1/subscriptions/${child.id}/change/execute`, change(business))
    expect([res.status, res.body.code]).toEqual([400, 'invalid_operation'])
    expect(res.body.message).toMatch(/grouped_invoicing and billed through its parent/)
    const done = await post(`/v1/subscriptions/${parent.id}/change/execute`, change(business, { proration_behavior: 'none' }))
    expect(done.status, JSON.stringify(done.body)).toBe(200)
    expect([(await get(`/v1/subscriptions/${child.id}`)).body.plan_id, (await get(`/v1/subscriptions/${child.id}`)).body.subscription_type]).toEqual([pro, 'grouped_invoicing'])
  })
})

describe('what follows the plan: entitlements and credit grants', () => {
  it('moves entitlements at once and the plans\' credit grants from the change on', async () => {
    clock.set('2024-06-15T00:00:00Z')
    const support = await feature(h, 'static')
    const grant = (planId: string, credits: string) =>
      h.http('POST', '/v1/creditgrants', { body: { name: `${credits} credits`, scope: 'PLAN', plan_id: planId, credits, cadence: 'RECURRING', period: 'MONTHLY', expiration_type: 'NEVER' } })
    const basic = (await plan(h, { prices: [fixedPrice('10.00')], entitlements: [{ feature_id: support.id, static_value: 'email' }] })).id
    const plus = (await plan(h, { prices: [fixedPrice('20.00')], entitlements: [{ feature_id: support.id, static_value: 'phone' }] })).id
    const [oldGrant, newGrant] = [(await grant(basic, '100')).body, (await grant(plus, '50')).body]
    const sub = await subscribe(basic, { start_date: '2024-06-01T00:00:00Z' })
    await job('credit-grant-applications')
    const staticValue = async () => (await get(`/v1/customers/${sub.customer_id}/entitlements`)).body.features.find((f: any) => f.feature.id === support.id).entitlement.static_values
    expect(await staticValue()).toEqual(['email'])

    const done = await post(`/v1/subscriptions/${sub.id}/change/execute`, change(plus, { proration_behavior: 'none' }))
    expect(done.status, JSON.stringify(done.body)).toBe(200)
    expect(await staticValue()).toEqual(['phone'])
    await job('credit-grant-applications')
    clock.set('2024-07-01T00:00:00Z')
    await job('credit-grant-applications')
    const applications = async (grantId: string) =>
      (await get(`/v1/creditgrants/${grantId}/applications?sort=scheduled_for&order=asc&subscription_ids=${sub.id}`)).body.items
        .filter((a: any) => a.subscription_id === sub.id)
        .map((a: any) => [a.scheduled_for.slice(0, 10), a.application_status])
    // Basic's June credits were given; its July ones are not, the subscription having left Basic on 15 June.
    expect(await applications(oldGrant.id)).toEqual([
      ['2024-06-01', 'applied'],
      ['2024-07-01', 'cancelled'],
    ])
    // Plus's from the change, not from the subscription's start.
    expect((await applications(newGrant.id))[0]).toEqual(['2024-06-15', 'applied'])
  })
})

describe('a plan change that resets the cycle (billing_cycle_anchor: now)', () => {
  // July has 31 days; on 11 July 21 are left: Pro's unused rest 30.00 × 21/31 = 20.3225… → 20.32.
  it('cancels the subscription with its credit and starts a new one on the target plan, anchored at the change', async () => {
    clock.set('2024-07-01T00:00:00Z')
    const sub = await subscribe(pro, { start_date: '2024-07-01T00:00:00Z' })
    await job('billing-run')
    clock.set('2024-07-11T00:00:00Z')
    const body = change(business, { billing_cycle_anchor: 'now', proration_behavior: 'create_prorations' })
    const preview = await post(`/v1/subscriptions/${sub.id}/change/preview`, body)
    expect(preview.status, JSON.stringify(preview.body)).toBe(200)
    expect([preview.body.proration_details.credit_amount, preview.body.new_billing_cycle.period_start, preview.body.new_billing_cycle.period_end]).toEqual(['20.32', '2024-07-11T00:00:00.000Z', '2024-08-11T00:00:00.000Z'])
    // The new subscription's first invoice: its first period in advance.
    const first = preview.body.next_invoice_preview
    expect([first.billing_reason, first.total, first.line_items.map((l: any) => [l.description, l.amount, l.period_start, l.period_end])]).toEqual([
      'SUBSCRIPTION_CREATE',
      '90',
      [['Business seat', '90', '2024-07-11T00:00:00.000Z', '2024-08-11T00:00:00.000Z']],
    ])
    expect((await get(`/v1/subscriptions/${sub.id}`)).body.subscription_status).toBe('active')

    const done = await post(`/v1/subscriptions/${sub.id}/change/execute`, body)
    expect(done.status, JSON.stringify(done.body)).toBe(200)
    const successor = done.body.new_subscription
    expect([done.body.old_subscription.status, successor.plan_id, successor.billing_anchor, successor.current_period_end]).toEqual(['cancelled', business, '2024-07-11T00:00:00.000Z', '2024-08-11T00:00:00.000Z'])
    expect(successor.id).not.toBe(sub.id)
    expect((await get(`/v1/subscriptions/${sub.id}`)).body.subscription_status).toBe('cancelled')
    await job('billing-run')
    // The old subscription's last invoice credits the unused rest; the new one bills its first period in advance.
    const last = (await invoicesOf(sub.id)).at(-1)!
    expect(lines(last).filter((l) => l[0] !== 'Pro calls')).toEqual([['Unused time on Pro seat from 2024-07-11', '1', '-20.32']])
    expect(lines((await invoicesOf(successor.id))[0])).toEqual([['Business seat', '1', '90']])
  })
})
