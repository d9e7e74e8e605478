import { beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../../core/clock.ts'
import { customer, eventsOf, fixedPrice, meter, plan, subscribed, twoTenants, usagePrice } from '../../../test/catalog.ts'

// A 31 USD monthly seat from Jan 1: January has 31 days, and "now" leaves 17 of them (Jan 15 to Feb 1).
const NOW = '2025-01-15T10:00:00.000Z'
const START = '2025-01-01T00:00:00Z'
const t = twoTenants({ clock: fixedClock(NOW) })
let seatPlan: any

beforeAll(async () => {
  seatPlan = await plan(t.h, { prices: [fixedPrice('31', { display_name: 'Seat' }), usagePrice((await meter(t.h)).id)] })
})

async function subscription(body: Record<string, unknown> = {}): Promise<any> {
  return subscribed(t.h, { customer_id: (await customer(t.h)).id, plan_id: seatPlan.id, start_date: START, ...body })
}

const cancel = (id: string, body: Record<string, unknown>, key?: string) => t.h.http('POST', `/v1/subscriptions/${id}/cancel`, { body, key })

describe('cancelling (rule 4)', () => {
  it.each([
    ['now', NOW],
    ['the past', '2025-01-10T00:00:00Z'],
  ])('refuses a scheduled cancel_at at %s', async (_name, at) => {
    const sub = await subscription()
    const res = await cancel(sub.id, { cancellation_type: 'scheduled_date', cancel_at: at })
    expect(res.status).toBe(400)
    expect(res.body).toMatchObject({ code: 'validation_error', details: { cancel_at: 'must be in the future' } })
  })

  it('schedules a future cancellation: the subscription stays active until then', async () => {
    const sub = await subscription()
    const res = await cancel(sub.id, { cancellation_type: 'scheduled_date', cancel_at: '2025-03-10T00:00:00Z', reason: 'budget' })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ cancellation_type: 'scheduled_date', effective_date: '2025-03-10T00:00:00.000Z', status: 'active', reason: 'budget' })
    expect(res.body.subscription).toMatchObject({ subscription_status: 'active', cancel_at: '2025-03-10T00:00:00.000Z', cancel_at_period_end: false, version: 2 })
    expect(await eventsOf(t.h, sub.id)).toEqual(['subscription.created', 'subscription.updated'])
  })

  it('requires cancel_at for a scheduled date and refuses it for t.other types', async () => {
    const sub = await subscription()
    expect((await cancel(sub.id, { cancellation_type: 'scheduled_date' })).body.details).toHaveProperty('cancel_at')
    expect((await cancel(sub.id, { cancellation_type: 'immediate', cancel_at: '2025-03-01T00:00:00Z' })).body.details).toHaveProperty('cancel_at')
  })

  it('cancels at the end of the current period', async () => {
    const sub = await subscription()
    const res = await cancel(sub.id, { cancellation_type: 'end_of_period' })
    expect(res.body.subscription).toMatchObject({ cancel_at: '2025-02-01T00:00:00.000Z', cancel_at_period_end: true, subscription_status: 'active' })
  })

  it('cancels now, ends the line items and credits the unused part paid in advance', async () => {
    const sub = await subscription()
    const res = await cancel(sub.id, { cancellation_type: 'immediate', proration_behavior: 'create_prorations' })
    expect(res.body).toMatchObject({ status: 'cancelled', effective_date: NOW, total_credit_amount: '-17.00' })
    expect(res.body.proration_details).toEqual([
      { line_item_id: sub.line_items[0].id, price_id: sub.line_items[0].price_id, description: 'Unused time on Seat from 2025-01-15', amount: '-17.00' },
    ])
    expect(res.body.subscription).toMatchObject({ subscription_status: 'cancelled', cancelled_at: NOW, end_date: NOW })
    expect(res.body.subscription.line_items.every((l: any) => l.end_date === NOW)).toBe(true)
    expect(await eventsOf(t.h, sub.id)).toEqual(['subscription.created', 'subscription.cancelled'])
    const again = await cancel(sub.id, { cancellation_type: 'immediate' })
    expect([again.status, again.body.code]).toEqual([400, 'invalid_operation'])
  })

  it('credits nothing without create_prorations', async () => {
    const res = await cancel((await subscription()).id, { cancellation_type: 'immediate' })
    expect(res.body).toMatchObject({ proration_details: [], total_credit_amount: '0.00' })
  })

  it('lets only one of two concurrent cancellations through', async () => {
    const sub = await subscription()
    const results = await Promise.all([1, 2].map(() => cancel(sub.id, { cancellation_type: 'immediate' })))
    expect(results.map((r) => r.status).sort()).toEqual([200, 400])
    expect(await eventsOf(t.h, sub.id)).toEqual(['subscription.created', 'subscription.cancelled'])
  })

  it('keeps a customer with a live subscription from being deleted until it is cancelled', async () => {
    const sub = await subscription()
    const refused = await t.h.http('DELETE', `/v1/customers/${sub.customer_id}`)
    expect([refused.status, refused.body.code]).toEqual([400, 'invalid_operation'])
    await cancel(sub.id, { cancellation_type: 'immediate' })
    expect((await t.h.http('DELETE', `/v1/customers/${sub.customer_id}`)).status).toBe(204)
    expect((await t.h.http('GET', `/v1/customers/${sub.customer_id}`)).body.status).toBe('deleted')
  })

  it('refuses a stale version', async () => {
    const sub = await subscription()
    await t.h.http('PUT', `/v1/subscriptions/${sub.id}`, { body: { metadata: { a: '1' } } })
    const res = await cancel(sub.id, { cancellation_type: 'end_of_period', version: 1 })
    expect(res.body.code).toBe('version_conflict')
  })

  it('releases grouped children and ends inherited ones with their parent', async () => {
    const grouped = await subscription()
    const parent = await subscription({ inheritance: { subscriptions_ids_for_grouped_invoicing: [grouped.id] } })
    const inherited = await subscription({ parent_subscription_id: parent.id })
    await cancel(parent.id, { cancellation_type: 'immediate' })
    expect((await t.h.http('GET', `/v1/subscriptions/${grouped.id}`)).body).toMatchObject({ subscription_type: 'standalone', parent_subscription_id: null, subscription_status: 'active' })
    expect((await t.h.http('GET', `/v1/subscriptions/${inherited.id}`)).body).toMatchObject({ subscription_status: 'cancelled', cancelled_at: NOW })
  })
})

