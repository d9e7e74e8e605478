// Flexprice's SDK against price units: the seven priceUnits methods, a price set in a unit of the catalog
// (price_unit_config, as the SDK sends it), what a caller reads back and an invoice billed from it — SDK calls,
// and plain HTTP for the fields the SDK cannot send (price_unit_id, conversion_rate on a price).
import { describe, expect, it } from 'vitest'
import { twoTenants } from '../catalog.ts'
import { failure, sdk } from './client.ts'
import { runNamedJob } from '../wallets.ts'

const t = twoTenants()
const fp = () => sdk(t.h)

describe('priceUnits', () => {
  it('creates, reads by id and by code, lists, searches, updates and deletes a unit', async () => {
    const unit = await fp().priceUnits.createPriceUnit({ name: 'Credits', code: 'crd', symbol: '₵', baseCurrency: 'usd', conversionRate: '0.01', metadata: { team: 'ai' } })
    // Codes and currencies are kept upper case, as price_unit and currency are on prices.
    expect(unit).toMatchObject({ name: 'Credits', code: 'CRD', symbol: '₵', baseCurrency: 'USD', conversionRate: '0.01', metadata: { team: 'ai' }, status: 'published' })
    expect(unit.id).toMatch(/^price_unit_/)

    expect((await fp().priceUnits.getPriceUnit(unit.id!)).code).toBe('CRD')
    expect((await fp().priceUnits.getPriceUnitByCode('crd')).id).toBe(unit.id)
    const listed = await fp().priceUnits.listPriceUnits({ limit: 10 })
    expect(listed.items?.map((u) => u.id)).toContain(unit.id)
    const found = await fp().priceUnits.queryPriceUnit({ priceUnitIds: [unit.id!] })
    expect(found.items?.map((u) => u.id)).toEqual([unit.id])
    expect(found.pagination).toMatchObject({ total: 1 })

    expect(await fp().priceUnits.updatePriceUnit(unit.id!, { name: 'AI credits' })).toMatchObject({ id: unit.id, name: 'AI credits', conversionRate: '0.01' })

    await fp().priceUnits.deletePriceUnit(unit.id!)
    expect((await fp().priceUnits.getPriceUnit(unit.id!)).status).toBe('deleted')
    expect((await failure(fp().priceUnits.getPriceUnitByCode('CRD'))).statusCode).toBe(404)
    // Another tenant does not see it.
    expect((await failure(sdk(t.h, t.other).priceUnits.getPriceUnit(unit.id!))).statusCode).toBe(404)
  })

  it('refuses a second unit with the same code, a rate of zero and a bad currency, naming the field', async () => {
    await fp().priceUnits.createPriceUnit({ name: 'Tokens', code: 'TOK', symbol: 'T', baseCurrency: 'USD', conversionRate: '0.001' })
    const twice = await failure(fp().priceUnits.createPriceUnit({ name: 'Tokens again', code: 'tok', symbol: 'T', baseCurrency: 'USD', conversionRate: '0.001' }))
    expect(twice.statusCode).toBe(409)
    const zero = await failure(fp().priceUnits.createPriceUnit({ name: 'Zero', code: 'ZRO', symbol: 'Z', baseCurrency: 'USD', conversionRate: '0' }))
    expect(JSON.parse(zero.body)).toMatchObject({ code: 'validation_error', details: { conversion_rate: expect.any(String) } })
    const currency = await failure(fp().priceUnits.createPriceUnit({ name: 'Bad', code: 'BAD', symbol: 'B', baseCurrency: 'US', conversionRate: '1' }))
    expect(JSON.parse(currency.body)).toMatchObject({ code: 'validation_error', details: { base_currency: expect.any(String) } })
  })

  /** A plan's monthly fixed price of `amount` in the unit `code`, as the SDK sends it (price_unit_config). */
  const unitPrice = (planId: string, code: string, amount: string) =>
    fp().prices.createPrice({ entityType: 'PLAN', entityId: planId, currency: 'USD', type: 'FIXED', billingModel: 'FLAT_FEE', billingCadence: 'RECURRING', billingPeriod: 'MONTHLY', invoiceCadence: 'ADVANCE', priceUnitType: 'CUSTOM', priceUnitConfig: { priceUnit: code, amount } })

  it('prices a plan in a unit: the rate and code come from the unit, the amount is converted; a unit in use is not deleted', async () => {
    const unit = await fp().priceUnits.createPriceUnit({ name: 'Gems', code: 'GEM', symbol: '◆', baseCurrency: 'USD', conversionRate: '0.05' })
    const plan = await fp().plans.createPlan({ name: 'Gem plan' })
    const price = await unitPrice(plan.id!, 'GEM', '250')
    // 250 GEM at 0.05 USD each: 12.50 USD.
    expect(price).toMatchObject({ priceUnitType: 'CUSTOM', priceUnit: 'GEM', priceUnitId: unit.id, priceUnitAmount: '250', conversionRate: '0.05', amount: '12.5', displayAmount: '$12.50', displayPriceUnitAmount: '◆250' })
    expect(price.pricingUnit).toMatchObject({ id: unit.id, code: 'GEM', symbol: '◆', baseCurrency: 'USD', conversionRate: '0.05' })
    expect((await fp().prices.getPrice(price.id!)).priceUnitId).toBe(unit.id)

    const inUse = await failure(fp().priceUnits.deletePriceUnit(unit.id!))
    expect(JSON.parse(inUse.body)).toMatchObject({ code: 'invalid_operation', details: { price_unit_id: unit.id, prices: 1 } })
    await fp().prices.deletePrice(price.id!, {})
    await fp().priceUnits.deletePriceUnit(unit.id!)
  })

  it("bills a subscription at the unit's rate: the line in the currency, rounded once, and in the unit", async () => {
    const unit = await fp().priceUnits.createPriceUnit({ name: 'Tokens', code: 'TKN', symbol: 'ŧ', baseCurrency: 'USD', conversionRate: '0.003' })
    const plan = await fp().plans.createPlan({ name: 'Token plan' })
    await unitPrice(plan.id!, 'TKN', '7')
    const customer = await fp().customers.createCustomer({ externalId: 'sdk-unit-cust' })
    const sub = await fp().subscriptions.createSubscription({ customerId: customer.id!, planId: plan.id!, currency: 'USD', billingCadence: 'RECURRING', billingPeriod: 'MONTHLY' })
    expect((await fp().subscriptions.getSubscription(sub.id!)).lineItems![0]).toMatchObject({ priceUnit: 'TKN', priceUnitId: unit.id })
    await runNamedJob(t.h, 'billing-run')
    const [invoice] = (await fp().invoices.queryInvoice({ subscriptionId: sub.id })).items!
    // 7 TKN × 0.003 = 0.021 USD, rounded half up once: 0.02 USD; in the unit 0.02 ÷ 0.003 = 6.666… → 6.67 TKN.
    expect(invoice.total).toBe('0.02')
    expect(invoice.lineItems![0]).toMatchObject({ amount: '0.02', priceUnit: 'TKN', priceUnitId: unit.id, priceUnitAmount: '6.67' })
  })

  it("refuses a price whose currency or rate is not its unit's, and a unit that does not exist, naming the field", async () => {
    const unit = await fp().priceUnits.createPriceUnit({ name: 'Points', code: 'PTS', symbol: 'P', baseCurrency: 'EUR', conversionRate: '0.1' })
    const plan = await fp().plans.createPlan({ name: 'Points plan' })
    const price = { entity_type: 'PLAN', entity_id: plan.id, type: 'FIXED', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', price_unit_type: 'CUSTOM', price_unit_amount: '10' }
    const refused = async (body: Record<string, unknown>) => {
      const res = await t.h.http('POST', '/v1/prices', { body: { ...price, ...body } })
      return [res.status, Object.keys(res.body.details ?? {})]
    }
    expect(await refused({ currency: 'USD', price_unit_id: unit.id })).toEqual([400, ['currency']])
    expect(await refused({ currency: 'EUR', price_unit: 'PTS', conversion_rate: '0.2' })).toEqual([400, ['conversion_rate']])
    expect(await refused({ currency: 'EUR', price_unit_id: unit.id, price_unit: 'GEM' })).toEqual([400, ['price_unit']])
    expect(await refused({ currency: 'EUR', price_unit_id: 'price_unit_nope' })).toEqual([404, ['id', 'price_unit_id']])
    // The same rate, or none: the unit's is taken. 10 PTS × 0.1 = 1.00 EUR.
    const made = await t.h.http('POST', '/v1/prices', { body: { ...price, currency: 'EUR', price_unit_id: unit.id, conversion_rate: '0.10' } })
    expect([made.status, made.body.amount, made.body.price_unit, made.body.display_price_unit_amount]).toEqual([201, '1', 'PTS', 'P10'])
  })

})

describe('a price read through the SDK', () => {
  it('embeds its meter and group', async () => {
    const feature = await fp().features.createFeature({ name: 'Unit calls', type: 'metered', meter: { name: 'Unit calls', eventName: 'unit.call', aggregation: { type: 'COUNT' }, resetUsage: 'BILLING_PERIOD' } })
    const group = await fp().groups.createGroup({ name: 'Calls', entityType: 'price', lookupKey: 'unit-calls' })
    const plan = await fp().plans.createPlan({ name: 'Calls plan' })
    const price = await fp().prices.createPrice({ entityType: 'PLAN', entityId: plan.id!, currency: 'USD', type: 'USAGE', billingModel: 'FLAT_FEE', billingCadence: 'RECURRING', billingPeriod: 'MONTHLY', invoiceCadence: 'ARREAR', priceUnitType: 'FIAT', amount: '0.01', meterId: feature.meterId!, groupId: group.id! })
    const got = await fp().prices.getPrice(price.id!)
    expect(got.meter).toMatchObject({ id: feature.meterId, eventName: 'unit.call' })
    expect(got.group).toMatchObject({ id: group.id, name: 'Calls' })
    expect((await fp().prices.queryPrice({ planIds: [plan.id!] })).items?.[0].meter?.id).toBe(feature.meterId)
  })
})
