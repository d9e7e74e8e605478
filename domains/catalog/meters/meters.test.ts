// Meters over HTTP: validation, tenancy, renaming, new filters (a backfilled revision) and archiving.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { readyMeter, send, usage } from '../../../test/usage-helpers.ts'

let h: Harness
const RANGE = { start_time: '2024-05-01T00:00:00Z', end_time: '2024-06-01T00:00:00Z' }

beforeAll(async () => {
  // A one-second settle: long enough to observe a meter before its backfill, short for the test.
  h = await startHarness({ env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '1' } })
})
afterAll(() => h?.stop())

describe('create and read', () => {
  it('creates a meter with trimmed names and returns it with its backfill state', async () => {
    const res = await h.http('POST', '/v1/meters', {
      body: { name: ' Tokens ', event_name: ' llm.tokens ', aggregation: { type: 'SUM_WITH_MULTIPLIER', field: 'tokens', multiplier: 0.001 }, filters: [{ key: 'model', values: ['a', 'a', 'b'] }] },
    })
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({
      id: expect.stringMatching(/^meter_/),
      name: 'Tokens',
      event_name: 'llm.tokens',
      aggregation: { type: 'SUM_WITH_MULTIPLIER', field: 'tokens', multiplier: '0.001' },
      filters: [{ key: 'model', values: ['a', 'b'] }],
      reset_usage: 'BILLING_PERIOD',
      status: 'published',
      revision: 1,
      ready_revision: 0,
      backfill: { revision: 1, status: 'pending' },
      version: 1,
    })
    const got = await h.http('GET', `/v1/meters/${res.body.id}`)
    expect(got.body.name).toBe('Tokens')
    const list = await h.http('GET', '/v1/meters?event_name=llm.tokens')
    expect(list.body.items.map((m: { id: string }) => m.id)).toEqual([res.body.id])
    expect(list.body.pagination.total).toBe(1)
  })

  it.each([
    [{ name: 'x', event_name: 'e', aggregation: { type: 'SUM' } }, 'aggregation.field', 'is required for SUM'],
    [{ name: 'x', event_name: 'e', aggregation: { type: 'SUM_WITH_MULTIPLIER', field: 'v' } }, 'aggregation.multiplier', 'is required for SUM_WITH_MULTIPLIER'],
    [{ name: 'x', event_name: 'e', aggregation: { type: 'SUM_WITH_MULTIPLIER', field: 'v', multiplier: '-2' } }, 'aggregation.multiplier', 'must be a positive decimal number'],
    [{ name: 'x', event_name: 'e', aggregation: { type: 'MEDIAN' } }, 'aggregation.type', expect.stringContaining('must be one of COUNT, SUM')],
    [{ name: 'x', event_name: '  ', aggregation: { type: 'COUNT' } }, 'event_name', 'must not be blank'],
    [{ name: 'x', event_name: 'e', aggregation: { type: 'COUNT', bucket_size: 'YEAR' } }, 'aggregation.bucket_size', expect.stringContaining('must be one of')],
  ])('rejects %j naming %s', async (body, field, reason) => {
    const res = await h.http('POST', '/v1/meters', { body })
    expect(res.status).toBe(400)
    expect(res.body.details).toEqual({ [field]: reason })
    expect((await h.http('GET', '/v1/meters?event_name=e')).body.items).toEqual([])
  })

  it("another tenant's meter is not found", async () => {
    const id = (await h.http('POST', '/v1/meters', { body: { name: 'mine', event_name: 'mine', aggregation: { type: 'COUNT' } } })).body.id
    const other = await h.newTenant()
    expect((await h.http('GET', `/v1/meters/${id}`, { key: other.apiKey })).status).toBe(404)
    expect((await h.http('PUT', `/v1/meters/${id}`, { key: other.apiKey, body: { name: 'theirs' } })).status).toBe(404)
    expect((await h.http('POST', '/v1/events/usage/meter', { key: other.apiKey, body: { meter_id: id, ...RANGE } })).status).toBe(404)
  })
})