const modify = (id: string, step: 'preview' | 'execute', body: Record<string, unknown>, key?: string) =>
  t.h.http('POST', `/v1/subscriptions/${id}/modify/${step}`, { body, key })

describe('modifying quantities', () => {
  const seats = (sub: any, quantity: string, extra: Record<string, unknown> = {}) => ({
    type: 'quantity_change',
    quantity_change_params: { line_items: [{ id: sub.line_items[0].id, quantity }], proration_behavior: 'create_prorations', ...extra },
  })

  it('previews the prorated amounts and changes nothing', async () => {
    const sub = await subscription()
    const res = await modify(sub.id, 'preview', seats(sub, '3'))
    expect(res.status).toBe(200)
    expect(res.body.proration).toEqual({
      currency: 'USD',
      total: '34.00',
      lines: [
        { line_item_id: sub.line_items[0].id, price_id: sub.line_items[0].price_id, description: 'Unused time on Seat from 2025-01-15', amount: '-17.00' },
        { line_item_id: sub.line_items[0].id, price_id: sub.line_items[0].price_id, description: 'Remaining time on Seat from 2025-01-15', amount: '51.00' },
      ],
    })
    expect(res.body.changed_resources.line_items).toMatchObject([
      { id: sub.line_items[0].id, quantity: '1', end_date: NOW, change_action: 'ended' },
      { id: null, quantity: '3', start_date: NOW, change_action: 'created' },
    ])
    const after = (await t.h.http('GET', `/v1/subscriptions/${sub.id}`)).body
    expect(after).toMatchObject({ version: 1, line_items: [{ quantity: '1', end_date: null }, { price_type: 'USAGE' }] })
    expect(await eventsOf(t.h, sub.id)).toEqual(['subscription.created'])
  })

  it('executes: ends the old line, starts one with the new quantity, bumps the version', async () => {
    const sub = await subscription()
    const res = await modify(sub.id, 'execute', { ...seats(sub, '3'), version: 1 })
    expect(res.status).toBe(200)
    expect(res.body.proration.total).toBe('34.00')
    const after = res.body.subscription
    expect(after.version).toBe(2)
    const fixed = after.line_items.filter((l: any) => l.price_type === 'FIXED').map((l: any) => [l.quantity, l.start_date, l.end_date])
    expect(fixed).toEqual([
      ['1', '2025-01-01T00:00:00.000Z', NOW],
      ['3', NOW, null],
    ])
    expect(res.body.changed_resources.line_items[1].id).toBe(after.line_items.find((l: any) => l.quantity === '3').id)
    expect(await eventsOf(t.h, sub.id)).toEqual(['subscription.created', 'subscription.updated'])
    const stale = await modify(sub.id, 'execute', { ...seats(after, '4'), version: 1 })
    expect(stale.body.code).toBe('version_conflict')
  })

  it('prorates nothing without create_prorations', async () => {
    const sub = await subscription()
    const res = await modify(sub.id, 'preview', seats(sub, '2', { proration_behavior: 'none' }))
    expect(res.body.proration).toEqual({ currency: 'USD', total: '0.00', lines: [] })
  })

  it.each([
    ['a usage line', (sub: any) => ({ type: 'quantity_change', quantity_change_params: { line_items: [{ id: sub.line_items[1].id, quantity: '2' }] } }), 'quantity_change_params.line_items[0].id'],
    ['an unknown line (not found)', () => ({ type: 'quantity_change', quantity_change_params: { line_items: [{ id: 'subli_nope', quantity: '2' }] } }), 'quantity_change_params.line_items[0].id'],
    ['the same quantity', (sub: any) => ({ type: 'quantity_change', quantity_change_params: { line_items: [{ id: sub.line_items[0].id, quantity: '1' }] } }), 'quantity_change_params.line_items[0].quantity'],
    ['a zero quantity', (sub: any) => ({ type: 'quantity_change', quantity_change_params: { line_items: [{ id: sub.line_items[0].id, quantity: '0' }] } }), 'quantity_change_params.line_items[0].quantity'],
    ['a date after the period', (sub: any) => ({ type: 'quantity_change', quantity_change_params: { line_items: [{ id: sub.line_items[0].id, quantity: '2', effective_date: '2025-02-05T00:00:00Z' }] } }), 'quantity_change_params.line_items[0].effective_date'],
    ['missing params', () => ({ type: 'quantity_change' }), 'quantity_change_params'],
  ])('refuses %s', async (name, body, field) => {
    const sub = await subscription()
    const res = await modify(sub.id, 'preview', body(sub))
    expect(res.status).toBe(name.includes('not found') ? 404 : 400)
    expect(Object.keys(res.body.details)).toContain(field)
  })

  it('refuses to modify a cancelled subscription', async () => {
    const sub = await subscription()
    await cancel(sub.id, { cancellation_type: 'immediate' })
    const res = await modify(sub.id, 'execute', seats(sub, '2'))
    expect([res.status, res.body.code]).toEqual([400, 'invalid_operation'])
  })
})

