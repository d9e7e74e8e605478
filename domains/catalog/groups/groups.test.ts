import { describe, expect, it } from 'vitest'
import { created, feature, fixedPrice, plan, twoTenants, unique } from '../../../test/catalog.ts'

const t = twoTenants()

describe('groups', () => {
  it('groups prices: members are set on the group and read back from the prices', async () => {
    const p = await plan(t.h, { prices: [fixedPrice('1'), fixedPrice('2'), fixedPrice('3')] })
    const [a, b, c] = p.prices.map((x: any) => x.id)
    const g = await created(t.h, '/v1/groups', { name: 'Compute', lookup_key: unique('compute'), entity_type: 'price', entity_ids: [a, b] })
    expect(g).toMatchObject({ entity_type: 'price', entity_ids: [a, b] })
    expect((await t.h.http('GET', `/v1/prices/${a}`)).body.group_id).toBe(g.id)
    const moved = await t.h.http('PUT', `/v1/groups/${g.id}`, { body: { entity_ids: [b, c], version: 1 } })
    expect(moved.body).toMatchObject({ entity_ids: [b, c], version: 2 })
    expect((await t.h.http('GET', `/v1/prices/${a}`)).body.group_id).toBeNull()
    expect((await t.h.http('GET', `/v1/prices?group_ids=${g.id}&sort=created_at&order=asc`)).body.items.map((x: any) => x.id)).toEqual([b, c])
    expect((await t.h.http('DELETE', `/v1/groups/${g.id}`)).status).toBe(204) // as Flexprice answers (its SDK expects no body)
    expect((await t.h.http('GET', `/v1/groups/${g.id}`)).body).toMatchObject({ status: 'deleted', entity_ids: [] })
    expect((await t.h.http('GET', `/v1/prices/${b}`)).body.group_id).toBeNull()
  })

  it('lets a new price or feature join a group of its kind only', async () => {
    const prices = await created(t.h, '/v1/groups', { name: 'P', entity_type: 'price' })
    const features = await created(t.h, '/v1/groups', { name: 'F', entity_type: 'feature' })
    const p = await plan(t.h, { prices: [fixedPrice('1', { group_id: prices.id })] })
    expect(p.prices[0].group_id).toBe(prices.id)
    const f = await feature(t.h, 'boolean', { group_id: features.id })
    expect((await t.h.http('GET', `/v1/groups/${features.id}`)).body.entity_ids).toEqual([f.id])
    const wrong = await t.h.http('POST', '/v1/features', { body: { name: 'x', type: 'boolean', group_id: prices.id } })
    expect([wrong.status, Object.keys(wrong.body.details)]).toEqual([400, ['group_id']])
    const missing = await t.h.http('POST', '/v1/plans', { body: { name: 'x', prices: [fixedPrice('1', { group_id: 'group_nope' })] } })
    expect(missing.status).toBe(404)
  })

  it('refuses members of another kind (400), and does not find those of another environment (404)', async () => {
    const f = await feature(t.h, 'boolean')
    const res = await t.h.http('POST', '/v1/groups', { body: { name: 'x', entity_type: 'price', entity_ids: [f.id] } })
    expect([res.status, Object.keys(res.body.details)]).toEqual([400, ['entity_ids']])
    const theirs = await feature(t.h, 'boolean', {}, t.other)
    const cross = await t.h.http('POST', '/v1/groups', { body: { name: 'x', entity_type: 'feature', entity_ids: [f.id, theirs.id] } })
    expect([cross.status, cross.body.details['entity_ids[1]']]).toEqual([404, theirs.id])
  })

  it("answers 404 for another tenant's group on every route", async () => {
    const g = await created(t.h, '/v1/groups', { name: 'Mine', entity_type: 'feature' })
    for (const [method, body] of [['GET'], ['PUT', { name: 'x' }], ['DELETE']] as const) {
      expect((await t.h.http(method, `/v1/groups/${g.id}`, { body, key: t.other })).status, method).toBe(404)
    }
    expect((await t.h.http('POST', '/v1/groups/search', { body: { group_ids: [g.id] }, key: t.other })).body.items).toEqual([])
    const theirFeature = await t.h.http('POST', '/v1/features', { body: { name: 'x', type: 'boolean', group_id: g.id }, key: t.other })
    expect(theirFeature.status).toBe(404)
  })
})
