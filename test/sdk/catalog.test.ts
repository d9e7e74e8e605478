// Flexprice's SDK against the catalog: customers (and their provider mappings), features (with an inline
// meter), entitlements, plans, prices, addons, groups, API keys and provider connections — only SDK calls,
// each method's success and the fields a caller reads.
import { describe, expect, it } from 'vitest'
import { twoTenants } from '../catalog.ts'
import { failure, sdk } from './client.ts'

const t = twoTenants()
const fp = () => sdk(t.h)

describe('customers', () => {
  it('creates, reads by id and external id, searches, updates by id or external id, deletes (204)', async () => {
    const c = await fp().customers.createCustomer({ externalId: 'sdk-cust-1', name: 'Acme', email: 'billing@acme.test', addressCountry: 'DE', metadata: { tier: 'gold' } })
    expect(c).toMatchObject({ externalId: 'sdk-cust-1', name: 'Acme', email: 'billing@acme.test', addressCountry: 'DE', metadata: { tier: 'gold' }, status: 'published' })
    expect((await fp().customers.getCustomer(c.id!)).externalId).toBe('sdk-cust-1')
    expect((await fp().customers.getCustomerByExternalId('sdk-cust-1')).id).toBe(c.id)
    const found = await fp().customers.queryCustomer({ externalId: 'sdk-cust-1' })
    expect(found.items?.map((x) => x.id)).toEqual([c.id])
    expect(found.pagination).toMatchObject({ total: 1 })

    expect(await fp().customers.updateCustomer({ name: 'Acme GmbH' }, c.id)).toMatchObject({ id: c.id, name: 'Acme GmbH' })
    expect(await fp().customers.updateCustomer({ addressCity: 'Berlin' }, undefined, 'sdk-cust-1')).toMatchObject({ id: c.id, name: 'Acme GmbH', addressCity: 'Berlin' })

    await fp().customers.deleteCustomer(c.id!)
    expect((await fp().customers.getCustomer(c.id!)).status).toBe('deleted')
  })

  it('reads a customer without subscriptions: empty entitlements and no upcoming grants', async () => {
    const c = await fp().customers.createCustomer({ externalId: 'sdk-cust-2' })
    expect(await fp().customers.getCustomerEntitlements(c.id!)).toMatchObject({ customerId: c.id, features: [] })
    expect((await fp().customers.getCustomerUpcomingGrants(c.id!)).items).toEqual([])
  })

  it("searches with Flexprice's sort conditions", async () => {
    for (const externalId of ['sdk-sort-b', 'sdk-sort-a']) await fp().customers.createCustomer({ externalId })
    const sorted = async (direction: 'asc' | 'desc') =>
      (await fp().customers.queryCustomer({ externalIds: ['sdk-sort-a', 'sdk-sort-b'], sort: [{ field: 'external_id', direction }], expand: 'subscriptions' })).items?.map((c) => c.externalId)
    expect(await sorted('asc')).toEqual(['sdk-sort-a', 'sdk-sort-b'])
    expect(await sorted('desc')).toEqual(['sdk-sort-b', 'sdk-sort-a'])
  })

  it('answers a missing customer with an error the SDK can read', async () => {
    const err = await failure(fp().customers.updateCustomer({ name: 'x' }, 'cus_missing'))
    expect(err.statusCode).toBe(404)
    // A 400 is the SDK's typed error: its message is ours, read from error.message.
    const invalid = await failure(fp().customers.createCustomer({ externalId: 'sdk-bad-email', email: 'not-an-email' }))
    expect(invalid.name).toBe('ErrorsErrorsErrorResponse')
    expect(invalid.message).toMatch(/email/)
    expect(invalid.error).toMatchObject({ message: invalid.message, internalError: expect.stringContaining('validation_error') })
    expect(JSON.parse(invalid.body)).toMatchObject({ code: 'validation_error', http_status_code: 400, details: { email: expect.any(String) }, success: false })
  })
})