describe('modifying grouped invoicing', () => {
  it('adds children under a parent and removes them again', async () => {
    const [parent, a, b] = [await subscription(), await subscription(), await subscription()]
    const add = { type: 'grouped_invoicing_add', grouped_invoicing_params: { child_subscription_ids: [a.id, b.id] } }
    const preview = await modify(parent.id, 'preview', add)
    expect(preview.body.changed_resources.subscriptions).toEqual([
      { id: a.id, subscription_type: 'grouped_invoicing', parent_subscription_id: parent.id },
      { id: b.id, subscription_type: 'grouped_invoicing', parent_subscription_id: parent.id },
    ])
    expect((await t.h.http('GET', `/v1/subscriptions/${a.id}`)).body.subscription_type).toBe('standalone')
    const done = await modify(parent.id, 'execute', add)
    expect(done.body.subscription).toMatchObject({ subscription_type: 'parent', version: 2 })
    expect((await t.h.http('GET', `/v1/subscriptions/${a.id}`)).body).toMatchObject({ subscription_type: 'grouped_invoicing', parent_subscription_id: parent.id })
    const again = await modify(parent.id, 'preview', add)
    expect(Object.keys(again.body.details)).toEqual(['grouped_invoicing_params.child_subscription_ids'])

    await modify(parent.id, 'execute', { type: 'grouped_invoicing_remove', grouped_invoicing_params: { child_subscription_ids: [a.id] } })
    expect((await t.h.http('GET', `/v1/subscriptions/${a.id}`)).body).toMatchObject({ subscription_type: 'standalone', parent_subscription_id: null })
    expect((await t.h.http('GET', `/v1/subscriptions/${parent.id}`)).body.subscription_type).toBe('parent')
    const last = await modify(parent.id, 'execute', { type: 'grouped_invoicing_remove', grouped_invoicing_params: { child_subscription_ids: [b.id] } })
    expect(last.body.subscription.subscription_type).toBe('standalone')
    const notGrouped = await modify(parent.id, 'preview', { type: 'grouped_invoicing_remove', grouped_invoicing_params: { child_subscription_ids: [b.id] } })
    expect(notGrouped.status).toBe(400)
  })

  it('refuses to group a subscription under itself', async () => {
    const sub = await subscription()
    const res = await modify(sub.id, 'preview', { type: 'grouped_invoicing_add', grouped_invoicing_params: { child_subscription_ids: [sub.id] } })
    expect(res.status).toBe(400)
  })
})

