import { beforeAll, describe, expect, it } from 'vitest'
import { created, eventsOf, fixedPrice, twoTenants, unique, usagePrice } from '../../test/catalog.ts'
import type { Harness } from '../../test/harness.ts'

const t = twoTenants()
let production: string
let sandbox: string
/** An admin key of the sandbox, to read what the clone made there. */
let sandboxKey: string
const src: Record<string, any> = {}

const clone = (h: Harness, from: string, body: unknown, key?: string) => h.http('POST', `/v1/environments/${from}/clone`, { body, key })
const inSandbox = (path: string) => t.h.http('GET', path, { key: sandboxKey })

/** Rows of the target environment, every table the clone writes to, to prove a refusal wrote nothing. */
async function rowsIn(h: Harness, env: string): Promise<Record<string, number>> {
  const sql = h.running.deps.sql
  const out: Record<string, number> = {}
  for (const table of ['meters', 'groups', 'features', 'plans', 'addons', 'prices', 'entitlements', 'credit_grants']) {
    const [{ n }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM ${sql(table)} WHERE environment_id = ${env}`
    out[table] = n
  }
  const [{ n }] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM environment_clone_map WHERE target_environment_id = ${env}`
  return { ...out, map: n }
}

beforeAll(async () => {
  const h = t.h
  production = h.tenant.environments.production
  sandbox = h.tenant.environments.sandbox
  sandboxKey = (await created(h, '/v1/secrets/api/keys', { name: 'sandbox admin', roles: ['admin'], environment_id: sandbox })).api_key
  src.meter = await created(h, '/v1/meters', { name: 'API calls', event_name: unique('api_call'), aggregation: { type: 'COUNT' }, filters: [{ key: 'region', values: ['eu'] }] })
  const archived = await created(h, '/v1/meters', { name: 'Old', event_name: unique('old'), aggregation: { type: 'SUM', field: 'n' } })
  src.group = await created(h, '/v1/groups', { name: 'Usage', entity_type: 'feature', lookup_key: unique('usage-group') })
  src.calls = await created(h, '/v1/features', { name: 'API calls', type: 'metered', meter_id: src.meter.id, lookup_key: unique('calls'), group_id: src.group.id, unit_plural: 'calls' })
  src.sso = await created(h, '/v1/features', { name: 'SSO', type: 'boolean', lookup_key: unique('sso') })
  src.support = await created(h, '/v1/features', { name: 'Support', type: 'static', lookup_key: unique('support'), metadata: { tier: 'gold' } })
  src.old = await created(h, '/v1/features', { name: 'Old units', type: 'metered', meter_id: archived.id })
  src.plan = await created(h, '/v1/plans', {
    name: 'Pro',
    lookup_key: unique('pro'),
    display_order: 3,
    metadata: { segment: 'smb' },
    prices: [
      fixedPrice('49', { trial_period_days: 14, lookup_key: unique('pro-monthly') }),
      { ...usagePrice(src.meter.id), billing_model: 'TIERED', tier_mode: 'SLAB', amount: undefined, tiers: [{ up_to: 10000, unit_amount: '0' }, { up_to: null, unit_amount: '0.002' }] },
      { ...usagePrice(src.meter.id, '5'), billing_model: 'PACKAGE', transform_quantity: { divide_by: 1000, round: 'up' } },
      fixedPrice('199', { billing_period: 'ONETIME', display_name: 'Setup' }),
      { ...usagePrice(archived.id, '1') },
    ],
    entitlements: [
      { feature_id: src.calls.id, usage_limit: 10000, usage_reset_period: 'MONTHLY', is_soft_limit: true },
      { feature_id: src.sso.id },
      { feature_id: src.support.id, static_value: '24/7', end_date: '2030-01-01T00:00:00.000Z' },
      { feature_id: src.old.id, usage_limit: 5, usage_reset_period: 'MONTHLY' },
    ],
  })
  src.grant = await created(h, '/v1/creditgrants', { name: 'Monthly credits', scope: 'PLAN', plan_id: src.plan.id, credits: '100', cadence: 'RECURRING', period: 'MONTHLY', expiration_type: 'BILLING_CYCLE', priority: 1 })
  src.addon = await created(h, '/v1/addons', { name: 'Extra', lookup_key: unique('extra'), prices: [fixedPrice('10')], entitlements: [{ feature_id: src.sso.id }] })
  // A feature stays on its meter when the meter is archived; such a meter is not copied, nor what counts with it.
  expect((await h.http('DELETE', `/v1/meters/${archived.id}`)).status).toBe(200)
})

describe('POST /v1/environments/{id}/clone', () => {
  it('refuses the same environment, another tenant’s, and keys that are not admin, writing nothing', async () => {
    const before = await rowsIn(t.h, sandbox)
    const same = await clone(t.h, production, { target_environment_id: production })
    expect(same.status).toBe(400)
    expect(same.body).toMatchObject({ code: 'validation_error', details: { target_environment_id: expect.stringContaining('another environment') } })

    const stranger = await t.h.newTenant()
    const intoOther = await clone(t.h, production, { target_environment_id: stranger.environments.sandbox })
    expect(intoOther.status).toBe(404)
    expect(intoOther.body.details).toMatchObject({ target_environment_id: stranger.environments.sandbox })
    const fromOther = await clone(t.h, stranger.environments.production, { target_environment_id: sandbox })
    expect(fromOther.status).toBe(404)
    expect((await clone(t.h, 'env_nope', { target_environment_id: sandbox })).status).toBe(404)
    // The other tenant's admin key cannot reach this tenant's environments either.
    expect((await clone(t.h, production, { target_environment_id: sandbox }, t.other)).status).toBe(404)

    expect((await clone(t.h, production, {})).body.details).toEqual({ target_environment_id: 'is required' })
    expect((await clone(t.h, production, { target_environment_id: sandbox, dry_run: true })).status).toBe(400)
    const writer = await created(t.h, '/v1/secrets/api/keys', { name: 'writer', roles: ['write'] })
    expect((await clone(t.h, production, { target_environment_id: sandbox }, writer.api_key)).status).toBe(403)
    expect(await rowsIn(t.h, sandbox)).toEqual(before)
  })

  it('writes nothing when anything fails part way', async () => {
    const before = await rowsIn(t.h, sandbox)
    const sql = t.h.running.deps.sql
    // Credit grants are copied last: refusing them in the sandbox fails the clone after everything else was made.
    await sql.unsafe(`CREATE FUNCTION refuse_grant() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no grants here'; END $$`)
    await sql.unsafe(`CREATE TRIGGER refuse_grant BEFORE INSERT ON credit_grants FOR EACH ROW WHEN (NEW.environment_id = '${sandbox}') EXECUTE FUNCTION refuse_grant()`)
    try {
      const res = await clone(t.h, production, { target_environment_id: sandbox })
      expect(res.status).toBe(500)
    } finally {
      await sql.unsafe('DROP TRIGGER refuse_grant ON credit_grants')
      await sql.unsafe('DROP FUNCTION refuse_grant')
    }
    expect(await rowsIn(t.h, sandbox)).toEqual(before)
  })

  it('copies features first, then plans with their prices, entitlements and credit grants, remapping every id', async () => {
    const res = await clone(t.h, production, { target_environment_id: sandbox })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    const { summary, skipped } = res.body
    expect(summary.meter).toMatchObject({ created: 1, skipped: 0 })
    expect(summary.group.created).toBe(1)
    expect(summary.feature).toMatchObject({ created: 3, skipped: 1 })
    expect(summary.plan.created).toBe(1)
    expect(summary.addon.created).toBe(1)
    expect(summary.price).toMatchObject({ created: 5, skipped: 1 })
    expect(summary.entitlement).toMatchObject({ created: 4, skipped: 1 })
    expect(summary.credit_grant.created).toBe(1)
    expect(skipped.map((s: any) => [s.entity_type, s.source_id])).toEqual([
      ['feature', src.old.id],
      ['price', src.plan.prices[4].id],
      ['entitlement', src.plan.entitlements[3].id],
    ])
    expect(skipped[0].reason).toContain('is not published')
    // Features first: every feature is made before the first plan.
    const order = res.body.copied.map((c: any) => c.entity_type)
    expect(order.lastIndexOf('feature')).toBeLessThan(order.indexOf('plan'))

    const target = (type: string, id: string) => res.body.copied.find((c: any) => c.entity_type === type && c.source_id === id).target_id
    const meterId = target('meter', src.meter.id)
    expect(meterId).not.toBe(src.meter.id)
    const meter = (await inSandbox(`/v1/meters/${meterId}`)).body
    expect(meter).toMatchObject({ environment_id: sandbox, event_name: src.meter.event_name, filters: [{ key: 'region', values: ['eu'] }], aggregation: { type: 'COUNT' } })
    const calls = (await inSandbox(`/v1/features/${target('feature', src.calls.id)}`)).body
    expect(calls).toMatchObject({ lookup_key: src.calls.lookup_key, meter_id: meterId, group_id: target('group', src.group.id), unit_plural: 'calls' })

    const plan = (await inSandbox(`/v1/plans/${target('plan', src.plan.id)}`)).body
    expect(plan).toMatchObject({ environment_id: sandbox, name: 'Pro', lookup_key: src.plan.lookup_key, display_order: 3, metadata: { segment: 'smb' } })
    expect(plan.prices.map((p: any) => [p.type, p.billing_model, p.billing_period, p.amount, p.meter_id, p.trial_period_days, p.lookup_key])).toEqual([
      ['FIXED', 'FLAT_FEE', 'MONTHLY', '49', null, 14, src.plan.prices[0].lookup_key],
      ['USAGE', 'TIERED', 'MONTHLY', '0', meterId, 0, null],
      ['USAGE', 'PACKAGE', 'MONTHLY', '5', meterId, 0, null],
      ['FIXED', 'FLAT_FEE', 'ONETIME', '199', null, 0, null],
    ])
    expect(plan.prices[1].tiers).toEqual(src.plan.prices[1].tiers)
    expect(plan.prices[2].transform_quantity).toEqual({ divide_by: 1000, round: 'up' })
    expect(plan.entitlements.map((e: any) => [e.feature_id, e.usage_limit, e.is_soft_limit, e.static_value, e.end_date])).toEqual([
      [calls.id, 10000, true, null, null],
      [target('feature', src.sso.id), null, false, null, null],
      [target('feature', src.support.id), null, false, '24/7', '2030-01-01T00:00:00.000Z'],
    ])
    expect(plan.credit_grants.map((g: any) => [g.plan_id, g.credits, g.period, g.expiration_type, g.priority])).toEqual([[plan.id, '100', 'MONTHLY', 'BILLING_CYCLE', 1]])
    const addon = (await inSandbox(`/v1/addons/${target('addon', src.addon.id)}`)).body
    expect(addon.entitlements[0].feature_id).toBe(target('feature', src.sso.id))
    // Announced in the target as any creation is.
    expect(await eventsOf(t.h, calls.id)).toEqual(['feature.created'])
  })

  it('updates on a second clone, never duplicates, and mirrors a cloned plan’s removed prices, entitlements and grants', async () => {
    const before = await rowsIn(t.h, sandbox)
    const again = await clone(t.h, production, { target_environment_id: sandbox })
    expect(again.status).toBe(200)
    expect(again.body.copied.every((c: any) => c.action === 'unchanged')).toBe(true)
    expect(again.body.removed).toEqual([])
    expect(await rowsIn(t.h, sandbox)).toEqual(before)

    // Change the source: a renamed feature, a price renamed, one added and one removed, a new limit, a grant removed.
    const h = t.h
    expect((await h.http('PUT', `/v1/features/${src.sso.id}`, { body: { name: 'Single sign-on' } })).status).toBe(200)
    expect((await h.http('PUT', `/v1/prices/${src.plan.prices[0].id}`, { body: { display_name: 'Pro monthly' } })).status).toBe(200)
    expect((await h.http('DELETE', `/v1/prices/${src.plan.prices[2].id}`)).status).toBe(200)
    const added = await created(h, '/v1/prices', { ...fixedPrice('490', { billing_period: 'ANNUAL' }), plan_id: src.plan.id })
    expect((await h.http('PUT', `/v1/entitlements/${src.plan.entitlements[0].id}`, { body: { usage_limit: 20000 } })).status).toBe(200)
    expect((await h.http('DELETE', `/v1/creditgrants/${src.grant.id}`)).status).toBe(200)

    const third = await clone(t.h, production, { target_environment_id: sandbox })
    expect(third.status, JSON.stringify(third.body)).toBe(200)
    const action = (id: string) => third.body.copied.find((c: any) => c.source_id === id)?.action
    expect(action(src.sso.id)).toBe('updated')
    expect(action(src.calls.id)).toBe('unchanged')
    expect(action(src.plan.prices[0].id)).toBe('updated')
    expect(action(added.id)).toBe('created')
    expect(action(src.plan.entitlements[0].id)).toBe('updated')
    expect(third.body.removed.map((r: any) => [r.entity_type, r.source_id])).toEqual([
      ['price', src.plan.prices[2].id],
      ['credit_grant', src.grant.id],
    ])
    const after = await rowsIn(t.h, sandbox)
    expect(after.features).toBe(before.features)
    expect(after.prices).toBe(before.prices + 1) // one more row: the deleted one stays, as status deleted

    const planId = third.body.copied.find((c: any) => c.source_id === src.plan.id).target_id
    const plan = (await inSandbox(`/v1/plans/${planId}`)).body
    expect(plan.prices.map((p: any) => [p.billing_period, p.amount, p.display_name])).toEqual([
      ['MONTHLY', '49', 'Pro monthly'],
      ['MONTHLY', '0', null],
      ['ONETIME', '199', 'Setup'],
      ['ANNUAL', '490', null],
    ])
    expect(plan.entitlements[0].usage_limit).toBe(20000)
    expect(plan.credit_grants).toEqual([])
    const sso = (await inSandbox(`/v1/features/${third.body.copied.find((c: any) => c.source_id === src.sso.id).target_id}`)).body
    expect(sso).toMatchObject({ name: 'Single sign-on', version: 2 })
  })

  it('clones back into the origin without copying anything twice: a copy maps back to its original', async () => {
    const before = await rowsIn(t.h, production)
    const back = await clone(t.h, sandbox, { target_environment_id: production })
    expect(back.status, JSON.stringify(back.body)).toBe(200)
    expect(back.body.copied.filter((c: any) => c.action !== 'unchanged')).toEqual([])
    expect(back.body.copied.find((c: any) => c.entity_type === 'plan').target_id).toBe(src.plan.id)
    expect(back.body.removed).toEqual([])
    expect(await rowsIn(t.h, production)).toEqual({ ...before, map: before.map + back.body.copied.length })
  })

  it('matches by lookup_key in an environment it never cloned into, and skips a same-key record of another kind', async () => {
    const other = await t.h.newTenant()
    const key = other.apiKey
    const sandboxOfOther = other.environments.sandbox
    const otherSandboxKey = (await created(t.h, '/v1/secrets/api/keys', { name: 'admin', roles: ['admin'], environment_id: sandboxOfOther }, key)).api_key
    await created(t.h, '/v1/features', { name: 'SSO', type: 'boolean', lookup_key: 'sso' }, key)
    await created(t.h, '/v1/features', { name: 'Seats', type: 'static', lookup_key: 'seats' }, key)
    const existing = await created(t.h, '/v1/features', { name: 'SSO (old name)', type: 'boolean', lookup_key: 'sso' }, otherSandboxKey)
    await created(t.h, '/v1/features', { name: 'Seats', type: 'boolean', lookup_key: 'seats' }, otherSandboxKey)
    const res = await clone(t.h, other.environments.production, { target_environment_id: sandboxOfOther }, key)
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.body.copied).toEqual([{ entity_type: 'feature', source_id: expect.any(String), target_id: existing.id, action: 'updated' }])
    expect(res.body.skipped).toEqual([{ entity_type: 'feature', source_id: expect.any(String), reason: expect.stringContaining('another type or meter') }])
    expect((await t.h.http('GET', `/v1/features/${existing.id}`, { key: otherSandboxKey })).body.name).toBe('SSO')
  })
})
