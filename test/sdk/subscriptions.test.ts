// Flexprice's SDK against subscriptions, events and usage: a customer subscribes to a plan with a metered
// feature, sends events through the SDK and reads them and their usage back — only SDK calls.
import { beforeAll, describe, expect, it } from 'vitest'
import type { Flexprice } from '@flexprice/sdk'
import { twoTenants } from '../catalog.ts'
import { failure, sdk } from './client.ts'

// Direct intake (no broker) and an immediate meter backfill: events are readable as soon as they are accepted.
const t = twoTenants({ env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0' } })
let fp: Flexprice
/** Usage of a new meter (and so a preview pricing it) answers 503 until its backfill ran; the SDK retries 503 when asked to. */
const retrying = { retries: { strategy: 'backoff' as const, backoff: { initialInterval: 100, maxInterval: 500, exponent: 1.5, maxElapsedTime: 20_000 }, retryConnectionErrors: false } }

const catalog = {} as { customerId: string; planId: string; addonId: string; featureId: string; meterId: string; subscribedAt: string }

beforeAll(async () => {
  fp = sdk(t.h)
  const customer = await fp.customers.createCustomer({ externalId: 'sdk-sub-1', name: 'Subscriber' })
  const feature = await fp.features.createFeature({
    name: 'Tokens',
    type: 'metered',
    meter: { name: 'Tokens', eventName: 'llm.tokens', aggregation: { type: 'SUM', field: 'tokens' }, resetUsage: 'BILLING_PERIOD' },
  })
  const plan = await fp.plans.createPlan({ name: 'Usage plan', lookupKey: 'usage-plan' })
  const common = { entityType: 'PLAN' as const, entityId: plan.id!, currency: 'USD', billingCadence: 'RECURRING' as const, billingPeriod: 'MONTHLY' as const, priceUnitType: 'FIAT' as const }
  await fp.prices.createPricesBulk({
    items: [
      { ...common, type: 'FIXED', billingModel: 'FLAT_FEE', invoiceCadence: 'ADVANCE', amount: '20' },
      { ...common, type: 'USAGE', billingModel: 'FLAT_FEE', invoiceCadence: 'ARREAR', amount: '0.001', meterId: feature.meterId },
    ],
  })
  await fp.entitlements.createEntitlement({ featureId: feature.id!, featureType: 'metered', planId: plan.id, usageLimit: 1500, isSoftLimit: true, usageResetPeriod: 'MONTHLY' })
  const addon = await fp.addons.createAddon({ name: 'Support', lookupKey: 'support', type: 'onetime' })
  await fp.prices.createPrice({ ...common, entityType: 'ADDON', entityId: addon.id!, type: 'FIXED', billingModel: 'FLAT_FEE', invoiceCadence: 'ADVANCE', amount: '5' })
  Object.assign(catalog, { customerId: customer.id, planId: plan.id, addonId: addon.id, featureId: feature.id, meterId: feature.meterId })
})

describe('subscriptions', () => {
  it('subscribes with an addon and reads the subscription, its entitlements, addons and grants back', async () => {
    const sub = await fp.subscriptions.createSubscription({
      customerId: catalog.customerId,
      planId: catalog.planId,
      currency: 'usd',
      billingCadence: 'RECURRING',
      billingPeriod: 'MONTHLY',
      addons: [{ addonId: catalog.addonId }],
      metadata: { source: 'sdk' },
    })
    expect(sub).toMatchObject({ customerId: catalog.customerId, planId: catalog.planId, currency: 'USD', subscriptionStatus: 'active', billingPeriod: 'MONTHLY' })
    expect(sub.lineItems).toHaveLength(3)
    catalog.subscribedAt = sub.startDate!

    expect((await fp.subscriptions.getSubscription(sub.id!)).id).toBe(sub.id)
    const v2 = await fp.subscriptions.getSubscriptionV2(sub.id!)
    expect(v2).toMatchObject({ id: sub.id, planId: catalog.planId })
    expect((await fp.subscriptions.querySubscription({ customerId: catalog.customerId })).items?.map((s) => s.id)).toEqual([sub.id])

    const ents = await fp.subscriptions.getSubscriptionEntitlements(sub.id!)
    expect(ents).toMatchObject({ subscriptionId: sub.id, planId: catalog.planId })
    expect(ents.features?.map((f) => f.feature?.id)).toEqual([catalog.featureId])
    expect(ents.features?.[0].entitlement).toMatchObject({ isEnabled: true, usageLimit: 1500 })
    expect((await fp.customers.getCustomerEntitlements(catalog.customerId)).features?.map((f) => f.feature?.id)).toEqual([catalog.featureId])

    const addons = await fp.subscriptions.getSubscriptionAddonAssociations(sub.id!)
    expect(addons.map((a) => [a.addonId, a.addon?.lookupKey])).toEqual([[catalog.addonId, 'support']])
    expect((await fp.subscriptions.getSubscriptionUpcomingGrants(sub.id!)).items).toEqual([])

    const preview = await fp.invoices.getInvoicePreview({ subscriptionId: sub.id! }, retrying)
    expect(preview).toMatchObject({ subscriptionId: sub.id, customerId: catalog.customerId, currency: 'USD' })

    const labelled = await fp.subscriptions.updateSubscription(sub.id!, { cancelAtPeriodEnd: true })
    expect(labelled).toMatchObject({ id: sub.id, cancelAtPeriodEnd: true })
    expect(labelled.cancelAt).toBe(sub.currentPeriodEnd)
  })

  it('creates a draft, activates it, and cancels it immediately', async () => {
    const draft = await fp.subscriptions.createSubscription({
      externalCustomerId: 'sdk-sub-1',
      planId: catalog.planId,
      currency: 'USD',
      billingCadence: 'RECURRING',
      billingPeriod: 'MONTHLY',
      subscriptionStatus: 'draft',
    })
    expect(draft.subscriptionStatus).toBe('draft')
    const active = await fp.subscriptions.activateSubscription(draft.id!, { startDate: new Date().toISOString() })
    expect(active.subscriptionStatus).toBe('active')
    const cancelled = await fp.subscriptions.cancelSubscription(draft.id!, { cancellationType: 'immediate', reason: 'testing' })
    expect(cancelled).toMatchObject({ subscriptionId: draft.id, cancellationType: 'immediate', status: 'cancelled' })
    expect((await fp.subscriptions.getSubscription(draft.id!)).subscriptionStatus).toBe('cancelled')
  })
})

describe('addons and line items on a live subscription', () => {
  it('adds an addon (prorated), refuses a onetime addon twice, removes it; adds a line item and ends it', async () => {
    const customer = await fp.customers.createCustomer({ externalId: 'sdk-sub-2' })
    const sub = await fp.subscriptions.createSubscription({
      customerId: customer.id,
      planId: catalog.planId,
      currency: 'USD',
      billingCadence: 'RECURRING',
      billingPeriod: 'MONTHLY',
      prorationBehavior: 'create_prorations',
    })
    const added = await fp.subscriptions.addSubscriptionAddon({ subscriptionId: sub.id!, addonId: catalog.addonId, metadata: { by: 'sdk' } })
    expect(added).toMatchObject({ addonId: catalog.addonId, addon: { lookupKey: 'support' } })
    const twice = await failure(fp.subscriptions.addSubscriptionAddon({ subscriptionId: sub.id!, addonId: catalog.addonId }))
    expect(twice.statusCode).toBe(400)
    const withAddon = await fp.subscriptions.getSubscription(sub.id!)
    expect(withAddon.lineItems?.filter((l) => l.entityType === 'addon').map((l) => l.entityId)).toEqual([catalog.addonId])
    // Added a moment after the period began, with create_prorations: the rest of the period is billed next.
    const lines = async () => (await fp.invoices.getInvoicePreview({ subscriptionId: sub.id! }, retrying)).lineItems!.map((l) => [l.displayName, l.amount])
    expect(await lines()).toContainEqual([expect.stringMatching(/^Remaining time on Support/), '5'])

    await fp.subscriptions.removeSubscriptionAddon({ addonAssociationId: added.id!, reason: 'not needed' })
    const [ended] = await fp.subscriptions.getSubscriptionAddonAssociations(sub.id!)
    expect(ended.endDate).toBeTruthy()
    // Removed a moment later: what it ran for rounds to nothing, and the next period no longer bills it.
    expect(await lines()).not.toContainEqual(['Support', '5'])

    const seats = await fp.prices.createPrice({ entityType: 'PLAN', entityId: catalog.planId, currency: 'USD', type: 'FIXED', billingModel: 'FLAT_FEE', billingCadence: 'RECURRING', billingPeriod: 'MONTHLY', invoiceCadence: 'ADVANCE', priceUnitType: 'FIAT', amount: '3', displayName: 'Seat' })
    const line = await fp.subscriptions.createSubscriptionLineItem(sub.id!, { priceId: seats.id, quantity: 2, displayName: 'Extra seats' })
    expect(line).toMatchObject({ subscriptionId: sub.id, priceId: seats.id, quantity: '2', displayName: 'Extra seats' })
    expect((await fp.subscriptions.getSubscriptionV2(sub.id!)).id).toBe(sub.id)
    const gone = await fp.subscriptions.deleteSubscriptionLineItem(line.id!, {})
    expect(gone.id).toBe(line.id)
  })
})

describe('events and usage', () => {
  const at = (secondsAgo: number) => new Date(Date.now() - secondsAgo * 1000).toISOString()
  // Just after the subscription started, so its current period counts them.
  const afterStart = (ms: number) => new Date(Date.parse(catalog.subscribedAt) + ms).toISOString()

  it('ingests one event and a batch, lists them raw, and reads one by id', async () => {
    const one = await fp.events.ingestEvent({ eventId: 'sdk-ev-1', eventName: 'llm.tokens', externalCustomerId: 'sdk-sub-1', timestamp: afterStart(1), properties: { tokens: '1200', model: 'small' } })
    expect(one).toMatchObject({ event_id: 'sdk-ev-1' })
    const bulk = await fp.events.ingestEventsBulk({
      events: [
        { eventId: 'sdk-ev-2', eventName: 'llm.tokens', externalCustomerId: 'sdk-sub-1', timestamp: afterStart(2), properties: { tokens: '300', model: 'large' } },
        { eventId: 'sdk-ev-3', eventName: 'llm.tokens', externalCustomerId: 'sdk-sub-1', timestamp: afterStart(3), properties: { tokens: '500', model: 'large' } },
      ],
    })
    expect(bulk).toBeTypeOf('object')

    const first = await fp.events.listRawEvents({ externalCustomerId: 'sdk-sub-1', eventName: 'llm.tokens', pageSize: 2 })
    expect(first.events?.map((e) => e.id)).toEqual(['sdk-ev-3', 'sdk-ev-2'])
    expect(first).toMatchObject({ hasMore: true, totalCount: 3 })
    const next = await fp.events.listRawEvents({ externalCustomerId: 'sdk-sub-1', pageSize: 2, iterLastKey: first.iterLastKey })
    expect(next.events?.map((e) => e.id)).toEqual(['sdk-ev-1'])
    const large = await fp.events.listRawEvents({ externalCustomerId: 'sdk-sub-1', propertyFilters: { model: ['large'] }, order: 'asc' })
    expect(large.events?.map((e) => e.id)).toEqual(['sdk-ev-2', 'sdk-ev-3'])

    const got = await fp.events.getEvent('sdk-ev-1')
    expect(got.event).toMatchObject({ id: 'sdk-ev-1', eventName: 'llm.tokens', externalCustomerId: 'sdk-sub-1', properties: { tokens: '1200' } })
    expect(got.status).toBe('stored')
  })

  it("reads the usage of the feature's meter and of an event name", async () => {
    const range = { startTime: at(3600), endTime: at(-60) }
    const byMeter = await fp.events.getUsageByMeter({ meterId: catalog.meterId, externalCustomerId: 'sdk-sub-1', ...range }, retrying)
    expect(byMeter).toMatchObject({ eventName: 'llm.tokens', type: 'SUM', value: 2000 })
    const byName = await fp.events.getUsageStatistics({ eventName: 'llm.tokens', aggregationType: 'COUNT', externalCustomerId: 'sdk-sub-1', ...range })
    expect(byName).toMatchObject({ type: 'COUNT', value: 3 })
    const sub = (await fp.subscriptions.querySubscription({ customerId: catalog.customerId, subscriptionStatus: ['active'] })).items![0]
    const charges = await fp.subscriptions.getSubscriptionUsage({ subscriptionId: sub.id! }, retrying)
    // The plan's entitlement includes 1500 tokens (a soft limit: more is allowed and billed): 500 are charged at 0.001.
    expect(charges).toMatchObject({ currency: 'USD', amount: 0.5, charges: [{ meterId: catalog.meterId, quantity: 2000, amount: 0.5 }] })
    const summary = await fp.customers.getCustomerUsageSummary({ customerLookupKey: 'sdk-sub-1' }, retrying)
    expect(summary.customerId).toBe(catalog.customerId)
    expect(summary.features?.map((f) => [f.feature?.id, f.currentUsage, f.totalLimit, f.usagePercent])).toEqual([[catalog.featureId, '2000', 1500, '133.33']])
    const grouped = await fp.events.getUsageStatistics({ eventName: 'llm.tokens', aggregationType: 'SUM', propertyName: 'tokens', externalCustomerId: 'sdk-sub-1', windowSize: 'DAY', ...range })
    expect(grouped.value).toBe(2000)
    expect(grouped.results?.length).toBeGreaterThan(0)
  })

  it("reads the customer's usage analytics by feature and model, priced as its invoice prices it", async () => {
    const range = { startTime: at(3600), endTime: at(-60) }
    const analytics = await fp.events.getUsageAnalytics({ externalCustomerId: 'sdk-sub-1', groupBy: ['properties.model'], ...range }, retrying)
    const byModel = Object.fromEntries((analytics.items ?? []).map((i) => [i.properties?.model, [i.featureId, i.totalUsage, i.eventCount]]))
    expect(byModel).toEqual({ small: [catalog.featureId, '1200', 1], large: [catalog.featureId, '800', 2] })
    // 2000 tokens, 1500 included, 500 over at 0.001: the same 0.50 the subscription's usage charges above.
    expect(analytics).toMatchObject({ currency: 'USD', totalCost: '0.5' })
  })
})
