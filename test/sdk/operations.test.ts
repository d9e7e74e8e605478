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
    // One at a time: a call made before its failure is awaited would reject unhandled.
    for (const call of [
      () => fp.subscriptions.pauseSubscription(sub.id!, { pauseMode: 'immediate' }),
      () => fp.subscriptions.listSubscriptionPauses(sub.id!),
      () => fp.subscriptions.resumeSubscription(sub.id!, { resumeMode: 'immediate' }),
    ]) {
      const err = await failure(call())
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

describe('payments made directly', () => {
  const finalized = async (amount: string) => {
    const inv = await fp.invoices.createInvoice({ customerId, currency: 'USD', subtotal: amount, total: amount, amountDue: amount, lineItems: [{ displayName: 'Work', amount, quantity: '1' }] })
    await fp.invoices.finalizeInvoice(inv.id!)
    return inv.id!
  }

  it('an OFFLINE payment pays its invoice at once; one recorded unprocessed pays it when processed; both are booked', async () => {
    const invoiceId = await finalized('100.00')
    const first = await fp.payments.createPayment({ destinationType: 'INVOICE', destinationId: invoiceId, paymentMethodType: 'OFFLINE', amount: '30.25', currency: 'usd', metadata: { check: '1042' } })
    expect(first).toMatchObject({ paymentStatus: 'SUCCEEDED', amount: '30.25', destinationId: invoiceId, currency: 'USD', metadata: { check: '1042' } })
    expect(first.succeededAt).toBeTruthy()
    expect(await fp.invoices.getInvoice(invoiceId)).toMatchObject({ paymentStatus: 'PENDING', amountPaid: '30.25', amountRemaining: '69.75' })

    // Recorded now, received later: no money moves until it is processed.
    const second = await fp.payments.createPayment({ destinationType: 'INVOICE', destinationId: invoiceId, paymentMethodType: 'OFFLINE', amount: '69.75', currency: 'USD', processPayment: false, idempotencyKey: 'wire-77' })
    expect(second.paymentStatus).toBe('PENDING')
    expect((await fp.invoices.getInvoice(invoiceId)).amountPaid).toBe('30.25')
    const replay = await fp.payments.createPayment({ destinationType: 'INVOICE', destinationId: invoiceId, paymentMethodType: 'OFFLINE', amount: '69.75', currency: 'USD', processPayment: false, idempotencyKey: 'wire-77' })
    expect(replay.id).toBe(second.id)
    const reused = await failure(fp.payments.createPayment({ destinationType: 'INVOICE', destinationId: invoiceId, paymentMethodType: 'OFFLINE', amount: '1', currency: 'USD', processPayment: false, idempotencyKey: 'wire-77' }))
    expect([reused.statusCode, JSON.parse(reused.body).details]).toEqual([409, { idempotency_key: 'wire-77' }])
    expect(await fp.payments.updatePayment(second.id!, { metadata: { wire: 'W-77' } })).toMatchObject({ paymentStatus: 'PENDING', metadata: { wire: 'W-77' } })
    expect(await fp.payments.processPayment(second.id!)).toMatchObject({ paymentStatus: 'SUCCEEDED', amount: '69.75' })
    expect(await fp.invoices.getInvoice(invoiceId)).toMatchObject({ paymentStatus: 'SUCCEEDED', amountPaid: '100', amountRemaining: '0' })

    const day = new Date().toISOString().slice(0, 10)
    const journal = await t.h.http('GET', `/v1/accounting/journal?start_time=${day}T00:00:00Z&end_time=${new Date(Date.now() + 86400e3).toISOString()}`)
    const booked = journal.body.entries.filter((e: any) => e.source_type === 'payment' && [first.id, second.id].includes(e.source_id))
    expect(booked.map((e: any) => e.lines.find((l: any) => l.account === 'cash')?.debit).sort()).toEqual(['30.25', '69.75'])

    const refused = await failure(fp.payments.createPayment({ destinationType: 'INVOICE', destinationId: invoiceId, paymentMethodType: 'OFFLINE', amount: '1', currency: 'USD' }))
    expect(refused.message).toContain('already paid')
  })

  it('a card payment is recorded, not charged; moves forward only; is deleted only before money moved', async () => {
    const invoiceId = await finalized('40.00')
    const charged = await failure(fp.payments.createPayment({ destinationType: 'INVOICE', destinationId: invoiceId, paymentMethodType: 'CARD', amount: '40', currency: 'USD' }))
    expect(charged.statusCode).toBe(400)
    expect(charged.message).toContain('process_payment: false')
    const card = await fp.payments.createPayment({ destinationType: 'INVOICE', destinationId: invoiceId, paymentMethodType: 'CARD', amount: '40', currency: 'USD', processPayment: false, paymentGateway: 'stripe' })
    expect(card).toMatchObject({ paymentStatus: 'INITIATED', paymentGateway: 'stripe' })
    expect((await fp.payments.updatePayment(card.id!, { gatewayPaymentId: 'pi_123' })).paymentStatus).toBe('PENDING')
    expect((await failure(fp.payments.processPayment(card.id!))).message).toContain('not processed here')
    const failed = await fp.payments.updatePayment(card.id!, { paymentStatus: 'FAILED', errorMessage: 'card declined' })
    expect(failed).toMatchObject({ paymentStatus: 'FAILED', errorMessage: 'card declined' })
    expect((await failure(fp.payments.updatePayment(card.id!, { paymentStatus: 'SUCCEEDED' }))).message).toContain('a FAILED payment cannot become SUCCEEDED')
    expect((await fp.invoices.getInvoice(invoiceId)).amountPaid).toBe('0')
    expect((await fp.payments.deletePayment(card.id!)).message).toBeTruthy()
    expect((await fp.payments.listPayments({ destinationId: invoiceId })).items).toEqual([])

    // Money received outside any provider: the card payment SUCCEEDS by update, and the invoice follows.
    const outside = await fp.payments.createPayment({ destinationType: 'INVOICE', destinationId: invoiceId, paymentMethodType: 'CARD', amount: '40', currency: 'USD', processPayment: false })
    expect((await fp.payments.updatePayment(outside.id!, { paymentStatus: 'SUCCEEDED' })).paymentStatus).toBe('SUCCEEDED')
    expect((await fp.invoices.getInvoice(invoiceId)).paymentStatus).toBe('SUCCEEDED')
    expect((await failure(fp.payments.deletePayment(outside.id!))).message).toContain('cannot be deleted')
    expect((await failure(fp.payments.updatePayment(outside.id!, { paymentStatus: 'REFUNDED' }))).message).toContain('credit note')
  })

  it('refuses a payment the invoice cannot take, changing nothing', async () => {
    const invoiceId = await finalized('10.00')
    const cases: [Record<string, unknown>, string][] = [
      [{ currency: 'EUR' }, 'currency'],
      [{ amount: '0' }, 'amount'],
      [{ amount: '1.234' }, 'amount'],
      [{ paymentMethodType: 'CREDITS' }, 'payment/attempt'],
    ]
    for (const [change, named] of cases) {
      const err = await failure(fp.payments.createPayment({ destinationType: 'INVOICE', destinationId: invoiceId, paymentMethodType: 'OFFLINE', amount: '5', currency: 'USD', ...change } as any))
      expect(err.statusCode).toBe(400)
      expect(`${err.message} ${err.error?.internalError}`).toContain(named)
    }
    const missing = await failure(fp.payments.createPayment({ destinationType: 'INVOICE', destinationId: 'inv_missing', paymentMethodType: 'OFFLINE', amount: '5', currency: 'USD' }))
    expect([missing.statusCode, JSON.parse(missing.body).details]).toEqual([404, { id: 'inv_missing', destination_id: 'inv_missing' }])
    expect((await fp.payments.listPayments({ destinationId: invoiceId })).items).toEqual([])
    expect((await fp.invoices.getInvoice(invoiceId)).amountPaid).toBe('0')
  })
})

describe('environments', () => {
  it("the owner key creates and renames an environment; a key minted for it sees only its records", async () => {
    const env = await fp.environments.createEnvironment({ name: 'Staging EU', type: 'development' })
    expect(env).toMatchObject({ name: 'Staging EU', type: 'development' })
    expect(env.id).toMatch(/^env_/)
    const renamed = await fp.environments.updateEnvironment(env.id!, { name: 'Staging (EU)' })
    expect(renamed).toMatchObject({ id: env.id, name: 'Staging (EU)', type: 'development' })

    expect((await failure(fp.environments.updateEnvironment(env.id!, { type: 'production' }))).message).toContain('cannot be changed')
    expect((await failure(fp.environments.createEnvironment({ name: 'staging eu', type: 'sandbox' }))).statusCode).toBe(409)
    expect((await failure(fp.environments.createEnvironment({ name: 'Moon', type: 'lunar' }))).statusCode).toBe(400)
    expect((await failure(sdk(t.h, t.other).environments.updateEnvironment(env.id!, { name: 'taken' }))).statusCode).toBe(404)

    // Keys are bound to an environment: the owner key mints one for the new environment (our route, no SDK method).
    const minted = await t.h.http('POST', '/v1/secrets/api/keys', { body: { name: 'staging', roles: ['admin'], environment_id: env.id } })
    expect(minted.status).toBe(201)
    const staging = sdk(t.h, minted.body.api_key)
    await staging.customers.createCustomer({ externalId: 'staging-only', name: 'Staged' })
    expect((await fp.customers.queryCustomer({ externalId: 'staging-only' })).items).toEqual([])
    // Not the owner key: an environment's admin key does not make environments, renames its own and finds no other.
    expect((await failure(staging.environments.createEnvironment({ name: 'Another', type: 'development' }))).statusCode).toBe(403)
    expect((await staging.environments.updateEnvironment(env.id!, { name: 'Staging' })).name).toBe('Staging')
    expect((await failure(staging.environments.updateEnvironment(t.h.tenant.environments.production, { name: 'Mine' }))).statusCode).toBe(404)
  })
})

describe('inbound webhooks of providers other than Stripe', () => {
  it('answer that the provider is not connected; a connection to one is refused naming those supported', async () => {
    const [tenant, env] = [t.h.tenant.tenantId, t.h.tenant.environments.production]
    // One at a time: a call made before its failure is awaited would reject unhandled.
    const calls: [string, () => Promise<unknown>][] = [
      ['razorpay', () => fp.webhooks.handleRazorpayWebhook(tenant, env, 'sig')],
      ['chargebee', () => fp.webhooks.handleChargebeeWebhook(tenant, env)],
      ['hubspot', () => fp.webhooks.handleHubspotWebhook(tenant, env, 'sig')],
      ['moyasar', () => fp.webhooks.handleMoyasarWebhook(tenant, env)],
      ['nomod', () => fp.webhooks.handleNomodWebhook(tenant, env)],
    ]
    for (const [provider, call] of calls) {
      const err = await failure(call())
      expect([err.statusCode, JSON.parse(err.body).message]).toEqual([404, `${provider} is not connected: notifications are taken from stripe and quickbooks connections only`])
    }
    // QuickBooks is taken once connected (domains/integrations/quickbooks-inbound.test.ts); not here.
    expect(JSON.parse((await failure(fp.webhooks.handleQuickbooksWebhook(tenant, env, 'sig'))).body).message).toBe('no quickbooks connection receives notifications at this address')
    const refused = await failure(fp.integrations.createOrUpdateIntegration('razorpay', { name: 'Razorpay', provider: 'razorpay', credentials: { secret_key: 'rzp_test_1' } }))
    expect(refused.statusCode).toBe(400)
    expect(refused.message).toContain('connections exist for stripe, quickbooks')
  })
})

describe('tenants, users and roles', () => {
  it("a key reads its tenant; the owner key renames it; billing details and another tenant's id are refused", async () => {
    const tenantId = t.h.tenant.tenantId
    expect(await fp.tenants.getTenantById(tenantId)).toMatchObject({ id: tenantId, status: 'published' })
    expect(await fp.tenants.updateTenant({ name: 'Acme Billing', metadata: { region: 'eu' } })).toMatchObject({ id: tenantId, name: 'Acme Billing', metadata: { region: 'eu' } })
    expect((await fp.tenants.getTenantById(tenantId)).name).toBe('Acme Billing')
    expect((await failure(fp.tenants.updateTenant({ billingDetails: { email: 'billing@acme.test' } }))).message).toContain('billing_details')
    expect((await failure(sdk(t.h, t.other).tenants.getTenantById(tenantId))).statusCode).toBe(404)
    expect((await failure(fp.tenants.getTenantBillingUsage())).message).toContain('not billed by this service')
  })

  it('users are API keys: me is the calling key, search lists the environment\'s keys, people cannot be made', async () => {
    const minted = await fp.secrets.createApiKey({ name: 'reporting', type: 'private_key' })
    const readKey = await t.h.http('POST', '/v1/secrets/api/keys', { body: { name: 'reader', roles: ['read'] } })
    const me = await sdk(t.h, readKey.body.api_key).users.getUserInfo()
    expect(me).toMatchObject({ id: readKey.body.secret.id, type: 'service_account', roles: ['read'], email: '', tenant: { id: t.h.tenant.tenantId } })

    const readers = await fp.users.queryUser({ roles: ['read'] })
    expect(readers.items?.map((u) => u.id)).toEqual([readKey.body.secret.id])
    const picked = await fp.users.queryUser({ userIds: [minted.secret!.id!, readKey.body.secret.id] })
    expect(picked.items?.map((u) => u.id).sort()).toEqual([minted.secret!.id!, readKey.body.secret.id].sort())
    expect((await fp.users.queryUser({ type: 'user' })).items).toEqual([])
    // The read key may not list keys, as it may not list them under /v1/secrets/api/keys.
    expect((await failure(sdk(t.h, readKey.body.api_key).users.queryUser({}))).statusCode).toBe(403)

    expect((await failure(fp.users.createUser({ type: 'user', roles: ['admin'] }))).message).toContain('no sign-in')
    expect((await failure(fp.users.createUser({ type: 'service_account', roles: ['read'] }))).message).toContain('POST /v1/secrets/api/keys')
  })

  it('roles are the four a key holds, with their permissions in Flexprice\'s form', async () => {
    const { roles } = await fp.rbac.listRbacRoles()
    expect(roles.map((r: any) => r.id)).toEqual(['admin', 'read', 'write', 'ingest'])
    expect(await fp.rbac.getRbacRole('ingest')).toEqual({ role: { id: 'ingest', name: 'Ingest', description: expect.any(String), permissions: { event: ['write'] } } })
    expect((await failure(fp.rbac.getRbacRole('super_admin'))).statusCode).toBe(404)
  })
})

describe('the alert log and workflows', () => {
  it("logs a wallet's balance alert dropping and recovering; searches it by wallet, customer, type and status", async () => {
    const owner = (await fp.customers.createCustomer({ externalId: 'sdk-alerts-1', name: 'Alerted' })).id!
    const w = await fp.wallets.createWallet({ customerId: owner, currency: 'USD', initialCreditsToLoad: '5', alertSettings: { alertEnabled: true, critical: { threshold: 10, condition: 'below' } } })
    await fp.wallets.topUpWallet(w.id!, { creditsToAdd: '20', transactionReason: 'FREE_CREDIT_GRANT' })

    const log = await fp.alerts.queryAlertLog({ entityType: 'wallet', entityId: w.id, order: 'asc' })
    expect(log.items?.map((a) => [a.alertType, a.alertStatus, a.alertInfo?.valueAtTime, a.customerId])).toEqual([
      ['low_credit_balance', 'in_alarm', 5, owner],
      ['low_credit_balance', 'ok', 25, owner],
    ])
    expect(log.items?.[0]).toMatchObject({ entityType: 'wallet', entityId: w.id, wallet: { id: w.id } })
    expect((await fp.alerts.queryAlertLog({ customerId: owner, alertStatus: 'in_alarm' })).items?.map((a) => a.entityId)).toEqual([w.id])
    expect((await fp.alerts.queryAlertLog({ customerId: owner, alertType: 'feature_wallet_balance' })).items).toEqual([])
    expect((await sdk(t.h, t.other).alerts.queryAlertLog({ entityId: w.id })).items).toEqual([])
  })

  it('answers that there are no workflows to search', async () => {
    const err = await failure(fp.workflows.queryWorkflow({ workflowType: 'BillingWorkflow' }))
    expect(err.statusCode).toBe(400)
    expect(err.message).toContain('no workflow executions')
  })
})
