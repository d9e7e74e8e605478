import { describe, expect, it } from 'vitest'
import { eventsOf, feature, meter, plan, twoTenants, unique } from '../../../test/catalog.ts'

const t = twoTenants()

describe('features', () => {
  it('creates a metered feature on a meter, with units, reporting unit and alert settings', async () => {
    const m = await meter(t.h)
    const res = await t.h.http('POST', '/v1/features', {
      body: {
        name: 'API calls',
        type: 'metered',
        meter_id: m.id,
        lookup_key: 'api-calls',
        unit_singular: 'call',
        unit_plural: 'calls',
        reporting_unit: { unit_singular: 'thousand calls', unit_plural: 'thousand calls', conversion_rate: 1000 },
        alert_settings: { alert_enabled: true, info: { threshold: 50 }, warning: { threshold: 80 }, critical: { condition: 'above', threshold: 100 } },
      },
    })
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({
      type: 'metered',
      meter_id: m.id,
      reporting_unit: { conversion_rate: 1000 },
      alert_settings: { critical: { condition: 'above', threshold: 100 }, info: { condition: 'above', threshold: 50 } },
    })
    expect(res.body.id).toMatch(/^feat_/)
    expect(await eventsOf(t.h, res.body.id)).toEqual(['feature.created'])
  })

  it('creates boolean and static features without a meter', async () => {
    expect((await t.h.http('POST', '/v1/features', { body: { name: 'SSO', type: 'boolean' } })).status).toBe(201)
    expect((await t.h.http('POST', '/v1/features', { body: { name: 'Support', type: 'static' } })).status).toBe(201)
  })

  it.each([
    ['metered without a meter', { type: 'metered' }, 'meter_id'],
    ['boolean with a meter', { type: 'boolean', meter_id: 'meter_x' }, 'meter_id'],
    ['an unknown type', { type: 'seats' }, 'type'],
    ['alert levels out of order', { type: 'boolean', alert_settings: { warning: { threshold: 90 }, critical: { threshold: 80 } } }, 'alert_settings.critical.threshold'],
    ['mixed alert conditions', { type: 'boolean', alert_settings: { warning: { threshold: 90 }, critical: { condition: 'below', threshold: 80 } } }, 'alert_settings'],
    ['a non-positive conversion rate', { type: 'boolean', reporting_unit: { conversion_rate: 0 } }, 'reporting_unit.conversion_rate'],
  ])('refuses %s with validation_error naming the field', async (_name, body, field) => {
    const res = await t.h.http('POST', '/v1/features', { body: { name: unique('bad'), ...body } })
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('validation_error')
    expect(Object.keys(res.body.details)).toContain(field)
  })

  it("refuses a meter that does not exist or is another tenant's", async () => {
    const missing = await t.h.http('POST', '/v1/features', { body: { name: 'x', type: 'metered', meter_id: 'meter_missing' } })
    expect(missing.status).toBe(404)
    expect(missing.body.details).toMatchObject({ meter_id: 'meter_missing' })
    const theirs = await meter(t.h, t.other)
    expect((await t.h.http('POST', '/v1/features', { body: { name: 'x', type: 'metered', meter_id: theirs.id } })).status).toBe(404)
  })

  it('keeps lookup keys unique among live features', async () => {
    await feature(t.h, 'boolean', { lookup_key: 'dup-key' })
    const res = await t.h.http('POST', '/v1/features', { body: { name: 'again', type: 'boolean', lookup_key: 'dup-key' } })
    expect(res.status).toBe(409)
    expect(res.body).toMatchObject({ code: 'already_exists', details: { lookup_key: 'dup-key' } })
  })

  it('updates names and settings but not the type or meter', async () => {
    const f = await feature(t.h, 'boolean')
    const ok = await t.h.http('PUT', `/v1/features/${f.id}`, { body: { name: 'Renamed', version: 1 } })
    expect(ok.body).toMatchObject({ name: 'Renamed', version: 2 })
    const typeChange = await t.h.http('PUT', `/v1/features/${f.id}`, { body: { type: 'static' } })
    expect(typeChange.status).toBe(400)
    expect(typeChange.body.details).toHaveProperty('type')
    const stale = await t.h.http('PUT', `/v1/features/${f.id}`, { body: { name: 'x', version: 1 } })
    expect(stale.body.code).toBe('version_conflict')
    expect(await eventsOf(t.h, f.id)).toEqual(['feature.created', 'feature.updated'])
  })

  it('filters the list by type and searches by ids', async () => {
    const s = await feature(t.h, 'static', { name: unique('filterable') })
    const list = await t.h.http('GET', '/v1/features?type=static&limit=1000')
    expect(list.body.items.every((f: any) => f.type === 'static')).toBe(true)
    expect(list.body.items.map((f: any) => f.id)).toContain(s.id)
    const search = await t.h.http('POST', '/v1/features/search', { body: { feature_ids: [s.id] } })
    expect(search.body.items.map((f: any) => f.id)).toEqual([s.id])
  })

  it('refuses to delete a feature a plan still grants, then deletes it softly', async () => {
    const f = await feature(t.h, 'boolean')
    const p = await plan(t.h, { entitlements: [{ feature_id: f.id }] })
    const refused = await t.h.http('DELETE', `/v1/features/${f.id}`)
    expect(refused.status).toBe(400)
    expect(refused.body.code).toBe('invalid_operation')
    await t.h.http('DELETE', `/v1/entitlements/${p.entitlements[0].id}`)
    const del = await t.h.http('DELETE', `/v1/features/${f.id}`)
    expect(del.body.status).toBe('deleted')
    expect(await eventsOf(t.h, f.id)).toEqual(['feature.created', 'feature.deleted'])
  })

  it("answers 404 for another tenant's feature on every route", async () => {
    const f = await feature(t.h, 'boolean')
    for (const [method, body] of [['GET'], ['PUT', { name: 'x' }], ['DELETE']] as const) {
      const res = await t.h.http(method, `/v1/features/${f.id}`, { body, key: t.other })
      expect(res.status, method).toBe(404)
    }
    expect((await t.h.http('POST', '/v1/features/search', { body: { feature_ids: [f.id] }, key: t.other })).body.items).toEqual([])
    expect((await t.h.http('GET', `/v1/features/${f.id}`)).body.version).toBe(1)
  })
})
