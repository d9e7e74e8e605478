import { describe, expect, it } from 'vitest'
import { created, eventsOf, twoTenants, unique } from '../../../test/catalog.ts'
import type { Harness } from '../../../test/harness.ts'

const t = twoTenants()
const EXAMPLE = '$49/month includes 10k API calls, then $0.002 per call; 1M tokens free then $3 per million; SSO on Enterprise'

const parse = (h: Harness, body: unknown, query = '', key?: string) => h.http('POST', `/v1/ai/pricing/parse${query}`, { body, key })

/** How many records of the catalog the environment holds, to prove a refusal wrote nothing. */
async function counts(h: Harness) {
  const sql = h.running.deps.sql
  const env = h.tenant.environments.production
  const [row] = await sql<{ meters: number; features: number; plans: number; prices: number; entitlements: number }[]>`SELECT
    (SELECT count(*)::int FROM meters WHERE environment_id = ${env}) AS meters,
    (SELECT count(*)::int FROM features WHERE environment_id = ${env}) AS features,
    (SELECT count(*)::int FROM plans WHERE environment_id = ${env}) AS plans,
    (SELECT count(*)::int FROM prices WHERE environment_id = ${env}) AS prices,
    (SELECT count(*)::int FROM entitlements WHERE environment_id = ${env}) AS entitlements`
  return row
}