describe('backfill', () => {
  it('counts events stored before the meter, answering 503 until it has', async () => {
    await send(h, Array.from({ length: 25 }, (_, i) => ({ id: `old-${i}`, at: `2024-05-10T00:00:${String(i).padStart(2, '0')}Z`, props: { v: i } })), { customer: 'bf', name: 'old' })
    const created = await h.http('POST', '/v1/meters', { body: { name: 'old', event_name: 'old', aggregation: { type: 'SUM', field: 'v' } } })
    const early = await h.http('POST', '/v1/events/usage/meter', { body: { meter_id: created.body.id, ...RANGE } })
    expect(early.status).toBe(503)
    expect(early.body.details.backfill.status).toBe('pending')
    const id = await readyMeter(h, { name: 'old too', event_name: 'old', aggregation: { type: 'COUNT' } })
    const meter = await h.http('GET', `/v1/meters/${id}`)
    expect(meter.body.backfill).toMatchObject({ status: 'done', processed: 25, total: 25 })
    expect((await usage(h, { meter_id: id, ...RANGE })).value).toBe('25')
    await readyMeter(h, { name: 'wait', event_name: 'other', aggregation: { type: 'COUNT' } })
    expect((await usage(h, { meter_id: created.body.id, ...RANGE })).value).toBe('300') // 0 + 1 + … + 24
  })
})

describe('update and archive', () => {
  it('renames without a new revision, refilters with one, and counts old events by the new filters once backfilled', async () => {
    const id = await readyMeter(h, { name: 'by model', event_name: 'gen', aggregation: { type: 'COUNT' }, filters: [{ key: 'model', values: ['a'] }] })
    await send(h, [
      { id: 'g1', at: '2024-05-02T00:00:00Z', props: { model: 'a' } },
      { id: 'g2', at: '2024-05-02T00:00:00Z', props: { model: 'b' } },
      { id: 'g3', at: '2024-05-02T00:00:00Z', props: { model: 'b' } },
    ], { customer: 'up', name: 'gen' })
    expect((await usage(h, { meter_id: id, ...RANGE })).value).toBe('1')

    const renamed = await h.http('PUT', `/v1/meters/${id}`, { body: { name: 'renamed', version: 1 } })
    expect(renamed.body).toMatchObject({ name: 'renamed', version: 2, revision: 1 })
    const stale = await h.http('PUT', `/v1/meters/${id}`, { body: { name: 'again', version: 1 } })
    expect(stale.status).toBe(409)
    expect(stale.body.code).toBe('version_conflict')

    const refiltered = await h.http('PUT', `/v1/meters/${id}`, { body: { filters: [{ key: 'model', values: ['b'] }] } })
    expect(refiltered.body).toMatchObject({ revision: 2, ready_revision: 1 })
    // Until revision 2 is backfilled, queries keep reading revision 1: the old number, never a partial one.
    expect((await usage(h, { meter_id: id, ...RANGE })).value).toBe('1')
    await send(h, [{ id: 'g4', at: '2024-05-03T00:00:00Z', props: { model: 'b' } }], { customer: 'up', name: 'gen' })
    for (let i = 0; i < 100 && (await h.http('GET', `/v1/meters/${id}`)).body.ready_revision !== 2; i++) await new Promise((r) => setTimeout(r, 100))
    expect((await usage(h, { meter_id: id, ...RANGE })).value).toBe('3') // g2 g3 backfilled, g4 live
  })

  it('archives: the meter stops counting new events and its past usage stays readable', async () => {
    const id = await readyMeter(h, { name: 'arch', event_name: 'arch', aggregation: { type: 'COUNT' } })
    await send(h, [{ id: 'a1', at: '2024-05-04T00:00:00Z' }], { customer: 'ar', name: 'arch' })
    const archived = await h.http('DELETE', `/v1/meters/${id}`)
    expect(archived.body.status).toBe('archived')
    await send(h, [{ id: 'a2', at: '2024-05-05T00:00:00Z' }], { customer: 'ar', name: 'arch' })
    expect((await usage(h, { meter_id: id, ...RANGE })).value).toBe('1')
    expect((await h.http('GET', '/v1/meters?event_name=arch')).body.items).toEqual([])
    expect((await h.http('GET', '/v1/meters?event_name=arch&status=archived')).body.items).toHaveLength(1)
    expect((await h.http('PUT', `/v1/meters/${id}`, { body: { name: 'z' } })).status).toBe(400)
  })
})
