import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../core/clock.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { customer, eventsOf, feature, fixedPrice, plan, subscribed } from '../../test/catalog.ts'
import { jobs } from '../../worker/jobs.ts'
import { runJob } from '../../infra/scheduler.ts'
import { advanceSubscriptions } from './lifecycle.ts'

// One calendar for the whole file: the steps below run in order and only move the clock forward.
const clock = fixedClock('2025-01-15T10:00:00Z')
let h: Harness
let sso: any
let trialPlan: any
let plainPlan: any

beforeAll(async () => {
  h = await startHarness({ clock })
  sso = await feature(h, 'boolean')
  trialPlan = await plan(h, { prices: [fixedPrice('10', { trial_period_days: 14 })], entitlements: [{ feature_id: sso.id }] })
  plainPlan = await plan(h, { prices: [fixedPrice('10')], entitlements: [{ feature_id: sso.id }] })
})
afterAll(() => h?.stop())

const get = async (id: string) => (await h.http('GET', `/v1/subscriptions/${id}`)).body
const subscribe = (body: Record<string, unknown>) => subscribed(h, body)
const granted = async (customerId: string) => (await h.http('GET', `/v1/customers/${customerId}/entitlements`)).body.features.map((f: any) => f.feature.id)

describe('the subscription lifecycle over time', () => {
  let future: any
  let parent: any
  let child: any
  let scheduled: any
  let renewing: any

  it('sets the scene on Jan 15', async () => {
    future = await subscribe({ customer_id: (await customer(h)).id, plan_id: plainPlan.id, start_date: '2025-02-01T00:00:00Z' })
    parent = await subscribe({ customer_id: (await customer(h)).id, plan_id: trialPlan.id })
    child = await subscribe({ customer_id: (await customer(h)).id, plan_id: trialPlan.id, parent_subscription_id: parent.id, trial_period_days: 40 })
    scheduled = await subscribe({ customer_id: (await customer(h)).id, plan_id: plainPlan.id })
    renewing = await subscribe({ customer_id: (await customer(h)).id, plan_id: plainPlan.id })
    await h.http('POST', `/v1/subscriptions/${scheduled.id}/cancel`, { body: { cancellation_type: 'scheduled_date', cancel_at: '2025-03-10T00:00:00Z' } })
    expect([future.subscription_status, parent.subscription_status, child.subscription_status]).toEqual(['not_started', 'trialing', 'trialing'])
    expect(await granted(future.customer_id)).toEqual([])
    // The job runs over every tenant (in CI other test files share the database): check that nothing of ours moved.
    await advanceSubscriptions(h.running.deps)
    expect([(await get(future.id)).subscription_status, (await get(parent.id)).subscription_status, (await get(child.id)).subscription_status]).toEqual([
      'not_started',
      'trialing',
      'trialing',
    ])
  })

  it('grants a future subscription from its start, before the job has run, and activates it then', async () => {
    clock.set('2025-02-01T00:00:01Z')
    expect(await granted(future.customer_id)).toEqual([sso.id])
    const summary = await advanceSubscriptions(h.running.deps)
    expect(summary.events['subscription.activated']).toBeGreaterThanOrEqual(1)
    expect(await get(future.id)).toMatchObject({ subscription_status: 'active', current_period_start: '2025-02-01T00:00:00.000Z' })
    expect(await eventsOf(h, future.id)).toEqual(['subscription.created', 'subscription.activated'])
  })

  it("ends a parent's trial and carries it to its children (rule 7)", async () => {
    // The parent's trial ended on Jan 29; the child's own would run to Feb 24.
    expect(await get(parent.id)).toMatchObject({ subscription_status: 'active', trial_end: '2025-01-29T10:00:00.000Z', current_period_start: '2025-01-29T10:00:00.000Z' })
    expect(await get(child.id)).toMatchObject({ subscription_status: 'active', trial_end: '2025-01-29T10:00:00.000Z', current_period_end: '2025-02-28T10:00:00.000Z' })
    expect(await eventsOf(h, child.id)).toContain('subscription.activated')
  })

  it('rolls finished periods over and says a renewal is due', async () => {
    clock.set('2025-02-16T00:00:00Z')
    await advanceSubscriptions(h.running.deps)
    expect(await get(renewing.id)).toMatchObject({ current_period_start: '2025-02-15T10:00:00.000Z', current_period_end: '2025-03-15T10:00:00.000Z', version: 2 })
    expect(await eventsOf(h, renewing.id)).toEqual(['subscription.created', 'subscription.renewal.due'])
  })

  it('ends a scheduled cancellation on its date: active until then', async () => {
    clock.set('2025-03-09T23:59:59Z')
    await advanceSubscriptions(h.running.deps)
    expect((await get(scheduled.id)).subscription_status).toBe('active')
    expect(await granted(scheduled.customer_id)).toEqual([sso.id])
    clock.set('2025-03-10T00:00:00Z')
    expect(await granted(scheduled.customer_id)).toEqual([])
    await advanceSubscriptions(h.running.deps)
    const done = await get(scheduled.id)
    expect(done).toMatchObject({ subscription_status: 'cancelled', cancelled_at: '2025-03-10T00:00:00.000Z', end_date: '2025-03-10T00:00:00.000Z' })
    expect(done.line_items.every((l: any) => l.end_date === '2025-03-10T00:00:00.000Z')).toBe(true)
    expect((await eventsOf(h, scheduled.id)).slice(-1)).toEqual(['subscription.cancelled'])
  })

  it('jumps over missed periods to the one holding now, and has nothing left to do after', async () => {
    clock.set('2025-06-20T00:00:00Z')
    await runJob(h.running.deps, jobs.find((j) => j.name === 'subscription-lifecycle')!)
    expect(await get(renewing.id)).toMatchObject({ current_period_start: '2025-06-15T10:00:00.000Z', current_period_end: '2025-07-15T10:00:00.000Z' })
    await advanceSubscriptions(h.running.deps)
    expect(await get(renewing.id)).toMatchObject({ current_period_start: '2025-06-15T10:00:00.000Z', current_period_end: '2025-07-15T10:00:00.000Z' })
  })
})
