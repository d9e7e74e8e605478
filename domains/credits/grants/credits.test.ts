// Credit grants through HTTP on a simulated calendar: validation, the plan's grants, missed periods (rule 14)
// applied once each whatever reruns, races or failures, inherited children, cancellation and deletion.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../../core/clock.ts'
import { customer, plan } from '../../../test/catalog.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { call, runNamedJob } from '../../../test/wallets.ts'
import { processCreditGrants } from './service.ts'

const clock = fixedClock('2025-04-20T00:00:00Z')
let h: Harness

beforeAll(async () => {
  h = await startHarness({ clock })
})
afterAll(() => h?.stop())

const ok = (method: string, path: string, body?: unknown, status?: number) => call(h, method, path, body, status)
const grantJob = () => runNamedJob(h, 'credit-grant-applications')
const monthly = (planId: string, extra: Record<string, unknown> = {}) =>
  ok('POST', '/v1/creditgrants', { name: 'Monthly credits', scope: 'PLAN', plan_id: planId, credits: '100', cadence: 'RECURRING', period: 'MONTHLY', expiration_type: 'BILLING_CYCLE', ...extra }, 201)
const subscribe = (body: Record<string, unknown>) => ok('POST', '/v1/subscriptions', { currency: 'USD', billing_period: 'MONTHLY', ...body }, 201)
const walletOf = async (customerId: string) => ok('GET', `/v1/customers/${customerId}/wallets`)
const credits = async (walletId: string) =>
  (await ok('GET', `/v1/wallets/${walletId}/transactions?order=asc&type=credit`)).items.map((t: any) => [t.credit_amount, t.expiry_date, t.transaction_reason])
const applications = async (grantId: string, query = '') =>
  (await ok('GET', `/v1/creditgrants/${grantId}/applications?sort=scheduled_for&order=asc${query}`)).items.map((a: any) => [a.period_start.slice(0, 10), a.application_status, a.application_reason])

describe('credit grant requests', () => {
  it.each([
    ['a PLAN grant without plan_id', { plan_id: undefined }, 'plan_id'],
    ['a SUBSCRIPTION grant without subscription_id', { scope: 'SUBSCRIPTION', start_date: '2025-05-01T00:00:00Z' }, 'subscription_id'],
    ['a RECURRING grant without period', { cadence: 'RECURRING' }, 'period'],
    ['a ONETIME grant with a period', { period: 'MONTHLY' }, 'period'],
    ['zero credits', { credits: '0' }, 'credits'],
    ['credits as a number', { credits: 10 }, 'credits'],
    ['a DURATION expiry without its unit', { expiration_type: 'DURATION', expiration_duration: 30 }, 'expiration_duration_unit'],
    ['BILLING_CYCLE expiry on a ONETIME grant', { expiration_type: 'BILLING_CYCLE' }, 'expiration_type'],
    ['a start_date on a PLAN grant', { start_date: '2025-05-01T00:00:00Z' }, 'start_date'],
    ['an unknown scope', { scope: 'CUSTOMER' }, 'scope'],
  ])('refuses %s, naming the field, and writes nothing', async (_, extra, field) => {
    const p = await plan(h)
    const res = await h.http('POST', '/v1/creditgrants', { body: { name: 'x', scope: 'PLAN', plan_id: p.id, credits: '10', cadence: 'ONETIME', ...extra } })
    expect(res.status, JSON.stringify(res.body)).toBe(400)
    expect(res.body.details).toHaveProperty(field)
    expect((await ok('GET', `/v1/plans/${p.id}/creditgrants`)).items).toEqual([])
  })

  it('answers 404 naming plan_id for a plan that does not exist', async () => {
    const res = await h.http('POST', '/v1/creditgrants', { body: { name: 'x', scope: 'PLAN', plan_id: 'plan_nope', credits: '10', cadence: 'ONETIME' } })
    expect(res.status).toBe(404)
    expect(res.body.details).toHaveProperty('plan_id')
  })

  it("lists a plan's grants, renames one, and deletes it", async () => {
    const p = await plan(h)
    const g = await monthly(p.id, { priority: 1 })
    expect(g).toMatchObject({ scope: 'PLAN', plan_id: p.id, credits: '100', period: 'MONTHLY', period_count: 1, expiration_type: 'BILLING_CYCLE', priority: 1, status: 'published' })
    expect((await ok('GET', `/v1/plans/${p.id}/creditgrants`)).items.map((x: any) => x.id)).toEqual([g.id])
    expect(await ok('PUT', `/v1/creditgrants/${g.id}`, { name: 'Renamed' })).toMatchObject({ name: 'Renamed', credits: '100', version: 2 })
    expect((await h.http('PUT', `/v1/creditgrants/${g.id}`, { body: { credits: '5' } })).status).toBe(400)
    expect(await ok('DELETE', `/v1/creditgrants/${g.id}`)).toMatchObject({ status: 'deleted' })
    expect((await ok('GET', `/v1/plans/${p.id}/creditgrants`)).items).toEqual([])
  })
})

