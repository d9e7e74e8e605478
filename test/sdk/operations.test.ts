// Flexprice's SDK against what issue 33 added or refused clearly: pause and resume (removed by the spec), a trial's
// card without a payment provider, payments made directly, environments, tenants, users and roles, the alert log,
// workflows, and the inbound webhooks of providers other than Stripe — only SDK calls, but for the worker's jobs.
import { beforeAll, describe, expect, it } from 'vitest'
import type { Flexprice } from '@flexprice/sdk'
import { twoTenants } from '../catalog.ts'
import { failure, sdk } from './client.ts'
import { runNamedJob } from '../wallets.ts'

const t = twoTenants({ env: { INVOICE_GRACE_PERIOD_MINUTES: '0' } })
let fp: Flexprice
let customerId: string

beforeAll(async () => {
  fp = sdk(t.h)
  customerId = (await fp.customers.createCustomer({ externalId: 'sdk-ops-1', name: 'Operated', email: 'ap@operated.test' })).id!
})

async function monthlyPlan(amount: string): Promise<string> {
  const plan = await fp.plans.createPlan({ name: `Monthly ${amount}` })
  await fp.prices.createPrice({ entityType: 'PLAN', entityId: plan.id!, currency: 'USD', type: 'FIXED', billingModel: 'FLAT_FEE', billingCadence: 'RECURRING', billingPeriod: 'MONTHLY', invoiceCadence: 'ADVANCE', priceUnitType: 'FIAT', amount })
  return plan.id!
}

describe('pause and resume, removed by the spec', () => {
  it('answers 410 saying so, not 404', async () => {
    const sub = await fp.subscriptions.createSubscription({ customerId, planId: await monthlyPlan('5'), currency: 'USD', billingCadence: 'RECURRING', billingPeriod: 'MONTHLY' })
    for (const call of [
      fp.subscriptions.pauseSubscription(sub.id!, { pauseMode: 'immediate' }),
      fp.subscriptions.listSubscriptionPauses(sub.id!),
      fp.subscriptions.resumeSubscription(sub.id!, { resumeMode: 'immediate' }),
    ]) {
      const err = await failure(call)
      expect(err.statusCode).toBe(410)
      expect(JSON.parse(err.body)).toMatchObject({ code: 'invalid_operation', message: expect.stringContaining('removed') })
    }
    expect((await fp.subscriptions.getSubscription(sub.id!)).subscriptionStatus).toBe('active')
  })
})

describe("a trial's card with no payment provider", () => {
  it('waits for a payment method with no placeholder checkout address', async () => {
    const sub = await fp.subscriptions.createSubscription({ customerId, planId: await monthlyPlan('30'), currency: 'USD', billingCadence: 'RECURRING', billingPeriod: 'MONTHLY', trialStart: new Date().toISOString(), trialEnd: new Date(Date.now() + 14 * 86400e3).toISOString() })
    await runNamedJob(t.h, 'billing-run')
    const [trial] = (await fp.invoices.queryInvoice({ subscriptionId: sub.id })).items!
    expect(trial).toMatchObject({ billingReason: 'SUBSCRIPTION_TRIAL_START', invoiceStatus: 'FINALIZED', total: '0' })
    expect(trial.metadata).toEqual({ checkout_status: 'awaiting_payment_method' })
    expect(trial.paymentStatus).not.toBe('SUCCEEDED')
  })
})