describe('POST /v1/ai/pricing/parse', () => {
  it('answers a configuration every create endpoint accepts, and writes nothing without apply', async () => {
    const before = await counts(t.h)
    const res = await parse(t.h, { description: EXAMPLE })
    expect(res.status).toBe(200)
    expect(res.body.source).toBe('rules')
    expect(res.body.currency).toBe('USD')
    expect(res.body.meters.map((m: any) => m.event_name)).toEqual(['api_call', 'token_usage'])
    expect(res.body.plans.map((p: any) => p.lookup_key)).toEqual(['standard', 'enterprise'])
    expect(res.body.plans[0].prices[2]).toEqual({
      currency: 'USD', type: 'USAGE', billing_model: 'PACKAGE', billing_period: 'MONTHLY', amount: '3',
      transform_quantity: { divide_by: 1000000, round: 'up' }, meter_ref: 'token_usage', display_name: 'Tokens',
    })
    expect(res.body.warnings).toEqual([{ text: 'Enterprise', message: expect.stringContaining('has no price'), left_out: false }])
    expect(await counts(t.h)).toEqual(before)
  })

  it('creates meters, features, plans, prices and entitlements in one request with apply=true', async () => {
    const res = await parse(t.h, { description: EXAMPLE }, '?apply=true')
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    const { applied } = res.body
    expect(applied.meters.map((m: any) => [m.ref, m.created])).toEqual([['api_call', true], ['token_usage', true]])
    expect(applied.features.map((f: any) => [f.ref, f.created])).toEqual([['api_calls', true], ['tokens', true], ['sso', true]])
    const meter = Object.fromEntries(applied.meters.map((m: any) => [m.ref, m.id]))
    const feature = Object.fromEntries(applied.features.map((f: any) => [f.ref, f.id]))

    const plan = (await t.h.http('GET', `/v1/plans/${applied.plans[0].id}`)).body
    expect(plan).toMatchObject({ name: 'Standard', lookup_key: 'standard', credit_grants: [] })
    expect(plan.prices.map((p: any) => [p.type, p.billing_model, p.amount, p.meter_id])).toEqual([
      ['FIXED', 'FLAT_FEE', '49', null],
      ['USAGE', 'FLAT_FEE', '0.002', meter.api_call],
      ['USAGE', 'PACKAGE', '3', meter.token_usage],
    ])
    expect(plan.entitlements.map((e: any) => [e.feature_id, e.usage_limit, e.is_soft_limit, e.usage_reset_period])).toEqual([
      [feature.api_calls, 10000, true, 'MONTHLY'],
      [feature.tokens, 1000000, true, 'MONTHLY'],
    ])
    const tokens = (await t.h.http('GET', `/v1/meters/${meter.token_usage}`)).body
    expect(tokens).toMatchObject({ event_name: 'token_usage', aggregation: { type: 'SUM', field: 'tokens' } })
    const enterprise = (await t.h.http('GET', `/v1/plans/${applied.plans[1].id}`)).body
    expect(enterprise.entitlements.map((e: any) => [e.feature.lookup_key, e.is_enabled])).toEqual([['sso', true]])
    // Made by the services the endpoints use: their announcements are written with them.
    expect(await eventsOf(t.h, feature.sso)).toEqual(['feature.created'])
  })

  it('reuses a feature of the same lookup_key (with its meter) and a meter counting the same events', async () => {
    const before = await counts(t.h)
    const res = await parse(t.h, { description: '$99/month includes 50k API calls, then $0.001 per call', plan_name: 'Growth' }, '?apply=true')
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    expect(res.body.applied.meters.map((m: any) => m.created)).toEqual([false])
    expect(res.body.applied.features.map((f: any) => f.created)).toEqual([false])
    const after = await counts(t.h)
    expect([after.meters - before.meters, after.features - before.features, after.plans - before.plans, after.prices - before.prices]).toEqual([0, 0, 1, 2])
  })

  it('refuses to apply a plan whose lookup_key exists, rolling back the meters and features made before it', async () => {
    await created(t.h, '/v1/plans', { name: 'Taken', lookup_key: 'seats_plan' })
    const before = await counts(t.h)
    const res = await parse(t.h, { description: '$0.01 per export, SSO, $10 per seat per month', plan_name: 'Seats plan' }, '?apply=true')
    expect(res.status).toBe(409)
    expect(res.body).toMatchObject({ code: 'already_exists', details: { lookup_key: 'seats_plan' } })
    expect(await counts(t.h)).toEqual(before)
    expect((await t.h.http('GET', '/v1/features?lookup_key=exports')).body.items).toEqual([])
  })

  it('refuses bad input with a clear 400 and writes nothing', async () => {
    const before = await counts(t.h)
    const cases: [unknown, string, RegExp][] = [
      [{ description: '' }, 'description', /must NOT have fewer than 1 characters/],
      [{ description: '   ' }, 'description', /must not be empty/],
      [{}, 'description', /is required/],
      [{ description: '49 XYZ per month' }, 'currency', /"XYZ" is not a currency we know/],
      [{ description: '49 per month' }, 'currency', /no currency given/],
      [{ description: '$49/month and €5 per seat' }, 'currency', /USD, EUR/],
      [{ description: 'hello world' }, 'description', /no price, allowance or feature/],
      [{ description: '$10/month', currency: 'dollars' }, 'currency', /pattern/],
      [{ description: '$10/month', parser: 'guess' }, 'parser', /must be one of/],
      [{ description: '$10/month', extra: 1 }, 'extra', /is not a known field/],
    ]
    for (const [body, field, message] of cases) {
      for (const query of ['', '?apply=true']) {
        const res = await parse(t.h, body, query)
        expect(res.status, `${JSON.stringify(body)}${query}`).toBe(400)
        expect(res.body.code).toBe('validation_error')
        expect(String(res.body.details[field]), JSON.stringify(res.body)).toMatch(message)
      }
    }
    expect((await parse(t.h, { description: '$10/month' }, '?apply=maybe')).status).toBe(400)
    expect(await counts(t.h)).toEqual(before)
  })

  it('asks the model only when one is configured', async () => {
    const res = await parse(t.h, { description: '$10/month', parser: 'model' })
    expect(res.status).toBe(400)
    expect(res.body).toMatchObject({ code: 'invalid_operation', message: expect.stringContaining('AI_PROVIDER_URL') })
  })

  it('applies what a description places, for each kind of price', async () => {
    const descriptions = [
      '$8/user/month with 5 users included, minimum 3 users',
      'first 10,000 requests at $0.001, next 90,000 at $0.0008, then $0.0005',
      'Volume pricing: up to 1,000 messages at $0.05 each, up to 10,000 at $0.04, above 10,000 $0.03',
      '$5 per 1,000 emails, $500 one-time setup fee, $99/month with a 14-day free trial',
      '100 GB of storage included, then $0.10 per GB; $0.05 per monthly active user',
      '€29/mo or €290/year, Support: 24/7, 99.9% uptime SLA, 5 projects',
    ]
    for (const description of descriptions) {
      const res = await parse(t.h, { description, plan_name: unique('plan') }, '?apply=true')
      expect(res.status, `${description}: ${JSON.stringify(res.body)}`).toBe(201)
      expect(res.body.applied.plans[0].prices.length, description).toBe(res.body.plans[0].prices.length)
    }
  })

  it('needs a key that may write, and keeps each tenant to its own records', async () => {
    const read = await created(t.h, '/v1/secrets/api/keys', { name: 'reader', roles: ['read'] })
    expect((await parse(t.h, { description: '$10/month' }, '', read.api_key)).status).toBe(403)
    const other = await parse(t.h, { description: '$15/month includes 10k API calls, then $0.002 per call' }, '?apply=true', t.other)
    expect(other.status).toBe(201)
    // The other tenant's environment had no API calls feature: it got its own.
    expect(other.body.applied.features.map((f: any) => f.created)).toEqual([true])
  })
})
