// Every list of records that carry metadata filters by it: GET with `metadata[key]=value` (several keys:
// all must match) and POST …/search with `metadata` as an object, exact matches, within the caller's
// environment only. Customers, environments and webhook endpoints are tested with their own resources.
import { describe, expect, it } from 'vitest'
import { created, customer, feature, fixedPrice, plan, twoTenants, unique } from './catalog.ts'
import type { Harness } from './harness.ts'

const t = twoTenants()

interface Listed {
  path: string
  /** Creates one record with this metadata; returns its id. */
  make(h: Harness, metadata: Record<string, string>): Promise<string>
  /** Has POST {path}/search. */
  search?: boolean
}

const lists: Listed[] = [
  { path: '/v1/plans', search: true, make: async (h, metadata) => (await plan(h, { metadata })).id },
  { path: '/v1/addons', search: true, make: async (h, metadata) => (await created(h, '/v1/addons', { name: 'A', lookup_key: unique('addon'), metadata })).id },
  { path: '/v1/features', search: true, make: async (h, metadata) => (await feature(h, 'boolean', { metadata })).id },
  { path: '/v1/prices', search: true, make: async (h, metadata) => (await created(h, '/v1/prices', { ...fixedPrice('5'), plan_id: (await plan(h)).id, metadata })).id },
  {
    path: '/v1/entitlements',
    search: true,
    make: async (h, metadata) => (await created(h, '/v1/entitlements', { plan_id: (await plan(h)).id, feature_id: (await feature(h, 'boolean')).id, metadata })).id,
  },
  { path: '/v1/groups', search: true, make: async (h, metadata) => (await created(h, '/v1/groups', { name: 'G', entity_type: 'price', metadata })).id },
  { path: '/v1/meters', make: async (h, metadata) => (await created(h, '/v1/meters', { name: 'M', event_name: unique('e'), aggregation: { type: 'COUNT' }, metadata })).id },
  {
    path: '/v1/creditgrants',
    search: true,
    make: async (h, metadata) => (await created(h, '/v1/creditgrants', { name: 'C', scope: 'PLAN', plan_id: (await plan(h)).id, credits: '5', cadence: 'ONETIME', metadata })).id,
  },
  { path: '/v1/coupons', search: true, make: async (h, metadata) => (await created(h, '/v1/coupons', { name: 'C', type: 'percentage', cadence: 'once', percentage_off: '10', metadata })).id },
  { path: '/v1/taxes/rates', search: true, make: async (h, metadata) => (await created(h, '/v1/taxes/rates', { name: 'VAT', code: unique('vat'), tax_rate_type: 'percentage', percentage_value: '20', metadata })).id },
  {
    path: '/v1/wallets',
    search: true,
    // Wallet creation answers 200, as Flexprice's clients require (docs/decisions.md).
    make: async (h, metadata) => {
      const res = await h.http('POST', '/v1/wallets', { body: { customer_id: (await customer(h)).id, currency: 'USD', metadata } })
      expect(res.status).toBe(200)
      return res.body.id
    },
  },
  {
    path: '/v1/subscriptions',
    search: true,
    make: async (h, metadata) =>
      (await created(h, '/v1/subscriptions', { customer_id: (await customer(h)).id, plan_id: (await plan(h, { prices: [fixedPrice('9')] })).id, currency: 'USD', billing_period: 'MONTHLY', metadata })).id,
  },
  { path: '/v1/invoices', search: true, make: async (h, metadata) => (await created(h, '/v1/invoices', { customer_id: (await customer(h)).id, currency: 'USD', subtotal: '0', total: '0', amount_due: '0', metadata })).id },
]

describe('metadata filters on lists', () => {
  it.each(lists)('$path filters by metadata[key]=value', async ({ path, make, search }) => {
    const team = unique('team')
    const wanted = await make(t.h, { team, tier: 'gold' })
    const other = await make(t.h, { team, tier: 'silver' })
    await make(t.h, { team: unique('elsewhere') })
    const ids = async (query: string) => {
      const res = await t.h.http('GET', `${path}?limit=1000&${query}`)
      expect(res.status, `${path}?${query}: ${JSON.stringify(res.body)}`).toBe(200)
      return res.body.items.map((r: { id: string }) => r.id).sort()
    }
    expect(await ids(`metadata[team]=${team}`)).toEqual([wanted, other].sort())
    expect(await ids(`metadata[team]=${team}&metadata[tier]=gold`)).toEqual([wanted])
    expect(await ids(`metadata[team]=${team}&metadata[tier]=bronze`)).toEqual([])
    if (search) {
      const res = await t.h.http('POST', `${path}/search`, { body: { metadata: { team, tier: 'silver' } } })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body.items.map((r: { id: string }) => r.id)).toEqual([other])
      expect(res.body.pagination.total).toBe(1)
    }
    // Another tenant's key sees none of them, whatever the metadata says.
    expect((await t.h.http('GET', `${path}?metadata[team]=${team}`, { key: t.other })).body.items).toEqual([])
  })

  it('refuses a metadata filter that is not a string', async () => {
    const res = await t.h.http('POST', '/v1/plans/search', { body: { metadata: { tier: 3 } } })
    expect(res.status).toBe(400)
    expect(res.body.details).toHaveProperty(['metadata.tier'])
  })
})
