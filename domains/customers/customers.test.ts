import { describe, expect, it } from 'vitest'
import { eventsOf, twoTenants } from '../../test/catalog.ts'

const t = twoTenants()

const create = (body: Record<string, unknown>) => t.h.http('POST', '/v1/customers', { body })

describe('customers', () => {
  it('creates a customer with address, e-mail and integration mappings, and reads it back by id and external id', async () => {
    const res = await create({
      external_id: 'acme-1',
      name: 'Acme',
      email: 'billing@acme.test',
      address_line1: '1 Main St',
      address_city: 'Berlin',
      address_country: 'de',
      metadata: { segment: 'smb' },
      integrations: [{ provider_type: 'stripe', provider_entity_id: 'cus_stripe_1' }],
    })
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({
      external_id: 'acme-1',
      address_country: 'DE',
      status: 'published',
      version: 1,
      tenant_id: t.h.tenant.tenantId,
      environment_id: t.h.tenant.environments.production,
      integrations: [{ entity_type: 'customer', provider_type: 'stripe', provider_entity_id: 'cus_stripe_1' }],
    })
    expect(res.body.id).toMatch(/^cus_/)

    const byId = await t.h.http('GET', `/v1/customers/${res.body.id}`)
    expect(byId.body).toMatchObject({ id: res.body.id, email: 'billing@acme.test', integrations: [{ provider_entity_id: 'cus_stripe_1' }] })
    const byExternal = await t.h.http('GET', '/v1/customers/external/acme-1')
    expect(byExternal.status).toBe(200)
    expect(byExternal.body.id).toBe(res.body.id)
    expect(await eventsOf(t.h, res.body.id)).toEqual(['customer.created'])
  })

  it('refuses a second customer with the same external_id in the environment', async () => {
    expect((await create({ external_id: 'dup-1' })).status).toBe(201)
    const again = await create({ external_id: 'dup-1' })
    expect(again.status).toBe(409)
    expect(again.body).toMatchObject({ code: 'already_exists', details: { external_id: 'dup-1' } })
  })

  it('allows the same external_id in another tenant', async () => {
    expect((await create({ external_id: 'shared-ext' })).status).toBe(201)
    const res = await t.h.http('POST', '/v1/customers', { body: { external_id: 'shared-ext' }, key: t.other })
    expect(res.status).toBe(201)
  })

  it.each([
    ['email', { email: 'not-an-email' }],
    ['address_country', { address_country: 'UK' }],
    ['address_country', { address_country: 'DEU' }],
    ['external_id', { external_id: '' }],
  ])('refuses an invalid %s with validation_error naming it', async (field, patch) => {
    const res = await create({ external_id: `bad-${field}-${Math.random()}`, ...patch })
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('validation_error')
    expect(Object.keys(res.body.details)).toContain(field)
  })

  it('refuses a provider id already mapped to another customer', async () => {
    await create({ external_id: 'map-a', integrations: [{ provider_type: 'stripe', provider_entity_id: 'cus_same' }] })
    const res = await create({ external_id: 'map-b', integrations: [{ provider_type: 'stripe', provider_entity_id: 'cus_same' }] })
    expect(res.status).toBe(409)
    expect(res.body.details).toHaveProperty('integrations')
    expect((await t.h.http('GET', '/v1/customers/external/map-b')).status).toBe(404)
  })

  it('lists with filters, the metadata filter and paging, and searches with a body', async () => {
    await create({ external_id: 'list-1', name: 'Listed One', metadata: { tier: 'gold' } })
    await create({ external_id: 'list-2', name: 'Listed Two', metadata: { tier: 'silver' } })
    const gold = await t.h.http('GET', '/v1/customers?metadata[tier]=gold')
    expect(gold.body.items.map((c: any) => c.external_id)).toEqual(['list-1'])
    const named = await t.h.http('GET', '/v1/customers?name=listed&sort=name&order=asc')
    expect(named.body.items.map((c: any) => c.external_id)).toEqual(['list-1', 'list-2'])
    const paged = await t.h.http('GET', '/v1/customers?name=listed&limit=1&offset=1&sort=name&order=asc')
    expect(paged.body).toMatchObject({ items: [{ external_id: 'list-2' }], pagination: { limit: 1, offset: 1, total: 2 } })
    const search = await t.h.http('POST', '/v1/customers/search', { body: { external_ids: ['list-2', 'nope'], metadata: { tier: 'silver' } } })
    expect(search.status).toBe(200)
    expect(search.body.items.map((c: any) => c.external_id)).toEqual(['list-2'])
  })

  it('updates, bumps the version and refuses a stale version', async () => {
    const c = (await create({ external_id: 'upd-1', name: 'Before' })).body
    const ok = await t.h.http('PUT', `/v1/customers/${c.id}`, { body: { name: 'After', version: 1, integrations: [{ provider_type: 'hubspot', provider_entity_id: 'h1' }] } })
    expect(ok.status).toBe(200)
    expect(ok.body).toMatchObject({ name: 'After', version: 2, integrations: [{ provider_type: 'hubspot' }] })
    const stale = await t.h.http('PUT', `/v1/customers/${c.id}`, { body: { name: 'Stale', version: 1 } })
    expect(stale.status).toBe(409)
    expect(stale.body).toMatchObject({ code: 'version_conflict', details: { expected_version: 1, current_version: 2 } })
    expect(await eventsOf(t.h, c.id)).toEqual(['customer.created', 'customer.updated'])
  })

  it('lets exactly one of two concurrent updates from the same version win', async () => {
    const c = (await create({ external_id: 'race-1' })).body
    const results = await Promise.all(['A', 'B'].map((name) => t.h.http('PUT', `/v1/customers/${c.id}`, { body: { name, version: 1 } })))
    expect(results.map((r) => r.status).sort()).toEqual([200, 409])
    expect(results.find((r) => r.status === 409)!.body.code).toBe('version_conflict')
  })

  it('deletes softly: the record reads as deleted, leaves the list, and frees its external_id', async () => {
    const c = (await create({ external_id: 'del-1' })).body
    expect((await t.h.http('DELETE', `/v1/customers/${c.id}`)).status).toBe(204) // as Flexprice answers (its SDK expects no body)
    expect((await t.h.http('GET', `/v1/customers/${c.id}`)).body.status).toBe('deleted')
    expect((await t.h.http('GET', '/v1/customers?external_id=del-1')).body.items).toEqual([])
    expect((await t.h.http('GET', '/v1/customers/external/del-1')).status).toBe(404)
    expect((await t.h.http('PUT', `/v1/customers/${c.id}`, { body: { name: 'x' } })).status).toBe(404)
    expect((await create({ external_id: 'del-1' })).status).toBe(201)
    expect(await eventsOf(t.h, c.id)).toEqual(['customer.created', 'customer.deleted'])
  })

  it("answers 404 for another tenant's customer on every route", async () => {
    const c = (await create({ external_id: 'iso-1' })).body
    const routes: [string, string, unknown?][] = [
      ['GET', `/v1/customers/${c.id}`],
      ['PUT', `/v1/customers/${c.id}`, { name: 'hijack' }],
      ['DELETE', `/v1/customers/${c.id}`],
      ['GET', '/v1/customers/external/iso-1'],
    ]
    for (const [method, path, body] of routes) {
      const res = await t.h.http(method, path, { body, key: t.other })
      expect(res.status, `${method} ${path}`).toBe(404)
      expect(res.body.code).toBe('not_found')
    }
    expect((await t.h.http('GET', '/v1/customers?external_id=iso-1', { key: t.other })).body.items).toEqual([])
    expect((await t.h.http('POST', '/v1/customers/search', { body: { customer_ids: [c.id] }, key: t.other })).body.items).toEqual([])
    expect((await t.h.http('GET', `/v1/customers/${c.id}`)).body.name).toBe('')
  })
})
