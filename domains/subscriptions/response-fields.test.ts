// Fields of the spec's responses that come from other records: a subscription's latest_invoice,
// coupon_associations, credit_grants and plan_prices_out_of_sync; its line items' commitment_* fields;
// a price's display_amount, pricing_unit, display_price_unit_amount, parent_price_id and its meter and group.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../core/clock.ts'
import { created, customer, fixedPrice, meter, plan, subscribed, usagePrice } from '../../test/catalog.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { call } from '../../test/wallets.ts'

const clock = fixedClock('2025-03-10T12:00:00Z')
let h: Harness

beforeAll(async () => {
  h = await startHarness({ clock, env: { KAFKA_BROKERS: '', INVOICE_GRACE_PERIOD_MINUTES: '0' } })
})
afterAll(() => h?.stop())

describe('price response fields', () => {
  it('display_amount with the currency symbol; a custom unit as pricing_unit; parent_price_id', async () => {
    const p = await plan(h, {
      prices: [
        fixedPrice('12.00', { display_name: 'Seat' }),
        fixedPrice('0', { display_name: 'Credits', amount: undefined, price_unit_type: 'CUSTOM', price_unit: 'CRD', price_unit_amount: '250', conversion_rate: '0.01' }),
      ],
    })
    const [seat, credits] = p.prices
    expect(seat).toMatchObject({ display_amount: '$12.00', pricing_unit: null, parent_price_id: null })
    // 250 CRD at 0.01 USD each: 2.50 USD. A unit of the price's own (not in the catalog): no id, shown by its code.
    expect(credits).toMatchObject({ amount: '2.5', display_amount: '$2.50', pricing_unit: { code: 'CRD', base_currency: 'USD', conversion_rate: '0.01' } })
    expect(credits).toMatchObject({ price_unit_id: null, display_price_unit_amount: '250 CRD' })
    expect(seat).toMatchObject({ price_unit_id: null, display_price_unit_amount: null })
    expect(await call(h, 'GET', `/v1/prices/${seat.id}`)).toMatchObject({ display_amount: '$12.00', pricing_unit: null })
    const listed = (await call(h, 'GET', `/v1/prices?plan_ids=${p.id}`)).items
    expect(listed.map((x: any) => x.display_amount).sort()).toEqual(['$12.00', '$2.50'])
  })
})

describe('a price embeds its meter and group', () => {
  it('answers meter and group with the price on the price routes; null when it has none', async () => {
    const m = await meter(h)
    const group = await created(h, '/v1/groups', { name: 'Compute', entity_type: 'price' })
    const p = await plan(h, { prices: [usagePrice(m.id, '0.02', { group_id: group.id }), fixedPrice('5.00')] })
    const [usage, fixed] = p.prices
    const got = await call(h, 'GET', `/v1/prices/${usage.id}`)
    expect(got.meter).toMatchObject({ id: m.id, name: m.name, event_name: m.event_name, aggregation: { type: 'COUNT' } })
    expect(got.group).toMatchObject({ id: group.id, name: 'Compute', entity_type: 'price', entity_ids: [usage.id] })
    expect(await call(h, 'GET', `/v1/prices/${fixed.id}`)).toMatchObject({ meter: null, group: null })
    const listed = (await call(h, 'GET', `/v1/prices?plan_ids=${p.id}`)).items
    expect(listed.find((x: any) => x.id === usage.id)).toMatchObject({ meter: { id: m.id }, group: { id: group.id } })
  })
})

describe('subscription response fields', () => {
  it('latest_invoice, coupon_associations, credit_grants, plan_prices_out_of_sync and line items without commitments of their own', async () => {
    const p = await plan(h, { prices: [fixedPrice('20.00', { invoice_cadence: 'ADVANCE' })] })
    const grant = await call(h, 'POST', '/v1/creditgrants', { name: 'Welcome', scope: 'PLAN', plan_id: p.id, credits: '5', cadence: 'ONETIME' }, 201)
    const coupon = await call(h, 'POST', '/v1/coupons', { name: 'Ten off', type: 'percentage', cadence: 'forever', percentage_off: '10' }, 201)
    const c = await customer(h)
    const sub = await subscribed(h, { customer_id: c.id, plan_id: p.id, start_date: '2025-03-01T00:00:00Z', coupons: [coupon.id], collection_method: 'send_invoice' })
    expect(sub).toMatchObject({ latest_invoice: null, coupon_associations: [], plan_prices_out_of_sync: false })
    expect(sub.credit_grants.map((g: any) => g.id)).toEqual([grant.id])

    await call(h, 'POST', '/v1/jobs/billing-run/run')
    const got = await call(h, 'GET', `/v1/subscriptions/${sub.id}`)
    // March in advance: 20.00 less 10% = 18.00.
    expect(got.latest_invoice).toMatchObject({ subscription_id: sub.id, billing_reason: 'SUBSCRIPTION_CREATE', total: '18' })
    expect(got.coupon_associations).toHaveLength(1)
    expect(got.coupon_associations[0]).toMatchObject({ coupon_id: coupon.id, subscription_id: sub.id, coupon: { id: coupon.id, percentage_off: '10' } })
    expect(got.line_items[0]).toMatchObject({ commitment_amount: null, commitment_type: null, commitment_true_up_enabled: false, commitment_windowed: false, price_unit: null, price_unit_id: null })

    // A new price on the plan: the subscription's lines no longer match its plan.
    await call(h, 'POST', '/v1/prices', { ...fixedPrice('5.00'), plan_id: p.id }, 201)
    expect((await call(h, 'GET', `/v1/subscriptions/${sub.id}`)).plan_prices_out_of_sync).toBe(true)
    expect((await call(h, 'GET', `/v1/subscriptions/${sub.id}/v2`)).plan_prices_out_of_sync).toBe(true)

    const listed = (await call(h, 'GET', `/v1/subscriptions?customer_id=${c.id}`)).items
    expect(listed[0]).toMatchObject({ id: sub.id, latest_invoice: { id: got.latest_invoice.id }, credit_grants: [{ id: grant.id }] })
  })
})