describe('grants over missed periods (rule 14)', () => {
  let p: any
  let g: any
  let c: any
  let sub: any

  it('applies one application per elapsed period, in order, and schedules the next', async () => {
    clock.set('2025-04-20T00:00:00Z')
    p = await plan(h)
    g = await monthly(p.id)
    c = await customer(h)
    sub = await subscribe({ customer_id: c.id, plan_id: p.id, start_date: '2025-01-15T00:00:00Z' })
    expect(await grantJob()).toMatchObject({ scheduled: 5, applied: 4 })
    expect(await applications(g.id)).toEqual([
      ['2025-01-15', 'applied', 'first_time_recurring_credit_grant'],
      ['2025-02-15', 'applied', 'recurring_credit_grant'],
      ['2025-03-15', 'applied', 'recurring_credit_grant'],
      ['2025-04-15', 'applied', 'recurring_credit_grant'],
      ['2025-05-15', 'pending', 'recurring_credit_grant'],
    ])
    const [w] = await walletOf(c.id)
    expect(await credits(w.id)).toEqual([
      ['100', '2025-02-15T00:00:00.000Z', 'FREE_CREDIT_GRANT'],
      ['100', '2025-03-15T00:00:00.000Z', 'FREE_CREDIT_GRANT'],
      ['100', '2025-04-15T00:00:00.000Z', 'FREE_CREDIT_GRANT'],
      ['100', '2025-05-15T00:00:00.000Z', 'FREE_CREDIT_GRANT'],
    ])
    // The three earlier periods landed already expired: only April's credits count.
    expect(await ok('GET', `/v1/wallets/${w.id}`)).toMatchObject({ credit_balance: '100', credits_available_breakdown: { free: '100', purchased: '0' } })
    const upcoming = await ok('GET', `/v1/subscriptions/${sub.id}/grants/upcoming`)
    expect(upcoming.pagination.total).toBe(1)
    expect(upcoming.items[0]).toMatchObject({ credit_grant_id: g.id, application_status: 'pending', scheduled_for: '2025-05-15T00:00:00.000Z', credits: '100' })
  })

  it('applies nothing twice: a rerun and two racing runs add nothing', async () => {
    expect(await grantJob()).toMatchObject({ scheduled: 0, applied: 0 })
    const [a, b] = await Promise.all([processCreditGrants(h.running.deps), processCreditGrants(h.running.deps)])
    expect(a.applied + b.applied + a.scheduled + b.scheduled).toBe(0)
    const [w] = await walletOf(c.id)
    expect(await credits(w.id)).toHaveLength(4)
  })

  it('applies the next period when it comes, with racing runs applying it once', async () => {
    clock.set('2025-05-15T00:00:00Z')
    const [a, b] = await Promise.all([processCreditGrants(h.running.deps), processCreditGrants(h.running.deps)])
    expect(a.applied + b.applied).toBe(1)
    expect((await applications(g.id)).slice(-2)).toEqual([
      ['2025-05-15', 'applied', 'recurring_credit_grant'],
      ['2025-06-15', 'pending', 'recurring_credit_grant'],
    ])
    const [w] = await walletOf(c.id)
    expect(await credits(w.id)).toHaveLength(5)
    expect((await ok('GET', `/v1/wallets/${w.id}`)).credit_balance).toBe('100')
  })

  it('records a failure with its reason, writes no credits for it, and retries on a later run', async () => {
    clock.set('2025-06-15T00:00:00Z')
    const sql = h.running.deps.sql
    // The wallet store refuses writes: a real engine fault, not a mock.
    await sql.unsafe(`CREATE FUNCTION refuse_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'wallet store unavailable'; END $$;
      CREATE TRIGGER refuse_wallet_write BEFORE INSERT ON wallet_transactions FOR EACH ROW EXECUTE FUNCTION refuse_write();`)
    expect(await grantJob()).toMatchObject({ applied: 0, failed: 1 })
    const [failed] = (await ok('GET', `/v1/creditgrants/${g.id}/applications?application_status=failed`)).items
    expect(failed).toMatchObject({ period_start: '2025-06-15T00:00:00.000Z', retry_count: 1, failure_reason: expect.stringContaining('wallet store unavailable') })
    const [w] = await walletOf(c.id)
    expect(await credits(w.id)).toHaveLength(5)
    await sql.unsafe('DROP TRIGGER refuse_wallet_write ON wallet_transactions; DROP FUNCTION refuse_write();')
    // Failed applications are retried on the next run, not again in the same one.
    clock.set('2025-06-15T00:01:00Z')
    expect(await grantJob()).toMatchObject({ applied: 1, failed: 0 })
    expect((await applications(g.id)).find((a: any) => a[0] === '2025-06-15')).toEqual(['2025-06-15', 'applied', 'recurring_credit_grant'])
    expect(await credits(w.id)).toHaveLength(6)
  })

  it('skips the periods after a cancellation and shows nothing upcoming', async () => {
    await ok('POST', `/v1/subscriptions/${sub.id}/cancel`, { cancellation_type: 'immediate' })
    expect((await ok('GET', `/v1/subscriptions/${sub.id}/grants/upcoming`)).items).toEqual([])
    clock.set('2025-07-15T00:00:00Z')
    expect(await grantJob()).toMatchObject({ skipped: 1, applied: 0 })
    expect((await applications(g.id)).slice(-1)).toEqual([['2025-07-15', 'skipped', 'recurring_credit_grant']])
  })
})

