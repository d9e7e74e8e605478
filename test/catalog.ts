// Helpers for the catalog and subscription tests: build records over HTTP and read the outbox.
import { afterAll, beforeAll, expect } from 'vitest'
import { startHarness, type Harness } from './harness.ts'

/**
 * Starts the program for a test file, with a second tenant whose key proves isolation (`other`);
 * stops it after the file. Read `t.h` and `t.other` inside tests, once beforeAll has run.
 */
export function twoTenants(options?: Parameters<typeof startHarness>[0]): { h: Harness; other: string } {
  const t = {} as { h: Harness; other: string }
  beforeAll(async () => {
    t.h = await startHarness(options)
    t.other = (await t.h.newTenant()).apiKey
  })
  afterAll(() => t.h?.stop())
  return t
}

/** The event types the outbox holds for one record, oldest first. */
export async function eventsOf(h: Harness, entityId: string): Promise<string[]> {
  const rows = await h.running.deps.sql<{ event_type: string }[]>`SELECT event_type FROM webhook_events WHERE entity_id = ${entityId} ORDER BY created_at, id`
  return rows.map((r) => r.event_type)
}

/** POSTs and expects 201: fixtures that fail should fail loudly at the fixture. */
export async function created(h: Harness, path: string, body: unknown, key?: string): Promise<any> {
  const res = await h.http('POST', path, { body, key })
  expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(201)
  return res.body
}

let seq = 0
/** A name no other fixture in the file uses. */
export const unique = (prefix: string): string => `${prefix}-${process.pid}-${++seq}`

export const meter = (h: Harness, key?: string): Promise<any> =>
  created(h, '/v1/meters', { name: unique('meter'), event_name: unique('event'), aggregation: { type: 'COUNT' } }, key)

export async function feature(h: Harness, type: 'metered' | 'boolean' | 'static', extra: Record<string, unknown> = {}, key?: string): Promise<any> {
  const meterId = type === 'metered' ? (await meter(h, key)).id : undefined
  return created(h, '/v1/features', { name: unique(type), type, meter_id: meterId, ...extra }, key)
}

/** A monthly fixed price of `amount` USD, the usual fixture price. */
export const fixedPrice = (amount = '10', extra: Record<string, unknown> = {}) => ({
  currency: 'USD',
  type: 'FIXED',
  billing_model: 'FLAT_FEE',
  billing_period: 'MONTHLY',
  amount,
  ...extra,
})

export const usagePrice = (meterId: string, amount = '0.01', extra: Record<string, unknown> = {}) => ({
  currency: 'USD',
  type: 'USAGE',
  billing_model: 'FLAT_FEE',
  billing_period: 'MONTHLY',
  amount,
  meter_id: meterId,
  ...extra,
})

export const plan = (h: Harness, body: Record<string, unknown> = {}, key?: string): Promise<any> =>
  created(h, '/v1/plans', { name: unique('plan'), ...body }, key)

export const customer = (h: Harness, body: Record<string, unknown> = {}, key?: string): Promise<any> =>
  created(h, '/v1/customers', { external_id: unique('cust'), ...body }, key)

/** POST /v1/subscriptions in USD, monthly unless `body` says otherwise; expects 201. */
export const subscribed = (h: Harness, body: Record<string, unknown>, key?: string): Promise<any> =>
  created(h, '/v1/subscriptions', { currency: 'USD', billing_period: 'MONTHLY', ...body }, key)
