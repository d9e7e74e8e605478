// Flexprice's SDK changing plans: previewSubscriptionChange and executeSubscriptionChange (an upgrade now, a
// downgrade at the end of the period), the schedule methods over the scheduled one and syncPlanPrices — only SDK calls, on a
// fixed clock. April 2024 has 30 days; on 21 April 10 are left: Basic 30.00 → Premium 90.00 credits −10.00 and
// charges 30.00, net 20.00.
import { beforeAll, describe, expect, it } from 'vitest'
import type { Flexprice } from '@flexprice/sdk'
import { fixedClock } from '../../core/clock.ts'
import { twoTenants } from '../catalog.ts'
import { failure, sdk } from './client.ts'

const clock = fixedClock('2024-04-21T00:00:00Z')
const t = twoTenants({ clock, env: { KAFKA_BROKERS: '' } })
let fp: Flexprice
const ids = {} as { customer: string; basic: string; premium: string }

const plan = async (name: string, amount: string) => {
  const created = await fp.plans.createPlan({ name })
  await fp.prices.createPrice({ entityType: 'PLAN', entityId: created.id!, currency: 'USD', type: 'FIXED', billingModel: 'FLAT_FEE', billingCadence: 'RECURRING', billingPeriod: 'MONTHLY', invoiceCadence: 'ADVANCE', priceUnitType: 'FIAT', amount })
  return created.id!
}
const subscribe = async (planId: string) =>
  (await fp.subscriptions.createSubscription({ customerId: ids.customer, planId, currency: 'USD', billingCadence: 'RECURRING', billingPeriod: 'MONTHLY', startDate: '2024-04-01T00:00:00Z' })).id!
const request = (targetPlanId: string, changeAt: 'immediate' | 'end_of_period') =>
  ({ targetPlanId, changeAt, prorationBehavior: 'create_prorations', billingCadence: 'RECURRING', billingCycle: 'anniversary', billingPeriod: 'MONTHLY' }) as const

beforeAll(async () => {
  fp = sdk(t.h)
  ids.customer = (await fp.customers.createCustomer({ externalId: 'sdk-plan-change', name: 'Changer' })).id!
  ids.basic = await plan('Basic', '30')
  ids.premium = await plan('Premium', '90')
})

describe('plan changes through the SDK', () => {
  it('previews and executes an upgrade now, prorated for the 10 days left', async () => {
    const subId = await subscribe(ids.basic)
    const preview = await fp.subscriptions.previewSubscriptionChange(subId, request(ids.premium, 'immediate'))
    expect(preview).toMatchObject({ subscriptionId: subId, changeType: 'upgrade', currentPlan: { id: ids.basic, name: 'Basic' }, targetPlan: { id: ids.premium, name: 'Premium' } })
    expect(preview.prorationDetails).toMatchObject({ creditAmount: '10.00', chargeAmount: '30.00', netAmount: '20.00', daysRemaining: 10, daysUsed: 20, currency: 'USD' })
    // The next invoice with the change made: May's Premium 90.00 and the prorations, −10.00 + 30.00.
    expect(preview.nextInvoicePreview?.lineItems?.map((l) => [l.description, l.amount, l.isProration]).sort()).toEqual(
      [
        ['Premium', '90', false],
        ['Remaining time on Premium from 2024-04-21', '30', true],
        ['Unused time on Basic from 2024-04-21', '-10', true],
      ].sort(),
    )
    expect(preview.nextInvoicePreview?.subtotal).toBe('110')

    const done = await fp.subscriptions.executeSubscriptionChange(subId, request(ids.premium, 'immediate'))
    expect(done).toMatchObject({ changeType: 'upgrade', isScheduled: false, oldSubscription: { id: subId, planId: ids.basic }, newSubscription: { id: subId, planId: ids.premium, status: 'active' } })
    expect(done.prorationApplied?.netAmount).toBe('20.00')
    expect((await fp.subscriptions.getSubscription(subId)).planId).toBe(ids.premium)
  })

  it('with always_invoice, answers the SUBSCRIPTION_UPDATE invoice made now', async () => {
    const subId = await subscribe(ids.basic)
    // always_invoice is not in the SDK's typed enum, which is open: the value is sent as given.
    const done = await fp.subscriptions.executeSubscriptionChange(subId, { ...request(ids.premium, 'immediate'), prorationBehavior: 'always_invoice' as never })
    expect([done.invoice?.billingReason, done.invoice?.total, done.invoice?.subscriptionId]).toEqual(['SUBSCRIPTION_UPDATE', '20', subId])
  })

  it('schedules a downgrade for the period end, lists it, reads it and cancels it', async () => {
    const subId = await subscribe(ids.premium)
    const done = await fp.subscriptions.executeSubscriptionChange(subId, request(ids.basic, 'end_of_period'))
    expect(done).toMatchObject({ changeType: 'downgrade', isScheduled: true, scheduledAt: '2024-05-01T00:00:00.000Z' })
    const scheduleId = done.scheduleId!

    const mine = await fp.subscriptions.listSubscriptionSchedules(subId)
    expect([mine.count, mine.schedules?.map((s) => [s.id, s.status, s.scheduleType, s.canBeCancelled])]).toEqual([1, [[scheduleId, 'pending', 'plan_change', true]]])
    const pending = await fp.subscriptions.listAllSubscriptionSchedules(true, subId)
    expect(pending.schedules?.map((s) => s.id)).toEqual([scheduleId])
    expect(await fp.subscriptions.getSubscriptionSchedule(scheduleId)).toMatchObject({ id: scheduleId, subscriptionId: subId, scheduledAt: '2024-05-01T00:00:00.000Z', daysUntilExecution: 10 })

    expect(await fp.subscriptions.cancelSubscriptionSchedule(scheduleId, { subscriptionId: subId, scheduleType: 'plan_change' })).toMatchObject({ status: 'cancelled' })
    expect((await fp.subscriptions.listAllSubscriptionSchedules(true, subId)).schedules).toEqual([])
    expect((await fp.subscriptions.getSubscriptionSchedule(scheduleId)).status).toBe('cancelled')
    expect((await fp.subscriptions.getSubscription(subId)).planId).toBe(ids.premium)
  })

  it('refuses a change to the plan the subscription has, with the field named', async () => {
    const subId = await subscribe(ids.basic)
    const err = await failure(fp.subscriptions.executeSubscriptionChange(subId, request(ids.basic, 'immediate')))
    expect(err.message).toMatch(/target_plan_id/)
  })

  it('syncPlanPrices starts a plan sync run, answered as Flexprice\'s workflow', async () => {
    await subscribe(ids.basic)
    await fp.prices.createPrice({ entityType: 'PLAN', entityId: ids.basic, currency: 'USD', type: 'FIXED', billingModel: 'FLAT_FEE', billingCadence: 'RECURRING', billingPeriod: 'MONTHLY', invoiceCadence: 'ADVANCE', priceUnitType: 'FIAT', amount: '5' })
    const started = await fp.plans.syncPlanPrices(ids.basic)
    expect(started.workflowId).toMatch(/^plansync_/)
    expect(started.runId).toBe(started.workflowId)
    expect(started.message).toMatch(/of plan/)
  })

  it("another tenant's key does not see the schedules", async () => {
    expect((await sdk(t.h, t.other).subscriptions.listAllSubscriptionSchedules()).count).toBe(0)
  })
})
