// Test clocks end to end over HTTP: a sandbox customer on a clock a month ahead of the wall clock goes
// through its trial and two paid months in one advance (invoices, grant, webhooks at the clock's time),
// while the wall clock's jobs — one billing run during the advance — leave it alone and bill the others.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../../test/harness.ts'
import { eventLogOf } from '../../infra/event-log.ts'
import { runBilling } from '../invoicing/invoices/run.ts'
import { advanceSubscriptions } from '../subscriptions/lifecycle.ts'
import { processCreditGrants } from '../credits/grants/service.ts'
import { deliverNew } from '../webhooks/delivery.ts'
import { createServer } from 'node:http'

let h: Harness
let key: string
const T0 = '2027-03-01T00:00:00.000Z'
const day = 86_400_000
const at = (days: number) => new Date(Date.parse(T0) + days * day).toISOString()

const call = async (method: string, path: string, body?: unknown, as = key) => {
  const res = await h.http(method, path, { body, key: as })
  return res
}
const ok = async (method: string, path: string, body?: unknown) => {
  const res = await call(method, path, body)
  expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBeLessThan(300)
  return res.body
}

async function untilReady(id: string) {
  for (let i = 0; i < 600; i++) {
    const clock = await ok('GET', `/v1/test_clocks/${id}`)
    if (clock.status !== 'advancing') return clock
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error('clock still advancing')
}

let plan: string
let meterId: string
let eventName: string

beforeAll(async () => {
  h = await startHarness({ env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0' } })
  const sandbox = await h.http('POST', '/v1/secrets/api/keys', { body: { name: 'sandbox admin', roles: ['admin'], environment_id: h.tenant.environments.sandbox } })
  key = sandbox.body.api_key
  eventName = `calls-${Date.now()}`
  const meter = await ok('POST', '/v1/meters', { name: 'Calls', event_name: eventName, aggregation: { type: 'SUM', field: 'n' } })
  meterId = meter.id
  // Usage reads answer 503 until the meter's backfill is done (under load it outlasts the fixtures below).
  while ((await ok('GET', `/v1/meters/${meterId}`)).ready_revision !== meter.revision) await new Promise((r) => setTimeout(r, 100))
  plan = (
    await ok('POST', '/v1/plans', {
      name: 'Pro',
      prices: [
        { currency: 'USD', type: 'FIXED', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', invoice_cadence: 'ARREAR', amount: '10' },
        { currency: 'USD', type: 'USAGE', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', invoice_cadence: 'ARREAR', amount: '0.5', meter_id: meter.id },
      ],
    })
  ).id
  await ok('POST', '/v1/creditgrants', { name: 'Monthly credits', scope: 'PLAN', plan_id: plan, credits: '3', cadence: 'RECURRING', period: 'MONTHLY', period_count: 1, expiration_type: 'NEVER' })
})
afterAll(() => h?.stop())

describe('test clocks', () => {
  let clock: { id: string; frozen_time: string }
  let customer: { id: string; external_id: string; test_clock_id: string }
  let subscription: string
  let wallCustomer: string

  it('are made in sandbox environments only; customers on one echo it, a clock of another environment is not found', async () => {
    const production = await call('POST', '/v1/test_clocks', { name: 'prod', frozen_time: T0 }, h.key)
    expect(production.status).toBe(400)
    expect(production.body.message).toMatch(/sandbox/)
    clock = await ok('POST', '/v1/test_clocks', { name: 'Trial walk', frozen_time: T0 })
    expect(clock).toMatchObject({ name: 'Trial walk', frozen_time: T0, status: 'ready' })
    customer = await ok('POST', '/v1/customers', { external_id: `clocked-${Date.now()}`, test_clock_id: clock.id })
    expect(customer.test_clock_id).toBe(clock.id)
    const elsewhere = await call('POST', '/v1/customers', { external_id: 'x', test_clock_id: clock.id }, h.key)
    expect(elsewhere.status).toBe(404)
    expect(elsewhere.body.details).toHaveProperty('test_clock_id')
    expect((await call('GET', `/v1/test_clocks/${clock.id}`, undefined, h.key)).status).toBe(404)
    const wall = await ok('POST', '/v1/customers', { external_id: `wall-${Date.now()}` })
    expect(wall.test_clock_id).toBeNull()
    wallCustomer = wall.id
  })

  it("takes the customer's events up to the clock's time, past the wall clock, and refuses later ones", async () => {
    subscription = (await ok('POST', '/v1/subscriptions', { customer_id: customer.id, plan_id: plan, currency: 'USD', billing_period: 'MONTHLY', start_date: T0, trial_period_days: 14 })).id
    await ok('POST', '/v1/subscriptions', { customer_id: wallCustomer, plan_id: plan, currency: 'USD', billing_period: 'MONTHLY', start_date: new Date(Date.now() - 40 * day).toISOString() })
    const accepted = await call('POST', '/v1/events', { event_name: eventName, external_customer_id: customer.external_id, timestamp: T0, properties: { n: 4 } })
    expect(accepted.status).toBe(202)
    const later = await call('POST', '/v1/events', { event_name: eventName, external_customer_id: customer.external_id, timestamp: at(1), properties: { n: 1 } })
    expect(later.status).toBe(400)
    expect(later.body.details.timestamp).toMatch(/test clock/)
  })

  it("is left alone by the wall clock's jobs, which bill the other customers", async () => {
    // A clock behind the wall clock: its customer's subscription has periods the wall clock would bill.
    const behind = await ok('POST', '/v1/test_clocks', { name: 'behind', frozen_time: new Date(Date.now() - 70 * day).toISOString() })
    const late = await ok('POST', '/v1/customers', { external_id: `behind-${Date.now()}`, test_clock_id: behind.id })
    const lateSub = (await ok('POST', '/v1/subscriptions', { customer_id: late.id, plan_id: plan, currency: 'USD', billing_period: 'MONTHLY', start_date: behind.frozen_time })).id
    const deps = h.running.deps
    await advanceSubscriptions(deps)
    await processCreditGrants(deps)
    await runBilling(deps)
    for (const id of [customer.id, late.id]) expect((await ok('GET', `/v1/invoices?customer_id=${id}`)).items).toEqual([])
    // Not rolled on to the wall clock's period: its first period ended a month after the clock's time, before now.
    expect(Date.parse((await ok('GET', `/v1/subscriptions/${lateSub}`)).current_period_end)).toBeLessThan(Date.now())
    const [grants] = await deps.sql`SELECT count(*)::int AS n FROM credit_grant_applications a JOIN subscriptions s ON s.id = a.subscription_id WHERE s.customer_id = ${late.id}`
    expect(grants.n).toBe(0)
    // Subscribed at the clock's time, its trial runs until the clock moves.
    expect((await ok('GET', `/v1/subscriptions/${subscription}`)).subscription_status).toBe('trialing')
    expect((await ok('GET', `/v1/invoices?customer_id=${wallCustomer}`)).items.length).toBeGreaterThan(0)
  })

  it('refuses to go back or more than two years ahead', async () => {
    const back = await call('POST', `/v1/test_clocks/${clock.id}/advance`, { frozen_time: at(-1) })
    expect(back.status).toBe(400)
    expect(back.body.details).toHaveProperty('frozen_time')
    expect((await call('POST', `/v1/test_clocks/${clock.id}/advance`, { frozen_time: at(800) })).status).toBe(400)
  })

  it('runs the trial end, each period end and its invoice, the grants and their webhooks at their instants, while a wall-clock billing run goes on', async () => {
    // Trial to Mar 15, then Mar 15–Apr 15 and Apr 15–May 15 billed in arrears.
    const target = '2027-05-16T00:00:00.000Z'
    const received: { event_type: string; test_clock?: { id: string; frozen_time: string } }[] = []
    const receiver = createServer((req, res) => {
      let body = ''
      req.on('data', (c) => (body += c))
      req.on('end', () => {
        received.push(JSON.parse(body))
        res.end('ok')
      })
    })
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r))
    const port = (receiver.address() as { port: number }).port
    await ok('POST', '/v1/webhooks/endpoints', { url: `http://127.0.0.1:${port}/hooks`, filter_types: ['subscription.activated', 'invoice.update.finalized'] })
    const started = await ok('POST', `/v1/test_clocks/${clock.id}/advance`, { frozen_time: target })
    expect(started.status).toBe('advancing')
    expect(started.status_details.advancing.target_frozen_time).toBe(target)
    const wall = await runBilling(h.running.deps)
    expect(wall.errors).toEqual([])
    const done = await untilReady(clock.id)
    expect(done).toMatchObject({ status: 'ready', frozen_time: target })

    expect((await ok('GET', `/v1/subscriptions/${subscription}`)).subscription_status).toBe('active')
    const invoices = (await ok('GET', `/v1/invoices?customer_id=${customer.id}&sort=period_start&order=asc`)).items
    const paid = invoices.filter((i: { total: string }) => i.total !== '0')
    expect(paid.map((i: { period_start: string; period_end: string }) => [i.period_start, i.period_end])).toEqual([
      [at(14), '2027-04-15T00:00:00.000Z'],
      ['2027-04-15T00:00:00.000Z', '2027-05-15T00:00:00.000Z'],
    ])
    // Finalized after the grace period, by the clock's time.
    expect(paid.every((i: { invoice_status: string }) => i.invoice_status === 'FINALIZED')).toBe(true)

    const wallets = await ok('GET', `/v1/customers/wallets?id=${customer.id}`)
    expect(wallets.length ?? wallets.items?.length).toBeGreaterThan(0)

    const events = await h.running.deps.sql<{ event_type: string; created_at: Date; payload: { test_clock?: { id: string } } }[]>`
      SELECT event_type, created_at, payload FROM webhook_events WHERE payload->'test_clock'->>'id' = ${clock.id} ORDER BY created_at`
    const types = events.map((e) => e.event_type)
    expect(types, types.join()).toEqual(expect.arrayContaining(['subscription.activated', 'subscription.renewal.due', 'invoice.update.finalized', 'invoice.payment.overdue', 'wallet.transaction.created']))
    expect(events.every((e) => e.created_at >= new Date(T0) && e.created_at <= new Date(target))).toBe(true)
    // Delivered as usual by the wall clock's delivery job, stamped with the clock's time.
    await deliverNew(h.running.deps, () => {})
    receiver.close()
    const activated = received.find((e) => e.event_type === 'subscription.activated')
    expect(activated?.test_clock).toEqual({ id: clock.id, frozen_time: at(14) })
    expect(received.filter((e) => e.event_type === 'invoice.update.finalized').length).toBeGreaterThanOrEqual(2)
  })

  it("takes events up to the clock's new time, and usage reads them", async () => {
    const res = await call('POST', '/v1/events', { event_name: eventName, external_customer_id: customer.external_id, timestamp: at(70), properties: { n: 2 } })
    expect(res.status).toBe(202)
    expect(await eventLogOf(h.running.deps)?.settled(30_000)).not.toBe(false)
    const usage = await ok('POST', '/v1/events/usage/meter', { meter_id: meterId, external_customer_id: customer.external_id, start_time: T0, end_time: at(80) })
    // 4 at the clock's start and 2 ahead of the wall clock; the refused one is not there.
    expect(usage.value).toBe('6')
  })

  it("deletes the clock with its customers and all of theirs, for good", async () => {
    const invoice = (await ok('GET', `/v1/invoices?customer_id=${customer.id}`)).items[0].id
    const del = await call('DELETE', `/v1/test_clocks/${clock.id}`, {})
    expect(del.status).toBe(204)
    for (const path of [`/v1/test_clocks/${clock.id}`, `/v1/customers/${customer.id}`, `/v1/subscriptions/${subscription}`, `/v1/invoices/${invoice}`]) {
      expect((await call('GET', path)).status, path).toBe(404)
    }
    const [left] = await h.running.deps.sql`SELECT count(*)::int AS n FROM customers WHERE id = ${customer.id}`
    expect(left.n).toBe(0)
    // The wall clock's customer stays.
    expect((await call('GET', `/v1/customers/${wallCustomer}`)).status).toBe(200)
  })
})
