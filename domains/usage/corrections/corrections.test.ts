// Usage corrections end to end over HTTP on the embedded engines: cancel and amend by event id, per-item results,
// resends changing nothing, the rollups and a raw recount agreeing on the corrected usage, the raw event reads, the
// reconciliation report, and a request stopped between Postgres and ClickHouse finished by a resend and by the job.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../../core/clock.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { readyMeter, send, usage } from '../../../test/usage-helpers.ts'
import { meterUsage } from '../queries/service.ts'
import { applyCorrections, completePendingCorrections } from './service.ts'

let h: Harness
// Recent days: event_ids keeps an id until the end of its dedup window by the server's own clock (its TTL).
const DAY1 = Math.floor(Date.now() / 86_400_000) * 86_400_000 - 3 * 86_400_000
const at = (iso: string): string => new Date(DAY1 + Date.parse(`1970-01-01T${iso}Z`)).toISOString()
const clock = fixedClock(new Date(DAY1 + 4 * 86_400_000))
const meters: Record<string, string> = {}
const RANGE = { start_time: at('00:00:00'), end_time: new Date(DAY1 + 2 * 86_400_000).toISOString(), external_customer_id: 'acme' }

// tokens 10 + 20 + 30 + 40 = 100 over four events in different hours of two days (the rollups hold them).
const EVENTS = [
  { id: 'e1', at: at('00:10:00.000'), props: { tokens: 10 } },
  { id: 'e2', at: at('01:20:30.500'), props: { tokens: 20 } },
  { id: 'e3', at: at('05:00:00.000'), props: { tokens: 30 } },
  { id: 'e4', at: new Date(DAY1 + 86_400_000 + 12 * 3_600_000).toISOString(), props: { tokens: 40 } },
]

const correct = async (items: Record<string, unknown>[]) => {
  const res = await h.http('POST', '/v1/events/corrections', { body: { items } })
  expect(res.status, JSON.stringify(res.body)).toBe(200)
  return res.body as { items: { index: number; event_id: string; status: string; http_status_code: number; correction?: Record<string, any>; error?: { code: string; message: string } }[]; applied: number; unchanged: number; failed: number }
}

const scope = () => ({ tenantId: h.tenant.tenantId, environmentId: h.tenant.environments.production })

/** The corrected usage of a meter over RANGE, from the rollups (API) and recounted from raw rows: they must agree. */
async function both(key: string): Promise<string> {
  const viaViews = (await usage(h, { meter_id: meters[key], ...RANGE })).value
  const raw = await meterUsage(h.running.deps, scope(), { meterId: meters[key], externalCustomerId: 'acme', start: new Date(RANGE.start_time), end: new Date(RANGE.end_time), source: 'raw' })
  expect(raw.value.toFixed()).toBe(viaViews)
  return viaViews
}

