import { beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../core/clock.ts'
import { created, customer, feature, fixedPrice, plan, subscribed, twoTenants, unique } from '../../test/catalog.ts'
import { toWire } from '../records/wire.ts'
import { customerEntitlements, type EntitlementQuery } from './entitlements.ts'

const NOW = '2025-01-15T10:00:00.000Z'
const t = twoTenants({ clock: fixedClock(NOW) })
let calls: any
let sso: any
let support: any
let audit: any

beforeAll(async () => {
  ;[calls, sso, support, audit] = await Promise.all([feature(t.h, 'metered'), feature(t.h, 'boolean'), feature(t.h, 'static'), feature(t.h, 'boolean')])
})

const subscribe = (body: Record<string, unknown>) => subscribed(t.h, body)
const entitlements = (customerId: string, query = '', key?: string) => t.h.http('GET', `/v1/customers/${customerId}/entitlements${query}`, { key })
const byFeature = (body: any) => Object.fromEntries(body.features.map((f: any) => [f.feature.id, f]))
/** The response as sent: status, content type and the body's bytes. */
const raw = async (path: string) => {
  const res = await fetch(t.h.baseUrl + path, { headers: { 'x-api-key': t.h.key } })
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() }
}

describe('GET /v1/customers/{id}/entitlements', () => {
  let c: any
  let pro: any
  let starter: any
  let subPro: any
  let subStarter: any
  let addon: any

  beforeAll(async () => {
    c = await customer(t.h)
    pro = await plan(t.h, {
      name: 'Pro',
      prices: [fixedPrice('49')],
      entitlements: [
        { feature_id: calls.id, usage_limit: 1000, usage_reset_period: 'MONTHLY', is_soft_limit: true },
        { feature_id: sso.id, is_enabled: false },
        { feature_id: support.id, static_value: 'email' },
      ],
    })
    starter = await plan(t.h, {
      name: 'Starter',
      prices: [fixedPrice('9')],
      entitlements: [
        { feature_id: calls.id, usage_limit: 200, usage_reset_period: 'DAILY' },
        { feature_id: support.id, static_value: 'chat' },
      ],
    })
    addon = await created(t.h, '/v1/addons', {
      name: 'Boost',
      lookup_key: unique('boost'),
      prices: [fixedPrice('5')],
      entitlements: [
        { feature_id: calls.id, usage_limit: 500, usage_reset_period: 'MONTHLY', is_soft_limit: true },
        { feature_id: sso.id, is_enabled: true },
      ],
    })
    subPro = await subscribe({ customer_id: c.id, plan_id: pro.id, addons: [{ addon_id: addon.id, quantity: 2 }] })
    subStarter = await subscribe({ customer_id: c.id, plan_id: starter.id })
  })

  it('merges every live subscription and addon, feature by feature, with the sources', async () => {
    const res = await entitlements(c.id)
    expect(res.status).toBe(200)
    expect(res.body.customer_id).toBe(c.id)
    expect(res.body.features.map((f: any) => f.feature.id)).toEqual([calls.id, sso.id, support.id])
    const f = byFeature(res.body)
    // Limits add (1000 + 200 + 500 × 2 addons); one hard source (Starter) keeps it hard; the first source's reset period.
    expect(f[calls.id].entitlement).toEqual({ is_enabled: true, usage_limit: 2200, is_soft_limit: false, usage_reset_period: 'MONTHLY', static_values: [] })
    expect(f[calls.id].sources.map((s: any) => [s.entity_type, s.entity_name, s.subscription_id, s.usage_limit, s.quantity])).toEqual([
      ['plan', 'Pro', subPro.id, 1000, 1],
      ['plan', 'Starter', subStarter.id, 200, 1],
      ['addon', 'Boost', subPro.id, 500, 2],
    ])
    // Pro disables SSO, the addon enables it: enabled.
    expect(f[sso.id].entitlement).toMatchObject({ is_enabled: true, usage_limit: null })
    expect(f[sso.id].sources.map((s: any) => s.is_enabled)).toEqual([false, true])
    expect(f[support.id].entitlement.static_values).toEqual(['email', 'chat'])
    expect(f[calls.id].feature).toMatchObject({ id: calls.id, type: 'metered', meter_id: calls.meter_id })
  })

  it('answers the same by external id', async () => {
    const res = await t.h.http('GET', `/v1/customers/external/${c.external_id}/entitlements`)
    expect(res.status).toBe(200)
    expect(res.body).toEqual((await entitlements(c.id)).body)
  })

  it('filters by feature_ids and subscription_ids', async () => {
    const one = await entitlements(c.id, `?feature_ids=${calls.id}`)
    expect(one.body.features.map((f: any) => f.feature.id)).toEqual([calls.id])
    const two = await entitlements(c.id, `?feature_ids=${calls.id}&feature_ids=${support.id}&subscription_ids=${subStarter.id}`)
    const f = byFeature(two.body)
    expect(Object.keys(f)).toEqual([calls.id, support.id])
    expect(f[calls.id].entitlement).toMatchObject({ usage_limit: 200, usage_reset_period: 'DAILY' })
  })

  // The route answers a body built once per cached object (http/prebuilt-json.ts): the bytes must be what Koa
  // sent for the toWire'd object, on the first read and on the cached ones.
  it('answers the bytes of the serialized merge, for every feature and for one, cached or not', async () => {
    const actor = { tenantId: t.h.tenant.tenantId, environmentId: t.h.tenant.environments.production, keyId: 'test', roles: ['read' as const] }
    for (const [query, filter] of [['', {}], [`?feature_ids=${calls.id}`, { feature_ids: [calls.id] }]] as [string, EntitlementQuery][]) {
      const expected = JSON.stringify(toWire(await customerEntitlements(t.h.running.deps, actor, { id: c.id }, filter)))
      for (const path of [`/v1/customers/${c.id}/entitlements${query}`, `/v1/customers/external/${c.external_id}/entitlements${query}`]) {
        const first = await raw(path)
        expect(first).toEqual({ status: 200, type: 'application/json; charset=utf-8', text: expected })
        expect(await raw(path)).toEqual(first)
      }
    }
  })

  it('shows an addon added to a live subscription at the next read', async () => {
    const d = await customer(t.h)
    const p = await plan(t.h, { prices: [fixedPrice('1')], entitlements: [{ feature_id: support.id, static_value: 'email' }] })
    const sub = await subscribe({ customer_id: d.id, plan_id: p.id })
    expect(Object.keys(byFeature((await entitlements(d.id)).body))).toEqual([support.id])
    const added = await t.h.http('POST', '/v1/subscriptions/addon', { body: { subscription_id: sub.id, addon_id: addon.id } })
    expect(added.status).toBe(200)
    const f = byFeature((await entitlements(d.id)).body)
    expect(Object.keys(f)).toEqual([support.id, calls.id, sso.id])
    expect(f[calls.id].sources.map((s: any) => [s.entity_type, s.subscription_id])).toEqual([['addon', sub.id]])
  })

  it('lets one unlimited source make the limit unlimited, and soft only when every source is soft', async () => {
    const d = await customer(t.h)
    const unlimited = await plan(t.h, { prices: [fixedPrice('1')], entitlements: [{ feature_id: calls.id, usage_limit: null, usage_reset_period: 'MONTHLY', is_soft_limit: true }] })
    await subscribe({ customer_id: d.id, plan_id: unlimited.id, addons: [{ addon_id: addon.id }] })
    const f = byFeature((await entitlements(d.id)).body)
    expect(f[calls.id].entitlement).toMatchObject({ usage_limit: null, is_soft_limit: true })
  })

  it('follows changes to the catalog at once', async () => {
    const d = await customer(t.h)
    const p = await plan(t.h, { prices: [fixedPrice('1')], entitlements: [{ feature_id: audit.id }] })
    await subscribe({ customer_id: d.id, plan_id: p.id })
    expect(byFeature((await entitlements(d.id)).body)[audit.id].entitlement.is_enabled).toBe(true)
    await t.h.http('DELETE', `/v1/entitlements/${p.entitlements[0].id}`)
    expect((await entitlements(d.id)).body.features).toEqual([])
  })

  it('shows a feature changed at the next read (features are cached apart from the sources)', async () => {
    const before = byFeature((await entitlements(c.id)).body)[support.id].feature
    const renamed = await t.h.http('PUT', `/v1/features/${support.id}`, { body: { name: unique('renamed') } })
    expect(renamed.status).toBe(200)
    expect(byFeature((await entitlements(c.id)).body)[support.id].feature).toEqual({ ...before, name: renamed.body.name, version: renamed.body.version, updated_at: renamed.body.updated_at })
  })

  it('leaves out cancelled, not-yet-started and payment-pending subscriptions', async () => {
    const d = await customer(t.h)
    const p = await plan(t.h, { prices: [fixedPrice('1')], entitlements: [{ feature_id: audit.id }] })
    const sub = await subscribe({ customer_id: d.id, plan_id: p.id })
    await subscribe({ customer_id: d.id, plan_id: p.id, start_date: '2025-02-01T00:00:00Z' })
    await subscribe({ customer_id: d.id, plan_id: p.id, payment_behavior: 'default_incomplete' })
    expect(byFeature((await entitlements(d.id)).body)[audit.id].sources).toHaveLength(1)
    await t.h.http('POST', `/v1/subscriptions/${sub.id}/cancel`, { body: { cancellation_type: 'immediate' } })
    expect((await entitlements(d.id)).body).toEqual({ customer_id: d.id, features: [] })
  })

  it('counts a trialing subscription', async () => {
    const d = await customer(t.h)
    const p = await plan(t.h, { prices: [fixedPrice('1', { trial_period_days: 7 })], entitlements: [{ feature_id: audit.id }] })
    const sub = await subscribe({ customer_id: d.id, plan_id: p.id })
    expect(sub.subscription_status).toBe('trialing')
    expect((await entitlements(d.id)).body.features).toHaveLength(1)
  })

  it("answers 404 for unknown customers and for another tenant's", async () => {
    expect((await entitlements('cus_nope')).status).toBe(404)
    expect((await entitlements(c.id, '', t.other)).status).toBe(404)
    expect((await t.h.http('GET', `/v1/customers/external/${c.external_id}/entitlements`, { key: t.other })).status).toBe(404)
    expect((await t.h.http('GET', '/v1/customers/external/nope/entitlements')).status).toBe(404)
  })
})
