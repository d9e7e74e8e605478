// The entitlement check through HTTP, direct mode, fixed calendar: a hard limit counts stored usage, usage
// accepted but not yet stored, and reservations (30 reserving checks at once against 10 left → exactly 10);
// soft limits pass; the spending limit refuses once accrued charges plus holds reach it, announced once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../../core/clock.ts'
import { created, customer, eventsOf, plan, subscribed, unique, usagePrice } from '../../../test/catalog.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { readyMeter, send } from '../../../test/usage-helpers.ts'
import { call, newWallet, topUp } from '../../../test/wallets.ts'
import { meterUsageOverRanges } from '../../usage/queries/service.ts'

const clock = fixedClock('2025-03-10T00:00:00Z')
let h: Harness
let calls: { id: string; event: string; meterId: string }
let flag: any
let cus: any
let sub: any

async function meteredFeature(lookupKey?: string) {
  const event = unique('api.call')
  const meterId = await readyMeter(h, { name: event, event_name: event, aggregation: { type: 'COUNT' } })
  const f = await created(h, '/v1/features', { name: event, type: 'metered', meter_id: meterId, lookup_key: lookupKey })
  return { id: f.id as string, event, meterId }
}

beforeAll(async () => {
  h = await startHarness({ clock, env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0', RATE_LIMIT_PER_SECOND: '100000' } })
  calls = await meteredFeature('calls')
  flag = await created(h, '/v1/features', { name: unique('flag'), type: 'boolean' })
  const p = await plan(h, {
    prices: [usagePrice(calls.meterId, '0.01')],
    entitlements: [{ feature_id: calls.id, usage_limit: 10, usage_reset_period: 'MONTHLY', is_soft_limit: false }],
  })
  cus = await customer(h)
  sub = await subscribed(h, { customer_id: cus.id, plan_id: p.id, start_date: '2025-03-01T00:00:00Z' })
})
afterAll(() => h?.stop())

const check = (body: Record<string, unknown>, customerId = cus.id) => call(h, 'POST', `/v1/customers/${customerId}/entitlements/check`, body)
const events = (n: number, c: { external_id: string }, name: string) =>
  Array.from({ length: n }, () => ({ id: unique('evt'), at: '2025-03-05T00:00:00Z', customer: c.external_id, name }))

describe('a hard limit of 10', () => {
  it('counts stored usage: 7 used, 3 left', async () => {
    await send(h, events(7, cus, calls.event), { customer: cus.external_id, name: calls.event })
    expect(await check({ feature_id: calls.id, quantity: 3 })).toMatchObject({ allowed: true, remaining: '3', limit: 10, reason: null, usage: { stored: '7', reserved: '0' } })
    expect(await check({ feature_lookup_key: 'calls', quantity: 4 })).toMatchObject({ allowed: false, remaining: '3', reason: 'usage_limit_exceeded' })
  })

  it('counts events accepted a moment ago, before they are stored', async () => {
    // Answered once in the event log; the check sees them though the insert may not have run yet.
    const res = await h.http('POST', '/v1/events/bulk', { body: { events: events(2, cus, calls.event).map((e) => ({ event_id: e.id, timestamp: e.at, event_name: calls.event, external_customer_id: cus.external_id })) } })
    expect(res.status).toBe(202)
    expect(await check({ feature_id: calls.id, quantity: 2 })).toMatchObject({ allowed: false, remaining: '1', usage: { stored: '9' } })
  })

  it('reserves exactly what is left when 30 reserving checks race for 1 left', async () => {
    const answers = await Promise.all(Array.from({ length: 30 }, () => check({ feature_id: calls.id, quantity: 1, reserve: true })))
    const reserved = answers.filter((a) => a.allowed)
    expect(reserved.length).toBe(1)
    expect(reserved[0]).toMatchObject({ remaining: '0', reservation: { quantity: '1', expires_at: '2025-03-10T00:05:00.000Z' } })
    expect(await check({ feature_id: calls.id, quantity: 1 })).toMatchObject({ allowed: false, remaining: '0', usage: { reserved: '1' } })
    // Released (or expired), it no longer counts.
    expect(await call(h, 'POST', `/v1/entitlements/reservations/${reserved[0].reservation.id}/release`)).toMatchObject({ status: 'released' })
    expect(await check({ feature_id: calls.id, quantity: 1 })).toMatchObject({ allowed: true, remaining: '1' })
    await check({ feature_id: calls.id, quantity: 1, reserve: true, reservation_expires_in_seconds: 60 })
    clock.set('2025-03-10T00:01:00Z')
    expect(await check({ feature_id: calls.id, quantity: 1 })).toMatchObject({ allowed: true, usage: { reserved: '0' } })
  })

  it('refuses a feature the customer is not granted', async () => {
    expect(await check({ feature_id: flag.id, quantity: 1 })).toMatchObject({ allowed: false, reason: 'feature_not_entitled', limit: null })
  })
})

describe('customers on their own periods, checked at once', () => {
  // Their checks' usage reads are answered together (one query for the meter, each customer over its own period).
  // Each customer sends the same 5 events: Feb 20, Mar 2, Mar 7 06:00, Mar 7 07:00, Mar 9 (the clock is Mar 10).
  const at = ['2025-02-20T00:00:00Z', '2025-03-02T00:00:00Z', '2025-03-07T06:00:00Z', '2025-03-07T07:00:00Z', '2025-03-09T00:00:00Z']
  // Current periods: from Mar 1 (4 of them), from Feb 15 12:00 (all 5), from Mar 7 06:30 (the last 2).
  const starts = ['2025-03-01T00:00:00Z', '2025-02-15T12:00:00Z', '2025-03-07T06:30:00Z']
  const expected = ['4', '5', '2']

  // For MAX the events carry n = 5, 4, 3, 2, 1 in time order: the largest in each period is again 4, 5 and 2.
  it.each([
    ['COUNT (one query for all periods)', { type: 'COUNT' }],
    ['MAX (not additive: a query per period)', { type: 'MAX', field: 'n' }],
  ])('%s: each counts the events of its own period', async (_label, aggregation) => {
    const event = unique('periods')
    const meterId = await readyMeter(h, { name: event, event_name: event, aggregation })
    const f = await created(h, '/v1/features', { name: event, type: 'metered', meter_id: meterId })
    const p = await plan(h, { prices: [usagePrice(meterId, '0.01')], entitlements: [{ feature_id: f.id, usage_limit: 100, usage_reset_period: 'MONTHLY', is_soft_limit: false }] })
    const customers = []
    const ranges = []
    for (const start of starts) {
      const c = await customer(h)
      const s = await subscribed(h, { customer_id: c.id, plan_id: p.id, start_date: start })
      ranges.push({ externalCustomerId: c.external_id, start: new Date(s.current_period_start), end: new Date(s.current_period_end) })
      await send(h, at.map((t, i) => ({ id: unique('evt'), at: t, props: { n: 5 - i } })), { customer: c.external_id, name: event })
      customers.push(c)
    }
    const answers = await Promise.all(customers.map((c) => check({ feature_id: f.id, quantity: 1 }, c.id)))
    expect(answers.map((a) => a.usage.stored)).toEqual(expected)
    // The same read straight, certainly as one batch.
    const scope = { tenantId: h.tenant.tenantId, environmentId: h.tenant.environments.production }
    expect((await meterUsageOverRanges(h.running.deps, scope, meterId, ranges)).map((v) => v.toFixed())).toEqual(expected)
  })
})

describe('the spending limit', () => {
  it('refuses once accrued charges plus holds reach it, announced once a period', async () => {
    const free = await meteredFeature()
    const p = await plan(h, { prices: [usagePrice(free.meterId, '0.01')], entitlements: [{ feature_id: free.id, usage_limit: 1000, is_soft_limit: true, usage_reset_period: 'MONTHLY' }] })
    const c = await customer(h)
    const s = await subscribed(h, { customer_id: c.id, plan_id: p.id, start_date: '2025-03-01T00:00:00Z' })
    await send(h, events(3, c, free.event), { customer: c.external_id, name: free.event })
    expect(await call(h, 'PUT', `/v1/subscriptions/${s.id}/spending-limit`, { spending_limit: '1.00' })).toMatchObject({ spending_limit: '1', accrued_charges: '0.03', held: '0', reached: false })
    expect(await check({ feature_id: free.id, quantity: 1 }, c.id)).toMatchObject({ allowed: true })
    const wallet = await newWallet(h, c.id)
    await topUp(h, wallet.id, { credits_to_add: '5' })
    const hold = await call(h, 'POST', `/v1/wallets/${wallet.id}/holds`, { amount: '0.97' }, 201)
    // 0.03 accrued + 0.97 held = 1.00: reached.
    for (let i = 0; i < 3; i++) expect(await check({ feature_id: free.id, quantity: 1 }, c.id)).toMatchObject({ allowed: false, reason: 'spending_limit_reached' })
    expect(await eventsOf(h, s.id)).toContain('subscription.spending_limit.reached')
    expect((await eventsOf(h, s.id)).filter((e) => e === 'subscription.spending_limit.reached')).toHaveLength(1)
    await call(h, 'POST', `/v1/wallets/holds/${hold.id}/release`)
    expect(await check({ feature_id: free.id, quantity: 1 }, c.id)).toMatchObject({ allowed: true })
  })
})

describe('bad input', () => {
  it.each([
    [{ feature_id: 'x', quantity: -1 }, 'quantity'],
    [{ quantity: 1 }, 'feature_id'],
    [{ feature_id: 'x' }, 'quantity'],
    [{ feature_id: 'x', quantity: 1, reservation_expires_in_seconds: 86_401 }, 'reservation_expires_in_seconds'],
  ])('%j is refused naming %s', async (body, field) => {
    const res = await h.http('POST', `/v1/customers/${cus.id}/entitlements/check`, { body })
    expect(res.status, JSON.stringify(res.body)).toBe(400)
    expect(JSON.stringify(res.body)).toContain(field)
  })
  it('answers 404 for an unknown customer and a spending limit on an unknown subscription', async () => {
    expect((await h.http('POST', '/v1/customers/cus_nope/entitlements/check', { body: { feature_id: calls.id, quantity: 1 } })).status).toBe(404)
    expect((await h.http('PUT', '/v1/subscriptions/subs_nope/spending-limit', { body: { spending_limit: '1' } })).status).toBe(404)
    expect((await h.http('PUT', `/v1/subscriptions/${sub.id}/spending-limit`, { body: { spending_limit: 'lots' } })).status).toBe(400)
  })
})
