// Flexprice's SDK against cost sheets and cost analytics: the eight costs methods, a sheet's unit cost set with
// prices.createPrice (entityType COSTSHEET, as Flexprice does it), and the margin of a customer's usage — SDK calls only.
// 2,500 tokens billed at 0.001 (revenue 2.50) cost 0.0004 each (1.00): margin 1.50, 60 % of revenue, ROI 1.5 (150 %).
import { beforeAll, describe, expect, it } from 'vitest'
import type { Flexprice } from '@flexprice/sdk'
import { twoTenants } from '../catalog.ts'
import { failure, sdk } from './client.ts'

const t = twoTenants({ env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0' } })
let fp: Flexprice
/** Usage of a new meter answers 503 until its backfill ran; the SDK retries 503 when asked to. */
const retrying = { retries: { strategy: 'backoff' as const, backoff: { initialInterval: 100, maxInterval: 500, exponent: 1.5, maxElapsedTime: 20_000 }, retryConnectionErrors: false } }
const ago = (seconds: number) => new Date(Date.now() - seconds * 1000).toISOString()
const ids = {} as { meterId: string; featureId: string }

beforeAll(async () => {
  fp = sdk(t.h)
  const customer = await fp.customers.createCustomer({ externalId: 'sdk-cost-1', name: 'Margins Inc' })
  const feature = await fp.features.createFeature({ name: 'Tokens', type: 'metered', meter: { name: 'Tokens', eventName: 'llm.cost', aggregation: { type: 'SUM', field: 'tokens' }, resetUsage: 'BILLING_PERIOD' } })
  Object.assign(ids, { meterId: feature.meterId, featureId: feature.id })
  const plan = await fp.plans.createPlan({ name: 'Tokens plan' })
  await fp.prices.createPrice({ entityType: 'PLAN', entityId: plan.id!, currency: 'USD', type: 'USAGE', billingModel: 'FLAT_FEE', billingCadence: 'RECURRING', billingPeriod: 'MONTHLY', invoiceCadence: 'ARREAR', priceUnitType: 'FIAT', amount: '0.001', meterId: feature.meterId })
  await fp.subscriptions.createSubscription({ customerId: customer.id!, planId: plan.id!, currency: 'USD', billingCadence: 'RECURRING', billingPeriod: 'MONTHLY', startDate: ago(7200) })
  await fp.events.ingestEventsBulk({
    events: [
      { eventId: 'sdk-cost-ev-1', eventName: 'llm.cost', externalCustomerId: 'sdk-cost-1', timestamp: ago(3600), properties: { tokens: '1000' } },
      { eventId: 'sdk-cost-ev-2', eventName: 'llm.cost', externalCustomerId: 'sdk-cost-1', timestamp: ago(1800), properties: { tokens: '1500' } },
    ],
  })
})

describe('costs', { timeout: 30_000 }, () => {
  it('creates a sheet, prices a meter on it, and reads it back active, by id and by search', async () => {
    const { costsheet } = await fp.costs.createCostsheet({ name: 'Inference', lookupKey: 'inference', description: 'GPU time', metadata: { vendor: 'gpu-co' } })
    expect(costsheet).toMatchObject({ name: 'Inference', lookupKey: 'inference', description: 'GPU time', metadata: { vendor: 'gpu-co' }, status: 'published' })
    expect(costsheet!.id).toMatch(/^costsheet_/)
    const price = await fp.prices.createPrice({ entityType: 'COSTSHEET', entityId: costsheet!.id!, currency: 'USD', type: 'USAGE', billingModel: 'FLAT_FEE', billingCadence: 'RECURRING', billingPeriod: 'MONTHLY', invoiceCadence: 'ARREAR', priceUnitType: 'FIAT', amount: '0.0004', meterId: ids.meterId })
    expect(price).toMatchObject({ entityType: 'COSTSHEET', entityId: costsheet!.id, amount: '0.0004' })

    const active = await fp.costs.getActiveCostsheet()
    expect(active).toMatchObject({ id: costsheet!.id, name: 'Inference' })
    expect(active.prices?.map((p) => p.id)).toEqual([price.id])
    expect((await fp.costs.getCostsheet(costsheet!.id!, 'prices')).costsheet?.prices?.map((p) => p.meterId)).toEqual([ids.meterId])

    const found = await fp.costs.queryCostsheet({ costsheetIDs: [costsheet!.id!], queryFilter: { limit: 10, expand: 'prices' } })
    expect(found.items?.map((s) => [s.id, s.prices?.length])).toEqual([[costsheet!.id, 1]])
    expect(found.pagination).toMatchObject({ total: 1, limit: 10 })
    expect((await fp.costs.queryCostsheet({ lookupKey: 'nothing-here' })).items).toEqual([])

    const renamed = await fp.costs.updateCostsheet(costsheet!.id!, { name: 'Inference (H100)' })
    expect(renamed.costsheet).toMatchObject({ id: costsheet!.id, name: 'Inference (H100)', lookupKey: 'inference' })
  })

  it('reads revenue, cost and margin over the last 7 days, in both versions', async () => {
    const analytics = await fp.costs.getDetailedCostAnalytics({ externalCustomerId: 'sdk-cost-1' }, retrying)
    expect(analytics).toMatchObject({ currency: 'USD', totalRevenue: '2.5', totalCost: '1', margin: '1.5', marginPercent: '60', roi: '1.5', roiPercent: '150' })
    expect(analytics.costAnalytics).toHaveLength(1)
    expect(analytics.costAnalytics![0]).toMatchObject({ meterId: ids.meterId, externalCustomerId: 'sdk-cost-1', totalQuantity: '2500', totalEvents: 2, totalCost: '1', currency: 'USD' })
    const range = { startTime: ago(7200), endTime: ago(0), featureIds: [ids.featureId] }
    expect(await fp.costs.getDetailedCostAnalyticsV2(range)).toMatchObject({ totalRevenue: '2.5', totalCost: '1', marginPercent: '60' })
  })

  it('deletes the sheet: it is no longer active, and another tenant never saw it', async () => {
    const { costsheet } = await fp.costs.createCostsheet({ name: 'Scratch' })
    expect((await failure(sdk(t.h, t.other).costs.getCostsheet(costsheet!.id!))).statusCode).toBe(404)
    expect(await fp.costs.deleteCostsheet(costsheet!.id!)).toEqual({ id: costsheet!.id, message: 'Costsheet deleted successfully' })
    expect((await fp.costs.getActiveCostsheet()).name).toBe('Inference (H100)')
    expect((await failure(sdk(t.h, t.other).costs.getActiveCostsheet())).statusCode).toBe(404)
  })
})