describe('features and entitlements', () => {
  it('creates a metered feature with an inline meter, in one go', async () => {
    const f = await fp().features.createFeature({
      name: 'API calls',
      type: 'metered',
      lookupKey: 'api-calls',
      meter: { name: 'API calls', eventName: 'api.call', aggregation: { type: 'SUM', field: 'tokens' }, resetUsage: 'BILLING_PERIOD' },
    })
    expect(f).toMatchObject({ name: 'API calls', type: 'metered', lookupKey: 'api-calls' })
    expect(f.meterId).toMatch(/^meter_/)
    expect(f.meter).toMatchObject({ id: f.meterId, eventName: 'api.call', aggregation: { type: 'SUM', field: 'tokens' }, resetUsage: 'BILLING_PERIOD' })

    const listed = await fp().features.queryFeature({ lookupKey: 'api-calls' })
    expect(listed.items?.map((x) => x.id)).toEqual([f.id])
    expect(await fp().features.updateFeature(f.id!, { description: 'Calls to the API', unitSingular: 'call', unitPlural: 'calls' })).toMatchObject({ id: f.id, unitPlural: 'calls' })
  })

  it('creates, reads, searches, updates and deletes entitlements (the SDK always sends feature_type)', async () => {
    const plan = await fp().plans.createPlan({ name: 'Ent plan' })
    const flag = await fp().features.createFeature({ name: 'SSO', type: 'boolean' })
    const seats = await fp().features.createFeature({ name: 'Seats', type: 'static' })
    const e = await fp().entitlements.createEntitlement({ featureId: flag.id!, featureType: 'boolean', planId: plan.id, isEnabled: true })
    expect(e).toMatchObject({ featureId: flag.id, featureType: 'boolean', isEnabled: true, entityType: 'PLAN', entityId: plan.id })
    const bulk = await fp().entitlements.createEntitlementsBulk({
      items: [{ featureId: seats.id!, featureType: 'static', entityType: 'PLAN', entityId: plan.id, staticValue: '5' }],
    })
    expect(bulk.items?.map((x) => x.featureId)).toEqual([seats.id])

    expect((await fp().entitlements.getEntitlement(e.id!)).featureId).toBe(flag.id)
    expect((await fp().entitlements.queryEntitlement({ planIds: [plan.id!] })).items).toHaveLength(2)
    expect((await fp().entitlements.getPlanEntitlements(plan.id!)).entitlements).toHaveLength(2)
    expect(await fp().entitlements.updateEntitlement(e.id!, { isEnabled: false })).toMatchObject({ id: e.id, isEnabled: false })
    await fp().entitlements.deleteEntitlement(e.id!)
    expect((await fp().entitlements.getEntitlement(e.id!)).status).toBe('deleted')
    await fp().features.deleteFeature(flag.id!)
  })
})

describe('plans, prices and addons', () => {
  it('creates, reads, searches, updates and deletes a plan and its prices', async () => {
    const plan = await fp().plans.createPlan({ name: 'Pro', lookupKey: 'pro', description: 'For teams', displayOrder: 2 })
    expect(plan).toMatchObject({ name: 'Pro', lookupKey: 'pro', displayOrder: 2 })
    const price = await fp().prices.createPrice({
      entityType: 'PLAN',
      entityId: plan.id!,
      currency: 'usd',
      type: 'FIXED',
      billingModel: 'FLAT_FEE',
      billingCadence: 'RECURRING',
      billingPeriod: 'MONTHLY',
      invoiceCadence: 'ADVANCE',
      priceUnitType: 'FIAT',
      amount: '49',
      lookupKey: 'pro-monthly',
    })
    expect(price).toMatchObject({ entityId: plan.id, amount: '49', currency: 'USD', billingPeriod: 'MONTHLY' })
    const bulk = await fp().prices.createPricesBulk({
      items: [{ entityType: 'PLAN', entityId: plan.id!, currency: 'USD', type: 'FIXED', billingModel: 'FLAT_FEE', billingCadence: 'ONETIME', billingPeriod: 'MONTHLY', invoiceCadence: 'ADVANCE', priceUnitType: 'FIAT', amount: '100' }],
    })
    expect(bulk.items).toHaveLength(1)

    expect((await fp().prices.getPrice(price.id!)).id).toBe(price.id)
    expect((await fp().prices.getPriceByLookupKey('pro-monthly')).id).toBe(price.id)
    expect((await fp().prices.queryPrice({ entityIds: [plan.id!] })).items).toHaveLength(2)
    expect(await fp().prices.updatePrice(price.id!, { description: 'Monthly' })).toMatchObject({ id: price.id, description: 'Monthly' })

    const got = await fp().plans.getPlan(plan.id!)
    expect(got.prices?.map((p) => p.id).sort()).toEqual([price.id, bulk.items![0].id].sort())
    expect((await fp().plans.queryPlan({ lookupKey: 'pro' })).items?.map((p) => p.id)).toEqual([plan.id])
    expect(await fp().plans.updatePlan(plan.id!, { description: 'For larger teams' })).toMatchObject({ description: 'For larger teams' })
    expect((await fp().creditGrants.getPlanCreditGrants(plan.id!)).items).toEqual([])
    await fp().creditGrants.createCreditGrant({ name: 'Monthly', scope: 'PLAN', planId: plan.id, credits: '10', cadence: 'RECURRING', period: 'MONTHLY', expirationType: 'NEVER' })

    const copy = await fp().plans.postPlansIdClone(plan.id!, { name: 'Pro (2025)', lookupKey: 'pro-2025' })
    expect(copy).toMatchObject({ name: 'Pro (2025)', lookupKey: 'pro-2025', description: 'For larger teams', displayOrder: 2 })
    expect(copy.prices?.map((p) => [p.amount, p.lookupKey ?? null]).sort()).toEqual([['100', null], ['49', null]])
    expect(copy.creditGrants?.map((g) => [g.name, g.credits])).toEqual([['Monthly', '10']])

    expect((await failure(fp().prices.deletePrice(bulk.items![0].id!, { endDate: new Date(Date.now() + 86400e3).toISOString() }))).statusCode).toBe(400)
    await fp().prices.deletePrice(bulk.items![0].id!, {})
    await fp().plans.deletePlan(plan.id!)
    expect((await fp().plans.getPlan(plan.id!)).status).toBe('deleted')
  })

  it('creates, reads (by id and lookup key), searches, updates and deletes an addon', async () => {
    const addon = await fp().addons.createAddon({ name: 'Extra storage', lookupKey: 'storage', type: 'multiple_instance', metadata: { size: '100GB' } })
    expect(addon).toMatchObject({ name: 'Extra storage', lookupKey: 'storage', type: 'multiple_instance' })
    expect((await fp().addons.getAddon(addon.id!)).id).toBe(addon.id)
    expect((await fp().addons.getAddonByLookupKey('storage')).id).toBe(addon.id)
    expect((await fp().addons.queryAddon({ lookupKeys: ['storage'] })).items?.map((a) => a.id)).toEqual([addon.id])
    expect(await fp().addons.updateAddon(addon.id!, { description: '100 GB more' })).toMatchObject({ description: '100 GB more' })
    expect((await fp().entitlements.getAddonEntitlements(addon.id!)).items).toEqual([])
    await fp().addons.deleteAddon(addon.id!)
  })

  it('mints, lists and revokes an API key (204)', async () => {
    const made = await fp().secrets.createApiKey({ name: 'ci', type: 'private_key' })
    expect(made.apiKey).toMatch(/.{32,}/)
    expect((await fp().secrets.listApiKeys()).items?.map((k) => k.id)).toContain(made.secret?.id)
    const ok = await sdk(t.h, made.apiKey!).customers.queryCustomer({})
    expect(ok.items).toBeDefined()
    await fp().secrets.deleteApiKey(made.secret!.id!)
    expect((await failure(sdk(t.h, made.apiKey!).customers.queryCustomer({}))).statusCode).toBe(401)
  })

  it('creates, reads, searches and deletes a group', async () => {
    const g = await fp().groups.createGroup({ name: 'Compute', lookupKey: 'compute', entityType: 'price' })
    expect(g).toMatchObject({ name: 'Compute', lookupKey: 'compute' })
    expect((await fp().groups.getGroup(g.id!)).id).toBe(g.id)
    expect((await fp().groups.queryGroup({ lookupKey: 'compute' })).items?.map((x) => x.id)).toEqual([g.id])
    await fp().groups.deleteGroup(g.id!)
  })
})