describe('phases', () => {
  it('adds, moves and deletes phases; their line items follow', async () => {
    const sub = await subscription()
    const onboarding = await plan(t.h, { prices: [fixedPrice('300', { billing_period: 'ONETIME' })] })
    const added = await t.h.http('POST', `/v1/subscriptions/${sub.id}/phases`, {
      body: { start_date: '2025-02-01T00:00:00Z', end_date: '2025-03-01T00:00:00Z', line_items: [{ price_id: onboarding.prices[0].id, quantity: '2' }] },
    })
    expect(added.status).toBe(201)
    expect(added.body.line_items).toMatchObject([{ quantity: '2', start_date: '2025-02-01T00:00:00.000Z', end_date: '2025-03-01T00:00:00.000Z' }])
    const phaseId = added.body.id
    const overlap = await t.h.http('POST', `/v1/subscriptions/${sub.id}/phases`, { body: { start_date: '2025-02-15T00:00:00Z' } })
    expect(overlap.status).toBe(400)
    const moved = await t.h.http('PUT', `/v1/subscriptions/${sub.id}/phases/${phaseId}`, { body: { end_date: '2025-04-01T00:00:00Z', version: 1 } })
    expect(moved.body).toMatchObject({ end_date: '2025-04-01T00:00:00.000Z', version: 2, line_items: [{ end_date: '2025-04-01T00:00:00.000Z' }] })
    const list = await t.h.http('GET', `/v1/subscriptions/${sub.id}/phases`)
    expect(list.body.items.map((p: any) => p.id)).toEqual([phaseId])
    const deleted = await t.h.http('DELETE', `/v1/subscriptions/${sub.id}/phases/${phaseId}`)
    expect(deleted.body.status).toBe('deleted')
    expect((await t.h.http('GET', `/v1/subscriptions/${sub.id}`)).body.line_items.some((l: any) => l.subscription_phase_id === phaseId)).toBe(false)
    expect(await eventsOf(t.h, phaseId)).toEqual(['subscription.phase.created', 'subscription.phase.updated', 'subscription.phase.deleted'])
  })

  it('refuses a phase price in another currency and a phase of another subscription', async () => {
    const [sub, otherSub] = [await subscription(), await subscription()]
    const eur = await plan(t.h, { prices: [fixedPrice('1', { currency: 'EUR' })] })
    const res = await t.h.http('POST', `/v1/subscriptions/${sub.id}/phases`, { body: { start_date: '2025-02-01T00:00:00Z', line_items: [{ price_id: eur.prices[0].id }] } })
    expect(Object.keys(res.body.details)).toEqual(['line_items[0].price_id'])
    const phase = (await t.h.http('POST', `/v1/subscriptions/${otherSub.id}/phases`, { body: { start_date: '2025-02-01T00:00:00Z' } })).body
    expect((await t.h.http('PUT', `/v1/subscriptions/${sub.id}/phases/${phase.id}`, { body: { metadata: {} } })).status).toBe(404)
  })
})