beforeAll(async () => {
  h = await startHarness({ clock, env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0' } })
  meters.count = await readyMeter(h, { name: 'count', event_name: 'llm', aggregation: { type: 'COUNT' } })
  meters.sum = await readyMeter(h, { name: 'sum', event_name: 'llm', aggregation: { type: 'SUM', field: 'tokens' } })
  meters.weighted = await readyMeter(h, { name: 'weighted', event_name: 'llm', aggregation: { type: 'WEIGHTED_SUM', field: 'tokens' } })
  meters.peak = await readyMeter(h, { name: 'peak', event_name: 'gpu', aggregation: { type: 'MAX', field: 'load' } })
  await send(h, EVENTS, { customer: 'acme', name: 'llm' })
  await send(h, [{ id: 'g1', at: at('00:10:00'), props: { load: 5 } }], { customer: 'acme', name: 'gpu' })
  const c = await h.http('POST', '/v1/customers', { body: { external_id: 'acme', name: 'Acme' } })
  expect(c.status).toBe(201)
})
afterAll(() => h?.stop())

describe('corrections', () => {
  it('applies each item on its own: cancel, amend, and per-item errors naming the event', async () => {
    expect(await both('sum')).toBe('100')
    const r = await correct([
      { event_id: 'e1', action: 'cancel', reason: 'test traffic' },
      { event_id: 'e2', action: 'amend', reason: 'wrong tokens', event: { event_name: 'llm', external_customer_id: 'acme', timestamp: at('01:20:30.500'), properties: { tokens: 25 } } },
      { event_id: 'nope', action: 'cancel' },
      { event_id: 'g1', action: 'cancel' },
      { event_id: 'e3', action: 'amend' },
      { event_id: 'e4', action: 'amend', event: { event_id: 'other', event_name: 'llm', external_customer_id: 'acme' } },
    ])
    expect(r.items.map((i) => [i.event_id, i.status, i.http_status_code])).toEqual([
      ['e1', 'applied', 201],
      ['e2', 'applied', 201],
      ['nope', 'failed', 404],
      ['g1', 'failed', 400],
      ['e3', 'failed', 400],
      ['e4', 'failed', 400],
    ])
    expect(r.items[2].error?.message).toBe('event nope not found')
    expect(r.items[3].error?.message).toContain(`meter ${meters.peak} (peak), aggregated by MAX`)
    expect(r.items[0].correction).toMatchObject({ action: 'cancel', cancelled_event_id: 'e1', reason: 'test traffic', status: 'applied', external_customer_id: 'acme', event_name: 'llm' })
    expect(r.items[1].correction?.replacement_event_id).toMatch(/^event_/)
    // 25 + 30 + 40; three events; the refused items changed nothing.
    expect(await both('sum')).toBe('95')
    expect(await both('count')).toBe('3')
    expect((await usage(h, { meter_id: meters.peak, ...RANGE })).value).toBe('5')
  })

  it('a resent request changes nothing; a different correction of a cancelled event is refused', async () => {
    const again = await correct([
      { event_id: 'e1', action: 'cancel', reason: 'test traffic' },
      { event_id: 'e2', action: 'amend', reason: 'wrong tokens', event: { external_customer_id: 'acme', event_name: 'llm', timestamp: at('01:20:30.500'), properties: { tokens: 25 } } },
    ])
    expect(again.items.map((i) => i.status)).toEqual(['unchanged', 'unchanged'])
    expect(await both('sum')).toBe('95')
    const refused = await correct([{ event_id: 'e1', action: 'cancel', reason: 'another reason' }])
    expect(refused.items[0]).toMatchObject({ status: 'failed', http_status_code: 409 })
    expect(refused.items[0].error?.message).toContain('e1 is already cancelled')
  })

  it('a second amend replaces the first one; the stored copy is corrected through the original id only', async () => {
    const list = await h.http('GET', '/v1/events/corrections?event_id=e2')
    const replacement = list.body.items[0].replacement_event_id as string
    const direct = await correct([{ event_id: replacement, action: 'cancel' }])
    expect(direct.items[0]).toMatchObject({ status: 'failed', http_status_code: 400 })
    expect(direct.items[0].error?.message).toContain('correct e2 instead')
    const r = await correct([{ event_id: 'e2', action: 'amend', event: { event_name: 'llm', external_customer_id: 'acme', timestamp: at('01:20:30.500'), properties: { tokens: 2 } } }])
    expect(r.items[0].correction).toMatchObject({ cancelled_event_id: replacement })
    // 2 + 30 + 40
    expect(await both('sum')).toBe('72')
    expect(await both('count')).toBe('3')
    // WEIGHTED_SUM over [00:00, 02:00) of day one: only the amended 2 tokens at 01:20:30.5 remain, weighed by the
    // 2,369,500 ms left of the 7,200,000: 2 × 2369500 / 7200000 = 0.658194444444…
    const w = await usage(h, { meter_id: meters.weighted, ...RANGE, end_time: at('02:00:00') })
    expect(w.value).toBe('0.658194444444')
  })

  it('lists corrections with who, when and why, filtered by customer, event name and time range', async () => {
    const all = await h.http('GET', '/v1/events/corrections?external_customer_id=acme&event_name=llm')
    expect(all.status).toBe(200)
    expect(all.body.pagination.total).toBe(3)
    expect(all.body.items.map((c: { event_id: string; action: string }) => `${c.event_id}:${c.action}`)).toEqual(['e2:amend', 'e2:amend', 'e1:cancel'])
    expect(all.body.items[2].created_by).toBeTruthy()
    const early = await h.http('GET', `/v1/events/corrections?start_time=${at('00:00:00')}&end_time=${at('01:00:00')}`)
    expect(early.body.items.map((c: { event_id: string }) => c.event_id)).toEqual(['e1'])
    expect((await h.http('GET', '/v1/events/corrections?external_customer_id=zeta')).body.pagination.total).toBe(0)
  })

  it('raw event reads leave cancelled events out; the reconciliation report counts them as corrected', async () => {
    const events = await h.http('GET', '/v1/events?external_customer_id=acme&event_name=llm')
    const ids = events.body.events?.map((e: { id: string }) => e.id) ?? events.body.items.map((e: { id: string }) => e.id)
    expect(ids).toHaveLength(3)
    expect(ids).not.toContain('e1')
    expect(ids).not.toContain('e2')
    const customer = (await h.http('GET', '/v1/customers/lookup/acme')).body.id ?? (await h.http('GET', '/v1/customers?external_id=acme')).body.items[0].id
    const rec = await h.http('GET', `/v1/customers/${customer}/usage/reconciliation?start_time=${RANGE.start_time}&end_time=${RANGE.end_time}&meter_ids=${meters.count}`)
    expect(rec.status, JSON.stringify(rec.body)).toBe(200)
    // Stored: 4 originals and 2 amended copies; corrected: e1, e2 and e2's first copy; counted: 3.
    expect(rec.body.meters[0]).toMatchObject({ stored: 6, corrected: 3, counted: 3 })
  })

  it('a correction stopped between Postgres and ClickHouse is finished by the resend, or by the job, once', async () => {
    const deps = h.running.deps
    const actor = { ...scope(), keyId: 'test', roles: ['admin' as const] }
    const broken = { ...deps, ch: { ...deps.ch, insertRaw: async () => Promise.reject(new Error('ClickHouse went away')) } }
    await expect(applyCorrections(broken, actor, [{ event_id: 'e3', action: 'cancel', reason: 'crash' }])).rejects.toMatchObject({ status: 503 })
    expect(await both('sum')).toBe('72')
    const resent = await applyCorrections(deps, actor, [{ event_id: 'e3', action: 'cancel', reason: 'crash' }])
    expect(resent.items[0]).toMatchObject({ status: 'unchanged', correction: { status: 'applied' } })
    expect(await both('sum')).toBe('42')

    await expect(applyCorrections(broken, actor, [{ event_id: 'e4', action: 'cancel' }])).rejects.toMatchObject({ status: 503 })
    // The job leaves a fresh pending correction to its request, then finishes it; a second run finds nothing.
    expect(await completePendingCorrections(deps)).toEqual({ completed: 0 })
    clock.advance(10 * 60_000)
    expect(await completePendingCorrections(deps)).toEqual({ completed: 1 })
    expect(await completePendingCorrections(deps)).toEqual({ completed: 0 })
    expect(await both('sum')).toBe('2')
    expect(await both('count')).toBe('1')
  })

  it('an event past the dedup window can no longer be corrected', async () => {
    clock.advance(40 * 86_400_000)
    const r = await correct([{ event_id: 'e2', action: 'cancel' }])
    expect(r.items[0]).toMatchObject({ status: 'failed', http_status_code: 400 })
    expect(r.items[0].error?.message).toContain('past the dedup window')
  })

  it('refuses a malformed request whole, naming the field', async () => {
    const res = await h.http('POST', '/v1/events/corrections', { body: { items: [{ event_id: 'e3', action: 'delete' }] } })
    expect(res.status).toBe(400)
    expect(JSON.stringify(res.body.details)).toContain('action')
  })
})