describe('provider connections and mappings', () => {
  it("maps a customer to its provider id and ends the mapping (204)", async () => {
    const c = await fp().customers.createCustomer({ externalId: 'sdk-mapped', integrationEntityMapping: [{ provider: 'stripe', id: 'cus_S1' }] })
    const m = await fp().entityIntegrationMappings.createEntityIntegrationMapping({ entityId: c.id!, entityType: 'customer', providerType: 'hubspot', providerEntityId: 'hs-42' })
    expect(m).toMatchObject({ entityId: c.id, entityType: 'customer', providerType: 'hubspot', providerEntityId: 'hs-42' })
    const again = await failure(fp().entityIntegrationMappings.createEntityIntegrationMapping({ entityId: c.id!, entityType: 'customer', providerType: 'hubspot', providerEntityId: 'hs-42' }))
    expect(again.statusCode).toBe(409)
    await fp().entityIntegrationMappings.deleteEntityIntegrationMapping(m.id!)
    // Ended: the provider id is free to be mapped again; the mapping made with the customer stays.
    await fp().entityIntegrationMappings.createEntityIntegrationMapping({ entityId: c.id!, entityType: 'customer', providerType: 'hubspot', providerEntityId: 'hs-42' })
    expect((await failure(fp().entityIntegrationMappings.createEntityIntegrationMapping({ entityId: c.id!, entityType: 'customer', providerType: 'stripe', providerEntityId: 'cus_S1' }))).statusCode).toBe(409)
  })

  it("saves Stripe credentials as the environment's Stripe connection, reads it by provider, lists it as linked, deletes it (204)", async () => {
    const saved = await fp().integrations.createOrUpdateIntegration('stripe', { name: 'Stripe', provider: 'stripe', credentials: { secret_key: 'sk_test_1', webhook_secret: 'whsec_1' } })
    expect(saved).toMatchObject({ name: 'Stripe', provider: 'stripe', type: 'integration', status: 'published' })
    const rolled = await fp().integrations.createOrUpdateIntegration('stripe', { name: 'Stripe (EU)', provider: 'stripe', credentials: { webhook_secret: 'whsec_2' } })
    expect(rolled).toMatchObject({ id: saved.id, name: 'Stripe (EU)' })
    expect((await fp().integrations.getIntegration('stripe')).id).toBe(saved.id)
    expect((await fp().integrations.listLinkedIntegrations()).providers).toEqual(['stripe'])

    // Stripe itself calls the callback address with the signed event; the SDK's method sends no body.
    const callback = await failure(fp().webhooks.handleStripeWebhook(t.h.tenant.tenantId, t.h.tenant.environments.production, 't=1,v1=00'))
    expect(callback.statusCode).toBe(401)

    await fp().integrations.deleteIntegration(saved.id!)
    expect((await failure(fp().integrations.getIntegration('stripe'))).statusCode).toBe(404)
  })
})