describe('drafts', () => {
  it('creates a draft that is activated later from a new start', async () => {
    const draft = await subscription({ subscription_status: 'draft', start_date: undefined })
    expect(draft).toMatchObject({ subscription_status: 'draft', start_date: NOW })
    expect(await eventsOf(t.h, draft.id)).toEqual(['subscription.draft.created'])
    const res = await t.h.http('POST', `/v1/subscriptions/${draft.id}/activate`, { body: { start_date: '2025-01-20T00:00:00Z' } })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({
      subscription_status: 'not_started',
      start_date: '2025-01-20T00:00:00.000Z',
      billing_anchor: '2025-01-20T00:00:00.000Z',
      current_period_end: '2025-02-20T00:00:00.000Z',
      version: 2,
    })
    expect(res.body.line_items.every((l: any) => l.start_date === '2025-01-20T00:00:00.000Z')).toBe(true)
    expect(await eventsOf(t.h, draft.id)).toEqual(['subscription.draft.created', 'subscription.activated'])
    const again = await t.h.http('POST', `/v1/subscriptions/${draft.id}/activate`, { body: {} })
    expect([again.status, again.body.code]).toEqual([400, 'invalid_operation'])
  })

  it('activates now by default', async () => {
    const draft = await subscription({ subscription_status: 'draft' })
    const res = await t.h.http('POST', `/v1/subscriptions/${draft.id}/activate`, { body: {} })
    expect(res.body).toMatchObject({ subscription_status: 'active', start_date: NOW, current_period_end: '2025-02-15T10:00:00.000Z' })
  })

  it('refuses a draft that would take over other subscriptions', async () => {
    const child = await subscription()
    const res = await t.h.http('POST', '/v1/subscriptions', {
      body: { customer_id: child.customer_id, plan_id: seatPlan.id, currency: 'USD', billing_period: 'MONTHLY', subscription_status: 'draft', inheritance: { subscriptions_ids_for_grouped_invoicing: [child.id] } },
    })
    expect(Object.keys(res.body.details)).toEqual(['inheritance.subscriptions_ids_for_grouped_invoicing'])
  })
})

describe('isolation', () => {
  it("answers 404 for another tenant's subscription on every change route", async () => {
    const sub = await subscription()
    const phase = (await t.h.http('POST', `/v1/subscriptions/${sub.id}/phases`, { body: { start_date: '2025-02-01T00:00:00Z' } })).body
    const qty = { type: 'quantity_change', quantity_change_params: { line_items: [{ id: sub.line_items[0].id, quantity: '2' }] } }
    const routes: [string, string, unknown?][] = [
      ['POST', `/v1/subscriptions/${sub.id}/modify/preview`, qty],
      ['POST', `/v1/subscriptions/${sub.id}/modify/execute`, qty],
      ['GET', `/v1/subscriptions/${sub.id}/phases`],
      ['POST', `/v1/subscriptions/${sub.id}/phases`, { start_date: '2025-06-01T00:00:00Z' }],
      ['PUT', `/v1/subscriptions/${sub.id}/phases/${phase.id}`, { metadata: {} }],
      ['DELETE', `/v1/subscriptions/${sub.id}/phases/${phase.id}`],
      ['POST', `/v1/subscriptions/${sub.id}/cancel`, { cancellation_type: 'immediate' }],
      ['POST', `/v1/subscriptions/${sub.id}/activate`, {}],
    ]
    for (const [method, path, body] of routes) {
      expect((await t.h.http(method, path, { body, key: t.other })).status, `${method} ${path}`).toBe(404)
    }
    expect((await t.h.http('GET', `/v1/subscriptions/${sub.id}`)).body).toMatchObject({ version: 1, subscription_status: 'active', phases: [{ id: phase.id }] })
  })

  it('has no pause or resume: 410 saying the spec removed them, the subscription unchanged', async () => {
    const sub = await subscription()
    for (const action of ['pause', 'resume']) {
      const res = await t.h.http('POST', `/v1/subscriptions/${sub.id}/${action}`, { body: {} })
      expect(res.status).toBe(410)
      expect(res.body).toMatchObject({ code: 'invalid_operation', http_status_code: 410 })
    }
    expect((await t.h.http('GET', `/v1/subscriptions/${sub.id}`)).body).toMatchObject({ subscription_status: 'active' })
  })
})
