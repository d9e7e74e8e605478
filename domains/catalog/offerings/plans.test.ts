import { describe, expect, it } from 'vitest'
import { created, feature, fixedPrice, meter, plan, twoTenants, unique, usagePrice } from '../../../test/catalog.ts'

const t = twoTenants()

describe('plans and prices', () => {
  it('expands the credit grants of a plan on GET', async () => {
    const p = await plan(t.h, { lookup_key: unique('credits') })
    const g = await t.h.http('POST', '/v1/creditgrants', {
      body: { name: 'Monthly credits', scope: 'PLAN', plan_id: p.id, credits: '100', cadence: 'RECURRING', period: 'MONTHLY', expiration_type: 'NEVER' },
    })
    expect(g.status).toBe(201)
    const got = await t.h.http('GET', `/v1/plans/${p.id}`)
    expect(got.body.credit_grants.map((c: { id: string; credits: string }) => [c.id, c.credits])).toEqual([[g.body.id, '100']])
  })

  it('creates a plan with prices and entitlements in one request and expands them on GET', async () => {
    const m = await meter(t.h)
    const sso = await feature(t.h, 'boolean')
    const calls = await feature(t.h, 'metered')
    const p = await plan(t.h, {
      lookup_key: unique('pro'),
      display_order: 2,
      prices: [
        fixedPrice('49.99', { trial_period_days: 14, lookup_key: unique('pro-monthly') }),
        usagePrice(m.id, '0.0000015'),
        { currency: 'USD', type: 'USAGE', billing_model: 'TIERED', billing_period: 'MONTHLY', meter_id: m.id, tier_mode: 'VOLUME', tiers: [{ up_to: 1000, unit_amount: '0.10' }, { up_to: null, unit_amount: '0.05', flat_amount: '1.50' }] },
        { currency: 'USD', type: 'USAGE', billing_model: 'PACKAGE', billing_period: 'MONTHLY', meter_id: m.id, amount: '5', transform_quantity: { divide_by: 1000 } },
        fixedPrice('100', { billing_period: 'ONETIME' }),
      ],
      entitlements: [
        { feature_id: sso.id },
        { feature_id: calls.id, usage_limit: 10000, usage_reset_period: 'MONTHLY', is_soft_limit: true },
      ],
    })
    const got = await t.h.http('GET', `/v1/plans/${p.id}`)
    expect(got.status).toBe(200)
    expect(got.body).toMatchObject({ id: p.id, display_order: 2, credit_grants: [] })
    expect(got.body.prices).toHaveLength(5)
    expect(got.body.prices[0]).toMatchObject({ amount: '49.99', invoice_cadence: 'ADVANCE', trial_period_days: 14, entity_type: 'PLAN', entity_id: p.id })
    expect(got.body.prices[1]).toMatchObject({ amount: '0.0000015', invoice_cadence: 'ARREAR', meter_id: m.id })
    expect(got.body.prices[2].tiers).toEqual([
      { up_to: 1000, unit_amount: '0.1', flat_amount: '0' },
      { up_to: null, unit_amount: '0.05', flat_amount: '1.5' },
    ])
    expect(got.body.prices[3].transform_quantity).toEqual({ divide_by: 1000, round: 'up' })
    expect(got.body.prices[4]).toMatchObject({ billing_period: 'ONETIME', billing_cadence: 'ONETIME' })
    expect(got.body.entitlements.map((e: any) => [e.feature.id, e.usage_limit, e.is_soft_limit])).toEqual([
      [sso.id, null, false],
      [calls.id, 10000, true],
    ])
    const listed = await t.h.http('GET', `/v1/plans?plan_ids=${p.id}`)
    expect(listed.body.items[0].prices).toHaveLength(5)
  })

  it('refuses a plan whose price breaks a rule and stores nothing of it', async () => {
    const name = unique('broken')
    const res = await t.h.http('POST', '/v1/plans', { body: { name, prices: [fixedPrice('10'), { ...fixedPrice('1'), invoice_cadence: 'ARREAR', type: 'USAGE' }] } })
    expect(res.status).toBe(400)
    expect(res.body.details).toHaveProperty(['prices[1].meter_id'])
    expect((await t.h.http('GET', `/v1/plans?name=${name}`)).body.items).toEqual([])
  })

  it('refuses a plan whose entitlement does not fit its feature, naming the element', async () => {
    const f = await feature(t.h, 'static')
    const res = await t.h.http('POST', '/v1/plans', { body: { name: unique('p'), entitlements: [{ feature_id: f.id }] } })
    expect(res.status).toBe(400)
    expect(res.body.details).toHaveProperty(['entitlements[0].static_value'])
  })

  it('rejects amounts that are not decimal strings', async () => {
    for (const amount of ['1e3', '.5', 10, '-1', ' 1']) {
      const res = await t.h.http('POST', '/v1/plans', { body: { name: 'x', prices: [fixedPrice(amount as string)] } })
      expect(res.status, String(amount)).toBe(400)
      expect(Object.keys(res.body.details)[0]).toMatch(/^prices\[0\]\.amount$/)
    }
  })

  it('creates prices on their own, finds them by lookup key and keeps their billing terms fixed', async () => {
    const p = await plan(t.h)
    const key = unique('lk')
    const price = await created(t.h, '/v1/prices', { plan_id: p.id, ...fixedPrice('5.50', { lookup_key: key, currency: 'eur' }) })
    expect(price).toMatchObject({ currency: 'EUR', amount: '5.5', entity_id: p.id })
    expect((await t.h.http('GET', `/v1/prices/lookup/${key}`)).body.id).toBe(price.id)
    const rename = await t.h.http('PUT', `/v1/prices/${price.id}`, { body: { display_name: 'Seat', version: 1 } })
    expect(rename.body).toMatchObject({ display_name: 'Seat', version: 2 })
    const reprice = await t.h.http('PUT', `/v1/prices/${price.id}`, { body: { amount: '1' } })
    expect(reprice.status).toBe(400)
    expect(reprice.body.details).toHaveProperty('amount')
    const dup = await t.h.http('POST', '/v1/prices', { body: { plan_id: p.id, ...fixedPrice('1', { lookup_key: key }) } })
    expect(dup.body).toMatchObject({ code: 'already_exists', details: { lookup_key: key } })
    await t.h.http('DELETE', `/v1/prices/${price.id}`)
    expect((await t.h.http('GET', `/v1/prices/lookup/${key}`)).status).toBe(404)
    expect((await t.h.http('GET', `/v1/plans/${p.id}`)).body.prices).toEqual([])
  })

  it('checks the meter of a usage price and the plan a price belongs to', async () => {
    const p = await plan(t.h)
    const noMeter = await t.h.http('POST', '/v1/prices', { body: { plan_id: p.id, ...usagePrice('meter_nope') } })
    expect(noMeter.status).toBe(404)
    expect(noMeter.body.details).toMatchObject({ meter_id: 'meter_nope' })
    const noPlan = await t.h.http('POST', '/v1/prices', { body: { plan_id: 'plan_nope', ...fixedPrice() } })
    expect(noPlan.status).toBe(404)
    const noOwner = await t.h.http('POST', '/v1/prices', { body: fixedPrice() })
    expect(noOwner.status).toBe(400)
    expect(noOwner.body.details).toHaveProperty('plan_id')
  })

  it('filters prices by plan, currency and type', async () => {
    const m = await meter(t.h)
    const p = await plan(t.h, { prices: [fixedPrice('1'), usagePrice(m.id), fixedPrice('2', { currency: 'EUR' })] })
    const usd = await t.h.http('GET', `/v1/prices?plan_ids=${p.id}&currency=USD`)
    expect(usd.body.pagination.total).toBe(2)
    const search = await t.h.http('POST', '/v1/prices/search', { body: { plan_ids: [p.id], type: 'USAGE' } })
    expect(search.body.items.map((x: any) => x.meter_id)).toEqual([m.id])
  })

  it('updates a plan with a version and deletes it softly', async () => {
    const p = await plan(t.h, { prices: [fixedPrice()] })
    const ok = await t.h.http('PUT', `/v1/plans/${p.id}`, { body: { description: 'Best', version: 1 } })
    expect(ok.body).toMatchObject({ description: 'Best', version: 2, prices: [{ amount: '10' }] })
    expect((await t.h.http('PUT', `/v1/plans/${p.id}`, { body: { description: 'x', version: 1 } })).body.code).toBe('version_conflict')
    expect((await t.h.http('DELETE', `/v1/plans/${p.id}`)).body.status).toBe('deleted')
    expect((await t.h.http('GET', `/v1/plans?plan_ids=${p.id}`)).body.items).toEqual([])
    expect((await t.h.http('GET', `/v1/plans?plan_ids=${p.id}&status=deleted`)).body.items).toHaveLength(1)
  })

  it('gives addons their prices and entitlements and requires a lookup key', async () => {
    const f = await feature(t.h, 'boolean')
    const addon = await created(t.h, '/v1/addons', { name: 'Extra seats', lookup_key: unique('addon'), prices: [fixedPrice('3')], entitlements: [{ feature_id: f.id }] })
    expect(addon.id).toMatch(/^addon_/)
    expect(addon.prices[0]).toMatchObject({ entity_type: 'ADDON', entity_id: addon.id })
    expect(addon).not.toHaveProperty('credit_grants')
    const ents = await t.h.http('GET', `/v1/addons/${addon.id}/entitlements`)
    expect(ents.body.items.map((e: any) => e.feature_id)).toEqual([f.id])
    const noKey = await t.h.http('POST', '/v1/addons', { body: { name: 'x' } })
    expect(noKey.body.details).toHaveProperty('lookup_key')
  })

  it("answers 404 for another tenant's plan, price and addon on every route", async () => {
    const p = await plan(t.h, { prices: [fixedPrice('1', { lookup_key: unique('iso') })] })
    const price = p.prices[0]
    const addon = await created(t.h, '/v1/addons', { name: 'a', lookup_key: unique('iso-addon') })
    const routes: [string, string, unknown?][] = [
      ['GET', `/v1/plans/${p.id}`],
      ['PUT', `/v1/plans/${p.id}`, { name: 'x' }],
      ['DELETE', `/v1/plans/${p.id}`],
      ['GET', `/v1/plans/${p.id}/entitlements`],
      ['GET', `/v1/prices/${price.id}`],
      ['PUT', `/v1/prices/${price.id}`, { display_name: 'x' }],
      ['DELETE', `/v1/prices/${price.id}`],
      ['GET', `/v1/prices/lookup/${price.lookup_key}`],
      ['POST', '/v1/prices', { plan_id: p.id, ...fixedPrice() }],
      ['GET', `/v1/addons/${addon.id}`],
      ['PUT', `/v1/addons/${addon.id}`, { name: 'x' }],
      ['DELETE', `/v1/addons/${addon.id}`],
      ['GET', `/v1/addons/${addon.id}/entitlements`],
    ]
    for (const [method, path, body] of routes) {
      const res = await t.h.http(method, path, { body, key: t.other })
      expect(res.status, `${method} ${path}`).toBe(404)
    }
    for (const path of ['/v1/plans/search', '/v1/prices/search', '/v1/addons/search']) {
      const res = await t.h.http('POST', path, { body: {}, key: t.other })
      expect(res.body.items, path).toEqual([])
    }
    expect((await t.h.http('GET', `/v1/plans/${p.id}`)).body).toMatchObject({ status: 'published', version: 1 })
  })
})
