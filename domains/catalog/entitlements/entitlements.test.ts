import { describe, expect, it } from 'vitest'
import { created, customer, eventsOf, feature, fixedPrice, plan, subscribed, twoTenants } from '../../../test/catalog.ts'

const t = twoTenants()

describe('entitlements', () => {
  it('grants each feature type its own terms and lists them for the plan', async () => {
    const p = await plan(t.h)
    const [bool, metered, stat] = await Promise.all([feature(t.h, 'boolean'), feature(t.h, 'metered'), feature(t.h, 'static')])
    const b = await created(t.h, '/v1/entitlements', { plan_id: p.id, feature_id: bool.id, is_enabled: true })
    const m = await created(t.h, '/v1/entitlements', { entity_type: 'PLAN', entity_id: p.id, feature_id: metered.id, usage_limit: null, usage_reset_period: 'DAILY' })
    const s = await created(t.h, '/v1/entitlements', { plan_id: p.id, feature_id: stat.id, static_value: '24/7 phone' })
    expect(b).toMatchObject({ feature_type: 'boolean', is_enabled: true, usage_limit: null, feature: { id: bool.id } })
    expect(m).toMatchObject({ feature_type: 'metered', usage_limit: null, usage_reset_period: 'DAILY', is_soft_limit: false })
    expect(s).toMatchObject({ feature_type: 'static', static_value: '24/7 phone' })
    const list = await t.h.http('GET', `/v1/plans/${p.id}/entitlements`)
    expect(list.body.items.map((e: any) => e.id).sort()).toEqual([b.id, m.id, s.id].sort())
    expect(list.body.pagination.total).toBe(3)
    expect(await eventsOf(t.h, m.id)).toEqual(['entitlement.created'])
  })

  it.each([
    ['a usage limit on a boolean feature', 'boolean', { usage_limit: 5 }, 'usage_limit'],
    ['a static value on a metered feature', 'metered', { static_value: 'x', usage_reset_period: 'MONTHLY' }, 'static_value'],
    ['a metered feature without a reset period', 'metered', { usage_limit: 5 }, 'usage_reset_period'],
    ['a static feature without a value', 'static', {}, 'static_value'],
    ['a soft limit on a static feature', 'static', { static_value: 'x', is_soft_limit: true }, 'is_soft_limit'],
    ['a negative usage limit', 'metered', { usage_limit: -1, usage_reset_period: 'MONTHLY' }, 'usage_limit'],
    ['a fractional usage limit', 'metered', { usage_limit: 1.5, usage_reset_period: 'MONTHLY' }, 'usage_limit'],
  ] as const)('refuses %s', async (_name, type, body, field) => {
    const [p, f] = await Promise.all([plan(t.h), feature(t.h, type)])
    const res = await t.h.http('POST', '/v1/entitlements', { body: { plan_id: p.id, feature_id: f.id, ...body } })
    expect(res.status).toBe(400)
    expect(Object.keys(res.body.details)).toContain(field)
  })

  it('refuses granting a feature twice to the same plan, and unknown features or plans', async () => {
    const [p, f] = await Promise.all([plan(t.h), feature(t.h, 'boolean')])
    await created(t.h, '/v1/entitlements', { plan_id: p.id, feature_id: f.id })
    const dup = await t.h.http('POST', '/v1/entitlements', { body: { plan_id: p.id, feature_id: f.id } })
    expect(dup.body).toMatchObject({ code: 'already_exists', details: { feature_id: f.id } })
    expect((await t.h.http('POST', '/v1/entitlements', { body: { plan_id: p.id, feature_id: 'feat_nope' } })).status).toBe(404)
    expect((await t.h.http('POST', '/v1/entitlements', { body: { plan_id: 'plan_nope', feature_id: f.id } })).status).toBe(404)
  })

  it('updates within the feature type rules, with versions', async () => {
    const [p, f] = await Promise.all([plan(t.h), feature(t.h, 'metered')])
    const e = await created(t.h, '/v1/entitlements', { plan_id: p.id, feature_id: f.id, usage_limit: 100, usage_reset_period: 'MONTHLY' })
    const up = await t.h.http('PUT', `/v1/entitlements/${e.id}`, { body: { usage_limit: 500, is_soft_limit: true, version: 1 } })
    expect(up.body).toMatchObject({ usage_limit: 500, is_soft_limit: true, usage_reset_period: 'MONTHLY', version: 2 })
    const unlimited = await t.h.http('PUT', `/v1/entitlements/${e.id}`, { body: { usage_limit: null } })
    expect(unlimited.body.usage_limit).toBeNull()
    const bad = await t.h.http('PUT', `/v1/entitlements/${e.id}`, { body: { static_value: 'x' } })
    expect(bad.status).toBe(400)
    const stale = await t.h.http('PUT', `/v1/entitlements/${e.id}`, { body: { usage_limit: 1, version: 2 } })
    expect(stale.body.code).toBe('version_conflict')
    const del = await t.h.http('DELETE', `/v1/entitlements/${e.id}`)
    expect(del.body.status).toBe('deleted')
    expect((await t.h.http('GET', `/v1/plans/${p.id}/entitlements`)).body.items).toEqual([])
    expect(await eventsOf(t.h, e.id)).toEqual(['entitlement.created', 'entitlement.updated', 'entitlement.updated', 'entitlement.deleted'])
  })

  it('filters by feature and plan', async () => {
    const [p, f] = await Promise.all([plan(t.h), feature(t.h, 'boolean')])
    const e = await created(t.h, '/v1/entitlements', { plan_id: p.id, feature_id: f.id })
    const res = await t.h.http('GET', `/v1/entitlements?feature_ids=${f.id}&plan_ids=${p.id}`)
    expect(res.body.items.map((x: any) => x.id)).toEqual([e.id])
  })

  it("answers 404 for another tenant's entitlement on every route, and refuses their plans and features", async () => {
    const [p, f] = await Promise.all([plan(t.h), feature(t.h, 'boolean')])
    const e = await created(t.h, '/v1/entitlements', { plan_id: p.id, feature_id: f.id })
    for (const [method, body] of [['GET'], ['PUT', { is_enabled: false }], ['DELETE']] as const) {
      expect((await t.h.http(method, `/v1/entitlements/${e.id}`, { body, key: t.other })).status, method).toBe(404)
    }
    const theirPlan = await plan(t.h, {}, t.other)
    expect((await t.h.http('POST', '/v1/entitlements', { body: { plan_id: theirPlan.id, feature_id: f.id } })).status).toBe(404)
    expect((await t.h.http('POST', '/v1/entitlements', { body: { plan_id: theirPlan.id, feature_id: f.id }, key: t.other })).status).toBe(404)
    expect((await t.h.http('POST', '/v1/entitlements/search', { body: { entitlement_ids: [e.id] }, key: t.other })).body.items).toEqual([])
    expect((await t.h.http('GET', `/v1/entitlements/${e.id}`)).body.is_enabled).toBe(true)
  })

  it('answers plan_id, a window and the parent entitlement; refuses an end before the start and a parent of another feature', async () => {
    const [p, f, other] = await Promise.all([plan(t.h), feature(t.h, 'metered'), feature(t.h, 'boolean')])
    const addon = await created(t.h, '/v1/addons', { name: 'More calls', lookup_key: 'more-calls' })
    const window = { start_date: '2030-01-01T00:00:00.000Z', end_date: '2030-07-01T00:00:00.000Z' }
    const base = await created(t.h, '/v1/entitlements', { plan_id: p.id, feature_id: f.id, usage_limit: 100, usage_reset_period: 'MONTHLY', ...window })
    expect(base).toMatchObject({ plan_id: p.id, entity_type: 'PLAN', entity_id: p.id, parent_entitlement_id: null, ...window })
    const extra = await created(t.h, '/v1/entitlements', { entity_type: 'ADDON', entity_id: addon.id, feature_id: f.id, usage_limit: 500, usage_reset_period: 'MONTHLY', parent_entitlement_id: base.id })
    expect(extra).toMatchObject({ plan_id: null, entity_type: 'ADDON', parent_entitlement_id: base.id, start_date: null, end_date: null })
    expect((await t.h.http('GET', `/v1/entitlements?parent_entitlement_ids=${base.id}`)).body.items.map((e: any) => e.id)).toEqual([extra.id])

    const backwards = await t.h.http('PUT', `/v1/entitlements/${base.id}`, { body: { end_date: '2029-12-31T00:00:00.000Z' } })
    expect([backwards.status, Object.keys(backwards.body.details)]).toEqual([400, ['end_date']])
    const otherAddon = await created(t.h, '/v1/addons', { name: 'Flag', lookup_key: 'flag-addon' })
    const wrongParent = await t.h.http('POST', '/v1/entitlements', { body: { entity_type: 'ADDON', entity_id: otherAddon.id, feature_id: other.id, parent_entitlement_id: base.id } })
    expect([wrongParent.status, Object.keys(wrongParent.body.details)]).toEqual([400, ['parent_entitlement_id']])
    const missing = await t.h.http('POST', '/v1/entitlements', { body: { entity_type: 'ADDON', entity_id: otherAddon.id, feature_id: other.id, parent_entitlement_id: 'ent_nope' } })
    expect(missing.status).toBe(404)
    const self = await t.h.http('PUT', `/v1/entitlements/${base.id}`, { body: { parent_entitlement_id: base.id } })
    expect([self.status, Object.keys(self.body.details)]).toEqual([400, ['parent_entitlement_id']])
    // A window may be lifted.
    expect((await t.h.http('PUT', `/v1/entitlements/${base.id}`, { body: { start_date: null, end_date: null } })).body).toMatchObject({ start_date: null, end_date: null })
  })

  it("grants a customer only the entitlements in force now: one ended or not started yet is left out of the customer's lookup", async () => {
    const [now, ended, later] = await Promise.all([feature(t.h, 'boolean'), feature(t.h, 'boolean'), feature(t.h, 'boolean')])
    const p = await plan(t.h, {
      prices: [fixedPrice('10')],
      entitlements: [
        { feature_id: now.id, start_date: '2020-01-01T00:00:00Z' },
        { feature_id: ended.id, end_date: '2020-01-01T00:00:00Z' },
        { feature_id: later.id, start_date: '2099-01-01T00:00:00Z' },
      ],
    })
    const c = await customer(t.h)
    await subscribed(t.h, { customer_id: c.id, plan_id: p.id, start_date: '2021-01-01T00:00:00Z' })
    const res = await t.h.http('GET', `/v1/customers/${c.id}/entitlements`)
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body.features.map((f: any) => f.feature.id)).toEqual([now.id])
  })
})
