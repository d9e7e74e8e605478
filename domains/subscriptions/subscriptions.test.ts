import { beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../core/clock.ts'
import { created, customer, eventsOf, feature, fixedPrice, meter, plan, twoTenants, unique, usagePrice } from '../../test/catalog.ts'

// Every instant below follows from this fixed "now".
const NOW = '2025-01-15T10:00:00.000Z'
const t = twoTenants({ clock: fixedClock(NOW) })
let meterId: string

beforeAll(async () => {
  meterId = (await meter(t.h)).id
})

const subscribe = (body: Record<string, unknown>, key?: string) =>
  t.h.http('POST', '/v1/subscriptions', { body: { currency: 'USD', billing_period: 'MONTHLY', ...body }, key })

async function rejected(body: Record<string, unknown>): Promise<{ status: number; fields: string[]; body: any }> {
  const res = await subscribe(body)
  return { status: res.status, fields: Object.keys(res.body.details ?? {}), body: res.body }
}

describe('creating a subscription', () => {
  it('snapshots the plan prices of its currency and period, one-time charges included, and embeds its records', async () => {
    const c = await customer(t.h)
    const p = await plan(t.h, {
      prices: [
        fixedPrice('20', { display_name: 'Platform fee' }),
        usagePrice(meterId, '0.002'),
        fixedPrice('99', { billing_period: 'ONETIME', display_name: 'Setup' }),
        fixedPrice('200', { billing_period: 'ANNUAL' }),
        fixedPrice('18', { currency: 'EUR' }),
      ],
    })
    const res = await subscribe({ customer_id: c.id, plan_id: p.id, metadata: { crm: 'x1' } })
    expect(res.status).toBe(201)
    const sub = res.body
    expect(sub).toMatchObject({
      customer_id: c.id,
      plan_id: p.id,
      currency: 'USD',
      subscription_status: 'active',
      subscription_type: 'standalone',
      billing_cycle: 'anniversary',
      billing_anchor: NOW,
      start_date: NOW,
      current_period_start: NOW,
      current_period_end: '2025-02-15T10:00:00.000Z',
      trial_start: null,
      version: 1,
      customer: { id: c.id, external_id: c.external_id },
      plan: { id: p.id, name: p.name },
      phases: [],
    })
    expect(sub.id).toMatch(/^sub_/)
    expect(sub).not.toHaveProperty('pause_status')
    const lines = sub.line_items.map((l: any) => [l.display_name, l.price_type, l.quantity, l.invoice_cadence, l.billing_period, l.price.amount])
    expect(lines).toEqual([
      ['Platform fee', 'FIXED', '1', 'ADVANCE', 'MONTHLY', '20'],
      [p.name, 'USAGE', '0', 'ARREAR', 'MONTHLY', '0.002'],
      ['Setup', 'FIXED', '1', 'ADVANCE', 'ONETIME', '99'],
    ])
    expect(sub.line_items[1]).toMatchObject({ meter_id: meterId, entity_type: 'plan', entity_id: p.id, start_date: NOW, end_date: null })
    expect(await eventsOf(t.h, sub.id)).toEqual(['subscription.created'])
    const got = await t.h.http('GET', `/v1/subscriptions/${sub.id}`)
    expect(got.body.line_items).toHaveLength(3)
  })

  it('finds the customer by external_customer_id', async () => {
    const c = await customer(t.h)
    const p = await plan(t.h, { prices: [fixedPrice()] })
    const res = await subscribe({ external_customer_id: c.external_id, plan_id: p.id })
    expect(res.status).toBe(201)
    expect(res.body.customer_id).toBe(c.id)
  })

  it('keeps line items as they were when the price later changes or goes', async () => {
    const c = await customer(t.h)
    const p = await plan(t.h, { prices: [fixedPrice('10')] })
    const sub = (await subscribe({ customer_id: c.id, plan_id: p.id })).body
    await t.h.http('DELETE', `/v1/prices/${p.prices[0].id}`)
    const got = await t.h.http('GET', `/v1/subscriptions/${sub.id}`)
    expect(got.body.line_items[0].price).toMatchObject({ amount: '10', billing_model: 'FLAT_FEE' })
  })

  it('refuses a plan without prices in the currency and period, an unknown plan and an unknown customer', async () => {
    const c = await customer(t.h)
    const p = await plan(t.h, { prices: [fixedPrice('10', { currency: 'EUR' })] })
    const none = await rejected({ customer_id: c.id, plan_id: p.id })
    expect([none.status, none.fields]).toEqual([400, ['billing_period']])
    expect((await subscribe({ customer_id: c.id, plan_id: 'plan_nope' })).status).toBe(404)
    const noCustomer = await subscribe({ customer_id: 'cus_nope', plan_id: p.id, currency: 'EUR' })
    expect([noCustomer.status, noCustomer.body.details.customer_id]).toEqual([404, 'cus_nope'])
    const neither = await rejected({ plan_id: p.id, currency: 'EUR' })
    expect(neither.fields).toEqual(['customer_id'])
  })

  it('lets a plan without prices (entitlements only) be subscribed to', async () => {
    const c = await customer(t.h)
    const p = await plan(t.h)
    const res = await subscribe({ customer_id: c.id, plan_id: p.id })
    expect(res.status).toBe(201)
    expect(res.body.line_items).toEqual([])
  })

  it("refuses another tenant's customer and plan", async () => {
    const mine = await customer(t.h)
    const theirs = await customer(t.h, {}, t.other)
    const myPlan = await plan(t.h, { prices: [fixedPrice()] })
    const theirPlan = await plan(t.h, { prices: [fixedPrice()] }, t.other)
    expect((await subscribe({ customer_id: theirs.id, plan_id: myPlan.id })).status).toBe(404)
    expect((await subscribe({ customer_id: mine.id, plan_id: theirPlan.id })).status).toBe(404)
  })
})

describe('rule 1: trial_period_days or explicit trial dates, not both', () => {
  it('refuses both, naming both fields', async () => {
    const [c, p] = await Promise.all([customer(t.h), plan(t.h, { prices: [fixedPrice()] })])
    const r = await rejected({ customer_id: c.id, plan_id: p.id, trial_period_days: 7, trial_end: '2025-01-25T00:00:00Z' })
    expect([r.status, r.body.code, r.fields]).toEqual([400, 'validation_error', ['trial_period_days', 'trial_end']])
    const r2 = await rejected({ customer_id: c.id, plan_id: p.id, trial_period_days: 7, trial_start: NOW, trial_end: '2025-01-25T00:00:00Z' })
    expect(r2.fields).toEqual(['trial_period_days', 'trial_start'])
  })

  it('accepts explicit trial dates alone', async () => {
    const [c, p] = await Promise.all([customer(t.h), plan(t.h, { prices: [fixedPrice()] })])
    const res = await subscribe({ customer_id: c.id, plan_id: p.id, trial_end: '2025-01-25T00:00:00Z' })
    expect(res.body).toMatchObject({
      subscription_status: 'trialing',
      trial_start: NOW,
      trial_end: '2025-01-25T00:00:00.000Z',
      current_period_start: NOW,
      current_period_end: '2025-01-25T00:00:00.000Z',
      billing_anchor: '2025-01-25T00:00:00.000Z',
    })
  })

  it.each([[-1], [1.5], ['7']])('refuses trial_period_days %j: a non-negative integer', async (days) => {
    const [c, p] = await Promise.all([customer(t.h), plan(t.h, { prices: [fixedPrice()] })])
    const r = await rejected({ customer_id: c.id, plan_id: p.id, trial_period_days: days })
    expect([r.status, r.fields]).toEqual([400, ['trial_period_days']])
  })
})

describe("rule 2: without trial_period_days the trial comes from the plan's recurring fixed prices", () => {
  it('takes an agreed trial length and bills from its end', async () => {
    const c = await customer(t.h)
    const p = await plan(t.h, { prices: [fixedPrice('10', { trial_period_days: 14 }), fixedPrice('5', { trial_period_days: 14 }), usagePrice(meterId)] })
    const res = await subscribe({ customer_id: c.id, plan_id: p.id })
    expect(res.body).toMatchObject({
      subscription_status: 'trialing',
      trial_start: NOW,
      trial_end: '2025-01-29T10:00:00.000Z',
      current_period_end: '2025-01-29T10:00:00.000Z',
      billing_anchor: '2025-01-29T10:00:00.000Z',
    })
  })

  it('refuses prices that disagree, naming the prices, unless trial_period_days settles it', async () => {
    const c = await customer(t.h)
    const p = await plan(t.h, { prices: [fixedPrice('10', { trial_period_days: 14 }), fixedPrice('5', { trial_period_days: 7 })] })
    const r = await rejected({ customer_id: c.id, plan_id: p.id })
    expect(r.status).toBe(400)
    expect(r.body.details).toEqual({ trial_period_days: expect.any(String), price_ids: p.prices.map((x: any) => x.id) })
    const settled = await subscribe({ customer_id: c.id, plan_id: p.id, trial_period_days: 0 })
    expect(settled.body).toMatchObject({ subscription_status: 'active', trial_end: null })
  })
})

describe('rule 3: billing_anchor only with anniversary billing', () => {
  it('refuses an anchor with calendar billing', async () => {
    const [c, p] = await Promise.all([customer(t.h), plan(t.h, { prices: [fixedPrice()] })])
    const r = await rejected({ customer_id: c.id, plan_id: p.id, billing_cycle: 'calendar', billing_anchor: '2025-01-20T00:00:00Z' })
    expect([r.status, r.fields]).toEqual([400, ['billing_anchor']])
  })

  it('bills anniversary periods from the anchor, with a short first period', async () => {
    const [c, p] = await Promise.all([customer(t.h), plan(t.h, { prices: [fixedPrice()] })])
    const res = await subscribe({ customer_id: c.id, plan_id: p.id, billing_anchor: '2025-01-31T00:00:00Z' })
    expect(res.body).toMatchObject({ current_period_start: NOW, current_period_end: '2025-01-31T00:00:00.000Z', billing_anchor: '2025-01-31T00:00:00.000Z' })
  })

  it('bills calendar periods from the month start, in the customer time zone', async () => {
    const [c, p] = await Promise.all([customer(t.h), plan(t.h, { prices: [fixedPrice()] })])
    const utc = await subscribe({ customer_id: c.id, plan_id: p.id, billing_cycle: 'calendar' })
    expect(utc.body).toMatchObject({ billing_anchor: '2025-01-01T00:00:00.000Z', current_period_end: '2025-02-01T00:00:00.000Z' })
    const tokyo = await subscribe({ customer_id: c.id, plan_id: p.id, billing_cycle: 'calendar', customer_timezone: 'Asia/Tokyo' })
    expect(tokyo.body).toMatchObject({ customer_timezone: 'Asia/Tokyo', current_period_end: '2025-01-31T15:00:00.000Z' })
    const bad = await rejected({ customer_id: c.id, plan_id: p.id, customer_timezone: 'Mars/Olympus' })
    expect(bad.fields).toEqual(['customer_timezone'])
  })
})

describe('rule 5: auto_invoice_threshold', () => {
  let c: any
  let usagePlan: any
  beforeAll(async () => {
    c = await customer(t.h)
    usagePlan = await plan(t.h, { prices: [usagePrice(meterId), fixedPrice('50', { billing_period: 'ONETIME' })] })
  })

  it('is accepted at zero or more on a standalone subscription to a usage-based plan', async () => {
    const res = await subscribe({ customer_id: c.id, plan_id: usagePlan.id, auto_invoice_threshold: '250.50' })
    expect(res.status).toBe(201)
    expect(res.body.auto_invoice_threshold).toBe('250.5')
    expect((await subscribe({ customer_id: c.id, plan_id: usagePlan.id, auto_invoice_threshold: '0' })).status).toBe(201)
  })

  it('is refused below zero', async () => {
    const r = await rejected({ customer_id: c.id, plan_id: usagePlan.id, auto_invoice_threshold: '-1' })
    expect([r.status, r.fields, r.body.details.auto_invoice_threshold]).toEqual([400, ['auto_invoice_threshold'], 'must be zero or greater'])
  })

  it('is refused on a plan with a recurring fixed price', async () => {
    const p = await plan(t.h, { prices: [usagePrice(meterId), fixedPrice('10')] })
    const r = await rejected({ customer_id: c.id, plan_id: p.id, auto_invoice_threshold: '10' })
    expect([r.status, r.fields]).toEqual([400, ['auto_invoice_threshold']])
    expect(r.body.details.auto_invoice_threshold).toContain(p.prices[1].id)
  })

  it('is refused for inherited and delegated-invoicing subscriptions', async () => {
    const parent = (await subscribe({ customer_id: c.id, plan_id: usagePlan.id })).body
    const child = await customer(t.h)
    const inherited = await rejected({ customer_id: child.id, plan_id: usagePlan.id, parent_subscription_id: parent.id, auto_invoice_threshold: '10' })
    expect([inherited.status, inherited.fields]).toEqual([400, ['auto_invoice_threshold']])
    expect(inherited.body.details.auto_invoice_threshold).toContain('inherited')
    const payer = await customer(t.h)
    const delegated = await rejected({ customer_id: child.id, plan_id: usagePlan.id, invoicing_customer_id: payer.id, auto_invoice_threshold: '10' })
    expect([delegated.status, delegated.fields]).toEqual([400, ['auto_invoice_threshold']])
    expect(delegated.body.details.auto_invoice_threshold).toContain('delegated_invoicing')
  })
})

describe('status and relationships', () => {
  it('is not yet active before a future start_date', async () => {
    const [c, p] = await Promise.all([customer(t.h), plan(t.h, { prices: [fixedPrice()] })])
    const res = await subscribe({ customer_id: c.id, plan_id: p.id, start_date: '2025-03-31T00:00:00Z' })
    expect(res.body).toMatchObject({ subscription_status: 'not_started', current_period_start: '2025-03-31T00:00:00.000Z', current_period_end: '2025-04-30T00:00:00.000Z' })
  })

  it('starts in the past at the period holding now', async () => {
    const [c, p] = await Promise.all([customer(t.h), plan(t.h, { prices: [fixedPrice()] })])
    const res = await subscribe({ customer_id: c.id, plan_id: p.id, start_date: '2024-10-31T00:00:00Z' })
    expect(res.body).toMatchObject({ subscription_status: 'active', current_period_start: '2024-12-31T00:00:00.000Z', current_period_end: '2025-01-31T00:00:00.000Z' })
  })

  it('waits incomplete for a first payment when told to', async () => {
    const [c, p] = await Promise.all([customer(t.h), plan(t.h, { prices: [fixedPrice()] })])
    const res = await subscribe({ customer_id: c.id, plan_id: p.id, payment_behavior: 'default_incomplete' })
    expect(res.body.subscription_status).toBe('incomplete')
    const manual = await subscribe({ customer_id: c.id, plan_id: p.id, payment_behavior: 'default_incomplete', collection_method: 'send_invoice' })
    expect(manual.body.subscription_status).toBe('active')
  })

  it('refuses an end_date before the start or in the past', async () => {
    const [c, p] = await Promise.all([customer(t.h), plan(t.h, { prices: [fixedPrice()] })])
    expect((await rejected({ customer_id: c.id, plan_id: p.id, start_date: '2025-02-01T00:00:00Z', end_date: '2025-01-20T00:00:00Z' })).fields).toEqual(['end_date'])
    expect((await rejected({ customer_id: c.id, plan_id: p.id, start_date: '2024-01-01T00:00:00Z', end_date: '2024-06-01T00:00:00Z' })).fields).toEqual(['end_date'])
  })

  it('makes a delegated-invoicing subscription when another customer pays', async () => {
    const [c, payer, p] = await Promise.all([customer(t.h), customer(t.h), plan(t.h, { prices: [fixedPrice()] })])
    const res = await subscribe({ customer_id: c.id, plan_id: p.id, invoicing_customer_id: payer.id })
    expect(res.body).toMatchObject({ subscription_type: 'delegated_invoicing', invoicing_customer_id: payer.id })
  })

  it('groups existing standalone subscriptions under a new parent, and refuses ones that cannot be', async () => {
    const [c, p] = await Promise.all([customer(t.h), plan(t.h, { prices: [fixedPrice()] })])
    const a = (await subscribe({ customer_id: c.id, plan_id: p.id })).body
    const b = (await subscribe({ customer_id: c.id, plan_id: p.id })).body
    const parent = await subscribe({ customer_id: c.id, plan_id: p.id, inheritance: { subscriptions_ids_for_grouped_invoicing: [a.id, b.id] } })
    expect(parent.body.subscription_type).toBe('parent')
    for (const child of [a, b]) {
      expect((await t.h.http('GET', `/v1/subscriptions/${child.id}`)).body).toMatchObject({ subscription_type: 'grouped_invoicing', parent_subscription_id: parent.body.id, version: 2 })
      expect(await eventsOf(t.h, child.id)).toEqual(['subscription.created', 'subscription.updated'])
    }
    const again = await rejected({ customer_id: c.id, plan_id: p.id, inheritance: { subscriptions_ids_for_grouped_invoicing: [a.id] } })
    expect(again.fields).toEqual(['inheritance.subscriptions_ids_for_grouped_invoicing'])
    const eur = await plan(t.h, { prices: [fixedPrice('1', { currency: 'EUR' })] })
    const mixed = await rejected({ customer_id: c.id, plan_id: eur.id, currency: 'EUR', inheritance: { subscriptions_ids_for_grouped_invoicing: [(await subscribe({ customer_id: c.id, plan_id: p.id })).body.id] } })
    expect(mixed.fields).toEqual(['inheritance.subscriptions_ids_for_grouped_invoicing'])
  })

  it('makes an inherited child of a parent subscription', async () => {
    const [c, child, p] = await Promise.all([customer(t.h), customer(t.h), plan(t.h, { prices: [fixedPrice()] })])
    const parent = (await subscribe({ customer_id: c.id, plan_id: p.id })).body
    const res = await subscribe({ customer_id: child.id, plan_id: p.id, parent_subscription_id: parent.id })
    expect(res.body).toMatchObject({ subscription_type: 'inherited', parent_subscription_id: parent.id })
    expect((await t.h.http('GET', `/v1/subscriptions/${parent.id}`)).body.subscription_type).toBe('parent')
    const nested = await rejected({ customer_id: child.id, plan_id: p.id, parent_subscription_id: res.body.id })
    expect(nested.fields).toEqual(['parent_subscription_id'])
  })

  it('adds addons with their prices as line items', async () => {
    const [c, p, f] = await Promise.all([customer(t.h), plan(t.h, { prices: [fixedPrice('10')] }), feature(t.h, 'boolean')])
    const addon = await created(t.h, '/v1/addons', { name: 'Priority', lookup_key: unique('addon'), prices: [fixedPrice('4')], entitlements: [{ feature_id: f.id }] })
    const res = await subscribe({ customer_id: c.id, plan_id: p.id, addons: [{ addon_id: addon.id, quantity: 2 }] })
    expect(res.body.addons).toMatchObject([{ addon_id: addon.id, quantity: 2, start_date: NOW }])
    expect(res.body.line_items.map((l: any) => [l.entity_type, l.price.amount, l.addon_association_id])).toEqual([
      ['plan', '10', null],
      ['addon', '4', res.body.addons[0].id],
    ])
  })

  it('creates phases with their own line items, checked for order', async () => {
    const [c, p, extra] = await Promise.all([customer(t.h), plan(t.h, { prices: [fixedPrice('10')] }), plan(t.h, { prices: [fixedPrice('500', { billing_period: 'ONETIME' })] })])
    const res = await subscribe({
      customer_id: c.id,
      plan_id: p.id,
      phases: [
        { start_date: NOW, end_date: '2025-04-15T10:00:00Z', line_items: [{ price_id: extra.prices[0].id }] },
        { start_date: '2025-04-15T10:00:00Z', metadata: { stage: 'ga' } },
      ],
    })
    expect(res.status).toBe(201)
    expect(res.body.phases.map((x: any) => [x.start_date, x.end_date])).toEqual([
      [NOW, '2025-04-15T10:00:00.000Z'],
      ['2025-04-15T10:00:00.000Z', null],
    ])
    const phaseLine = res.body.line_items.find((l: any) => l.subscription_phase_id)
    expect(phaseLine).toMatchObject({ subscription_phase_id: res.body.phases[0].id, end_date: '2025-04-15T10:00:00.000Z', price_id: extra.prices[0].id })
    for (const phase of res.body.phases) expect(await eventsOf(t.h, phase.id)).toEqual(['subscription.phase.created'])
    const overlap = await rejected({ customer_id: c.id, plan_id: p.id, phases: [{ start_date: NOW, end_date: '2025-05-01T00:00:00Z' }, { start_date: '2025-04-01T00:00:00Z' }] })
    expect(overlap.fields).toEqual(['phases[0].end_date'])
  })
})

describe('reading subscriptions', () => {
  it("lists a customer's subscriptions and filters by status and plan", async () => {
    const [c, p] = await Promise.all([customer(t.h), plan(t.h, { prices: [fixedPrice()] })])
    const a = (await subscribe({ customer_id: c.id, plan_id: p.id })).body
    const b = (await subscribe({ customer_id: c.id, plan_id: p.id, start_date: '2025-06-01T00:00:00Z' })).body
    const all = await t.h.http('GET', `/v1/customers/${c.id}/subscriptions?order=asc`)
    expect(all.body.items.map((s: any) => s.id)).toEqual([a.id, b.id])
    expect(all.body.items[0]).toMatchObject({ customer: { id: c.id }, plan: { id: p.id } })
    const notStarted = await t.h.http('GET', `/v1/subscriptions?customer_id=${c.id}&subscription_status=not_started`)
    expect(notStarted.body.items.map((s: any) => s.id)).toEqual([b.id])
    const search = await t.h.http('POST', '/v1/subscriptions/search', { body: { plan_ids: [p.id], subscription_status: ['active', 'trialing'] } })
    expect(search.body.items.map((s: any) => s.id)).toEqual([a.id])
    expect((await t.h.http('GET', '/v1/customers/cus_nope/subscriptions')).status).toBe(404)
  })

  it('searches line items by subscription, price, type and dates', async () => {
    const [c, p] = await Promise.all([customer(t.h), plan(t.h, { prices: [fixedPrice('10'), usagePrice(meterId)] })])
    const sub = (await subscribe({ customer_id: c.id, plan_id: p.id })).body
    const usage = await t.h.http('POST', '/v1/subscriptions/lineitems/search', { body: { subscription_ids: [sub.id], price_type: 'USAGE' } })
    expect(usage.body.items.map((l: any) => l.price_id)).toEqual([p.prices[1].id])
    const byPrice = await t.h.http('POST', '/v1/subscriptions/lineitems/search', { body: { price_ids: [p.prices[0].id], start_date_gte: NOW, active_at: '2025-02-01T00:00:00Z' } })
    expect(byPrice.body.items.map((l: any) => l.subscription_id)).toEqual([sub.id])
    const before = await t.h.http('POST', '/v1/subscriptions/lineitems/search', { body: { subscription_ids: [sub.id], active_at: '2025-01-01T00:00:00Z' } })
    expect(before.body.items).toEqual([])
  })

  it('updates labels with a version; concurrent updates from one version give version_conflict', async () => {
    const [c, p] = await Promise.all([customer(t.h), plan(t.h, { prices: [fixedPrice()] })])
    const sub = (await subscribe({ customer_id: c.id, plan_id: p.id })).body
    const results = await Promise.all(['a', 'b'].map((v) => t.h.http('PUT', `/v1/subscriptions/${sub.id}`, { body: { metadata: { v }, version: 1 } })))
    expect(results.map((r) => r.status).sort()).toEqual([200, 409])
    expect(results.find((r) => r.status === 409)!.body.code).toBe('version_conflict')
    const billing = await t.h.http('PUT', `/v1/subscriptions/${sub.id}`, { body: { plan_id: 'plan_other' } })
    expect(billing.status).toBe(400)
  })

  it("answers 404 for another tenant's subscription on every route", async () => {
    const [c, p] = await Promise.all([customer(t.h), plan(t.h, { prices: [fixedPrice()] })])
    const sub = (await subscribe({ customer_id: c.id, plan_id: p.id })).body
    const routes: [string, string, unknown?][] = [
      ['GET', `/v1/subscriptions/${sub.id}`],
      ['PUT', `/v1/subscriptions/${sub.id}`, { metadata: {} }],
      ['POST', `/v1/subscriptions/${sub.id}/cancel`, { cancellation_type: 'immediate' }],
      ['GET', `/v1/customers/${c.id}/subscriptions`],
    ]
    for (const [method, path, body] of routes) {
      expect((await t.h.http(method, path, { body, key: t.other })).status, `${method} ${path}`).toBe(404)
    }
    expect((await t.h.http('POST', '/v1/subscriptions/search', { body: { subscription_ids: [sub.id] }, key: t.other })).body.items).toEqual([])
    expect((await t.h.http('POST', '/v1/subscriptions/lineitems/search', { body: { subscription_ids: [sub.id] }, key: t.other })).body.items).toEqual([])
    const theirs = await customer(t.h, {}, t.other)
    const theirPlan = await plan(t.h, { prices: [fixedPrice()] }, t.other)
    const grouped = await subscribe({ customer_id: theirs.id, plan_id: theirPlan.id, inheritance: { subscriptions_ids_for_grouped_invoicing: [sub.id] } }, t.other)
    expect(grouped.status).toBe(404)
    expect((await t.h.http('GET', `/v1/subscriptions/${sub.id}`)).body).toMatchObject({ subscription_status: 'active', version: 1 })
  })
})
