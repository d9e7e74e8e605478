// Isolation of tenants and environments, for every operation of the OpenAPI document: another tenant (B)
// and the same tenant's other environment (A's sandbox) use the ids of A's production records, in the
// path or anywhere in the body, and get 404 naming the field, with nothing written. Lists and searches
// filtered by A's ids find nothing of A's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../harness.ts'
import { buildWorld, concretePath, rowCounts, sampleBodies, type World } from '../api-world.ts'

let h: Harness
let victim: World
let attackers: { name: string; world: World }[]
let doc: { paths: Record<string, Record<string, { requestBody?: unknown; 'x-required-permission'?: string }>> }

beforeAll(async () => {
  h = await startHarness({ env: { RATE_LIMIT_PER_SECOND: '1000000', METER_BACKFILL_SETTLE_SECONDS: '0' } })
  const sandbox = await h.http('POST', '/v1/secrets/api/keys', { body: { name: 'sandbox admin', roles: ['admin'], environment_id: h.tenant.environments.sandbox } })
  expect(sandbox.status).toBe(201)
  const other = await h.newTenant()
  victim = await buildWorld(h)
  attackers = [
    { name: 'tenant B', world: await buildWorld(h, other.apiKey) },
    { name: "A's sandbox", world: await buildWorld(h, sandbox.body.api_key) },
  ]
  doc = (await h.http('GET', '/v1/openapi.json', { key: null })).body
})
afterAll(() => h?.stop())

/** Path parameters that name a record of the caller's environment (a job name, a provider and the public callback's ids do not). */
const RECORD_PARAMS = new Set(['id', 'phase_id', 'external_id', 'lookup_key'])
/** Values of a world that name a record by something other than its id. */
const BY_VALUE = new Set(['customer', 'taxRate'])

/**
 * Every operation an API key calls. The customer portal's take a session, not a key (a key is a 401 there): their
 * isolation, one customer from another, is domains/portal/portal.test.ts's and test/console/portal.test.ts's.
 */
const operations = () =>
  Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops)
      .filter(([, op]) => op['x-required-permission'] !== 'session')
      .map(([method, op]) => ({ method: method.toUpperCase(), path, hasBody: Boolean(op.requestBody) })),
  )

/** Every string leaf of `value` that is one of the world's ids (or names by value), with its field path and kind. */
function references(w: World, value: unknown, at: (string | number)[] = []): { path: (string | number)[]; kind: string; byValue: boolean }[] {
  if (typeof value === 'string') {
    const id = Object.entries(w.ids).find(([, v]) => v === value)
    if (id) return [{ path: at, kind: id[0], byValue: false }]
    const name = Object.entries(w.names).find(([k, v]) => v === value && BY_VALUE.has(k))
    return name ? [{ path: at, kind: name[0], byValue: true }] : []
  }
  if (Array.isArray(value)) return value.flatMap((v, i) => references(w, v, [...at, i]))
  if (value && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => references(w, v, [...at, k]))
  return []
}

const fieldName = (path: (string | number)[]) => path.reduce<string>((acc, p) => (typeof p === 'number' ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '')

function replaced(body: unknown, path: (string | number)[], value: string): unknown {
  const copy = structuredClone(body) as any
  let node = copy
  for (const key of path.slice(0, -1)) node = node[key]
  node[path[path.length - 1]] = value
  return copy
}

/** Reads and searches that take ids as filters: A's ids match nothing of B's, and nothing of A's comes back. */
const isFilter = (method: string, path: string) => path.endsWith('/search') || path === '/v1/events/usage' || path === '/v1/events/usage/meter' || path.startsWith('/v1/costs/analytics')

describe("another tenant's and another environment's ids", () => {
  it('are not found in any path: 404, nothing written', async () => {
    const failures: string[] = []
    let checked = 0
    let before = await rowCounts(h)
    for (const { method, path } of operations()) {
      const params = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1])
      if (params.length === 0 || !params.every((p) => RECORD_PARAMS.has(p))) continue
      for (const { name, world } of attackers) {
        const body = sampleBodies(world)[`${method} ${path}`]?.[0]
        const res = await h.http(method, concretePath(victim, path), { key: world.key, body })
        checked++
        if (res.status !== 404 || res.body?.code !== 'not_found') failures.push(`${name}: ${method} ${path} → ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`)
        const after = await rowCounts(h)
        const changed = Object.keys(after).filter((t) => after[t] !== before[t])
        if (changed.length > 0) failures.push(`${name}: ${method} ${path} wrote ${changed.join(', ')}`)
        before = after
      }
    }
    expect(checked).toBeGreaterThan(150)
    expect(failures).toEqual([])
  })

  it('are not found anywhere in a body: 404 naming the field, nothing written', async () => {
    const failures: string[] = []
    const fields = new Set<string>()
    let before = await rowCounts(h)
    for (const { method, path, hasBody } of operations()) {
      if (!hasBody || path.startsWith('/v1/events')) continue
      for (const { name, world } of attackers) {
        const samples = sampleBodies(world)[`${method} ${path}`] ?? []
        for (const sample of samples) {
          for (const ref of references(world, sample)) {
            const theirs = ref.byValue ? victim.names[ref.kind] : victim.ids[ref.kind]
            const field = fieldName(ref.path)
            const res = await h.http(method, concretePath(world, path), { key: world.key, body: replaced(sample, ref.path, theirs) })
            const where = `${name}: ${method} ${path} ${field}=A's ${ref.kind}`
            if (isFilter(method, path)) {
              if (res.status === 200 && JSON.stringify(res.body).includes(theirs)) failures.push(`${where} → A's record came back`)
              if (res.status !== 200 && res.status !== 404) failures.push(`${where} → ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`)
            } else {
              fields.add(`${method} ${path} ${field}`)
              // A key of A's sandbox is refused A's production environment as a matter of permission.
              const expected = field === 'environment_id' && name === "A's sandbox" ? 403 : 404
              if (res.status !== expected || !(field in (res.body?.details ?? {}) || expected === 403)) failures.push(`${where} → ${res.status} ${JSON.stringify(res.body).slice(0, 240)}`)
            }
            const after = await rowCounts(h)
            const changed = Object.keys(after).filter((t) => after[t] !== before[t])
            if (changed.length > 0) failures.push(`${where} wrote ${changed.join(', ')}`)
            before = after
          }
        }
      }
    }
    expect(fields.size).toBeGreaterThan(40)
    expect(failures).toEqual([])
  })

  it('find nothing of the other tenant in lists filtered by them', async () => {
    const b = attackers[0].world
    const lists: [string, string][] = [
      ['/v1/customers', `customer_ids=${victim.ids.customer}`],
      ['/v1/invoices', `customer_id=${victim.ids.customer}`],
      ['/v1/subscriptions', `customer_id=${victim.ids.customer}`],
      ['/v1/prices', `plan_ids=${victim.ids.plan}`],
      ['/v1/coupons/associations', `subscription_id=${victim.ids.subscription}`],
      ['/v1/wallets', `customer_id=${victim.ids.customer}`],
    ]
    for (const [path, query] of lists) {
      const res = await h.http('GET', `${path}?${query}`, { key: b.key })
      expect(res.status, `${path}?${query}: ${JSON.stringify(res.body).slice(0, 200)}`).toBe(200)
      expect(res.body.items, `${path}?${query}`).toEqual([])
    }
  })
})