describe('grants of inherited child subscriptions', () => {
  it("applies a child's missed periods into the wallet of the customer who pays for it", async () => {
    clock.set('2025-04-20T00:00:00Z')
    const parentPlan = await plan(h)
    const childPlan = await plan(h)
    const g = await monthly(childPlan.id, { credits: '10', expiration_type: 'NEVER' })
    const payer = await customer(h)
    const member = await customer(h)
    const parent = await subscribe({ customer_id: payer.id, plan_id: parentPlan.id, start_date: '2025-02-01T00:00:00Z' })
    await subscribe({ customer_id: member.id, plan_id: childPlan.id, parent_subscription_id: parent.id, start_date: '2025-02-10T00:00:00Z' })
    await grantJob()
    expect((await applications(g.id)).map((a: any) => a.slice(0, 2))).toEqual([
      ['2025-02-10', 'applied'],
      ['2025-03-10', 'applied'],
      ['2025-04-10', 'applied'],
      ['2025-05-10', 'pending'],
    ])
    expect(await walletOf(member.id)).toEqual([])
    const [w] = await walletOf(payer.id)
    expect(w).toMatchObject({ credit_balance: '30', currency: 'USD' })
  })
})

describe('a one-time grant for one subscription', () => {
  it('is upcoming until its start, then applied once with its duration expiry', async () => {
    clock.set('2025-04-20T00:00:00Z')
    const c = await customer(h)
    const sub = await subscribe({ customer_id: c.id, plan_id: (await plan(h)).id })
    const g = await ok('POST', '/v1/creditgrants', {
      name: 'Welcome', scope: 'SUBSCRIPTION', subscription_id: sub.id, credits: '12.5', cadence: 'ONETIME', priority: 0,
      start_date: '2025-05-01T00:00:00Z', expiration_type: 'DURATION', expiration_duration: 30, expiration_duration_unit: 'DAY',
    }, 201)
    await grantJob()
    expect((await ok('GET', `/v1/subscriptions/${sub.id}/grants/upcoming`)).items.map((a: any) => [a.credit_grant_id, a.scheduled_for, a.application_reason])).toEqual([
      [g.id, '2025-05-01T00:00:00.000Z', 'onetime_credit_grant'],
    ])
    clock.set('2025-05-01T00:00:00Z')
    await grantJob()
    await grantJob()
    const [w] = await walletOf(c.id)
    expect(await credits(w.id)).toEqual([['12.5', '2025-05-31T00:00:00.000Z', 'FREE_CREDIT_GRANT']])
    expect((await ok('GET', `/v1/subscriptions/${sub.id}/grants/upcoming`)).items).toEqual([])
  })
})

describe('deleting a grant', () => {
  it('cancels what is not applied yet and keeps what was', async () => {
    clock.set('2025-04-20T00:00:00Z')
    const p = await plan(h)
    const g = await monthly(p.id)
    await subscribe({ customer_id: (await customer(h)).id, plan_id: p.id, start_date: '2025-04-01T00:00:00Z' })
    await grantJob()
    await ok('DELETE', `/v1/creditgrants/${g.id}`)
    expect((await applications(g.id)).map((a: any) => a[1])).toEqual(['applied', 'cancelled'])
  })
})
