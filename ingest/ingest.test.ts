// Intake in direct mode, end to end over HTTP: what is accepted is stored, exactly once per event id.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../test/harness.ts'

let h: Harness
beforeAll(async () => {
  h = await startHarness({ env: { KAFKA_BROKERS: '' } })
})
afterAll(() => h?.stop())

const listFor = async (customer: string) => (await h.http('GET', `/v1/events?external_customer_id=${encodeURIComponent(customer)}&limit=1000`)).body

describe('POST /v1/events', () => {
  it('stores the event with trimmed names, UTC milliseconds and exact numbers', async () => {
    const raw = `{"event_name":"  api.call ","external_customer_id":" cust-1 ","event_id":"e-exact","timestamp":"2024-03-10T12:30:45.123+02:00",
      "source":"sdk","properties":{"tokens":12345678901234567890.123456789,"price":"0.000000000001","n":42,"model":"gpt"}}`
    const res = await h.http('POST', '/v1/events', { raw, headers: { 'content-type': 'application/json' } })
    expect(res.status).toBe(202)
    expect(res.body).toEqual({ event_id: 'e-exact' })
    const list = await listFor('cust-1')
    expect(list.items).toHaveLength(1)
    expect(list.items[0]).toMatchObject({
      id: 'e-exact',
      event_name: 'api.call',
      external_customer_id: 'cust-1',
      source: 'sdk',
      timestamp: '2024-03-10T10:30:45.123Z',
      properties: { tokens: '12345678901234567890.123456789', price: '0.000000000001', n: 42, model: 'gpt' },
    })
  })

  it('generates an event id when none is given', async () => {
    const res = await h.http('POST', '/v1/events', { body: { event_name: 'gen', external_customer_id: 'cust-gen' } })
    expect(res.status).toBe(202)
    expect(res.body.event_id).toMatch(/^event_[0-9a-f]{32}$/)
    expect((await listFor('cust-gen')).items.map((e: { id: string }) => e.id)).toEqual([res.body.event_id])
  })

  it.each([
    [{ event_name: '   ', external_customer_id: 'c' }, 'event_name', 'must not be blank'],
    [{ event_name: 'x', external_customer_id: ' \t' }, 'external_customer_id', 'must not be blank'],
    [{ event_name: 'x' }, 'external_customer_id', 'is required'],
    [{ event_name: 'x', external_customer_id: 'c', timestamp: 'yesterday' }, 'timestamp', 'must match format "date-time"'],
    [{ event_name: 'x', external_customer_id: 'c', properties: [1] }, 'properties', 'must be object'],
    [{ event_name: 'x', external_customer_id: 'c', tenant_id: 'other' }, 'tenant_id', 'is not a known field'],
  ])('rejects %j with 400 naming %s and stores nothing', async (body, field, reason) => {
    const res = await h.http('POST', '/v1/events', { body: { ...body, event_id: 'never-stored' } })
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('validation_error')
    expect(res.body.details[field]).toBe(reason)
    expect((await h.http('GET', '/v1/events/lookup?event_id=never-stored')).status).toBe(404)
  })

  it('answers a lookup of an id longer than intake takes with 400 naming event_id', async () => {
    const res = await h.http('GET', `/v1/events/lookup?event_id=${'a'.repeat(400)}`)
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('validation_error')
    expect(Object.keys(res.body.details)).toEqual(['event_id'])
  })

  it('rejects timestamps more than EVENT_MAX_FUTURE in the future, accepts those within it', async () => {
    const late = new Date(Date.now() + 6 * 60_000).toISOString()
    const soon = new Date(Date.now() + 4 * 60_000).toISOString()
    const bad = await h.http('POST', '/v1/events', { body: { event_name: 'f', external_customer_id: 'cust-f', timestamp: late } })
    expect(bad.status).toBe(400)
    expect(bad.body.details.timestamp).toBe('must not be more than 300 seconds in the future')
    const ok = await h.http('POST', '/v1/events', { body: { event_name: 'f', external_customer_id: 'cust-f', timestamp: soon } })
    expect(ok.status).toBe(202)
    expect((await listFor('cust-f')).items).toHaveLength(1)
  })
})

describe('POST /v1/events/bulk', () => {
  it('validates all first, stores the valid ones and reports the invalid per index', async () => {
    const res = await h.http('POST', '/v1/events/bulk', {
      body: {
        events: [
          { event_name: 'b', external_customer_id: 'cust-b', event_id: 'b1' },
          { event_name: ' ', external_customer_id: 'cust-b', event_id: 'b2' },
          { event_name: 'b', external_customer_id: 'cust-b', event_id: 'b3', timestamp: 'nope' },
          { event_name: 'b', external_customer_id: 'cust-b', event_id: 'b4' },
        ],
      },
    })
    expect(res.status).toBe(202)
    expect(res.body.event_ids).toEqual(['b1', null, null, 'b4'])
    expect(res.body.failed).toEqual([
      { index: 1, details: { event_name: 'must not be blank' } },
      { index: 2, details: { timestamp: 'must match format "date-time"' } },
    ])
    expect((await listFor('cust-b')).items.map((e: { id: string }) => e.id).sort()).toEqual(['b1', 'b4'])
  })

  it('answers 400 when no event is valid, and for an empty or oversized batch', async () => {
    const none = await h.http('POST', '/v1/events/bulk', { body: { events: [{ event_name: 'x' }] } })
    expect(none.status).toBe(400)
    expect(none.body.details).toEqual({ 'events[0].external_customer_id': 'is required' })
    expect((await h.http('POST', '/v1/events/bulk', { body: { events: [] } })).status).toBe(400)
    const many = Array.from({ length: 1001 }, (_, i) => ({ event_name: 'x', external_customer_id: 'c', event_id: `m${i}` }))
    const big = await h.http('POST', '/v1/events/bulk', { body: { events: many } })
    expect(big.status).toBe(400)
    expect(big.body.details.events).toBe('must NOT have more than 1000 items')
  })
})

describe('exactly once per event id', () => {
  it('stores a resent id once, whatever its timestamp, and the lookup shows the dropped copy', async () => {
    const first = { event_name: 'd', external_customer_id: 'cust-d', event_id: 'dup-1', timestamp: '2024-01-01T00:00:00.000Z', properties: { v: 1 } }
    expect((await h.http('POST', '/v1/events', { body: first })).status).toBe(202)
    const again = { ...first, timestamp: '2024-02-01T00:00:00.000Z', properties: { v: 2 } }
    expect((await h.http('POST', '/v1/events', { body: again })).status).toBe(202)
    const list = await listFor('cust-d')
    expect(list.items).toHaveLength(1)
    expect(list.items[0]).toMatchObject({ timestamp: '2024-01-01T00:00:00.000Z', properties: { v: 1 } })
    const lookup = await h.http('GET', '/v1/events/lookup?event_id=dup-1')
    expect(lookup.body).toMatchObject({ status: 'duplicate', event: { id: 'dup-1' }, duplicates: [{ timestamp: '2024-02-01T00:00:00.000Z' }] })
  })

  it('stores an id repeated inside one bulk request once', async () => {
    const e = { event_name: 'd', external_customer_id: 'cust-d2', event_id: 'dup-2' }
    const res = await h.http('POST', '/v1/events/bulk', { body: { events: [e, { ...e, timestamp: '2024-01-05T00:00:00Z' }, e] } })
    expect(res.body.event_ids).toEqual(['dup-2', 'dup-2', 'dup-2'])
    expect((await listFor('cust-d2')).items).toHaveLength(1)
  })

  it('keeps ids apart per tenant: the same id in another tenant is another event', async () => {
    const other = await h.newTenant()
    const e = { event_name: 'd', external_customer_id: 'cust-t', event_id: 'shared-id' }
    expect((await h.http('POST', '/v1/events', { body: e })).status).toBe(202)
    expect((await h.http('POST', '/v1/events', { body: e, key: other.apiKey })).status).toBe(202)
    expect((await h.http('GET', '/v1/events/lookup?event_id=shared-id')).body.status).toBe('stored')
    expect((await h.http('GET', '/v1/events/lookup?event_id=shared-id', { key: other.apiKey })).body.status).toBe('stored')
    expect((await h.http('GET', '/v1/events/lookup?event_id=dup-1', { key: other.apiKey })).status).toBe(404)
  })
})

describe('GET /v1/events', () => {
  it('pages newest first with a cursor, and filters by name, source and time', async () => {
    const events = [1, 2, 3, 4, 5].map((i) => ({
      event_name: i % 2 ? 'odd' : 'even',
      external_customer_id: 'cust-page',
      event_id: `p${i}`,
      source: i < 4 ? 'web' : 'batch',
      timestamp: `2024-04-0${i}T00:00:00.000Z`,
    }))
    expect((await h.http('POST', '/v1/events/bulk', { body: { events } })).status).toBe(202)
    const ids: string[] = []
    let cursor = ''
    for (let page = 0; page < 5; page++) {
      const res = await h.http('GET', `/v1/events?external_customer_id=cust-page&limit=2${cursor ? `&cursor=${cursor}` : ''}`)
      expect(res.body.pagination.total).toBe(5)
      ids.push(...res.body.items.map((e: { id: string }) => e.id))
      if (!res.body.has_more) break
      cursor = res.body.next_cursor
    }
    expect(ids).toEqual(['p5', 'p4', 'p3', 'p2', 'p1'])
    const filtered = await h.http('GET', '/v1/events?external_customer_id=cust-page&event_name=odd&source=web&start_time=2024-04-02T00:00:00Z&end_time=2024-04-05T00:00:00Z')
    expect(filtered.body.items.map((e: { id: string }) => e.id)).toEqual(['p3'])
    expect((await h.http('GET', '/v1/events?cursor=garbage')).body.details).toEqual({ cursor: 'is not a cursor returned by this list' })
  })
})

describe('keys and outages', () => {
  it('lets an ingest key send events and nothing else', async () => {
    const created = await h.http('POST', '/v1/secrets/api/keys', { body: { name: 'sdk', roles: ['ingest'] } })
    const key = created.body.api_key as string
    expect((await h.http('POST', '/v1/events', { key, body: { event_name: 'k', external_customer_id: 'cust-k' } })).status).toBe(202)
    const read = await h.http('GET', '/v1/events', { key })
    expect(read.status).toBe(403)
    expect(read.body.code).toBe('permission_denied')
  })

  it('accepts events into the log while storage is down and stores them, once, when it is back', async () => {
    const ch = h.running.deps.ch.client
    const body = { events: [{ event_name: 'o', external_customer_id: 'cust-o', event_id: 'o1' }] }
    const customer = await h.http('POST', '/v1/customers', { body: { external_id: 'cust-o', name: 'O' } })
    await ch.command({ query: 'RENAME TABLE event_batches TO event_batches_away' })
    try {
      expect((await h.http('POST', '/v1/events/bulk', { body })).status).toBe(202)
      expect((await h.http('POST', '/v1/events/bulk', { body })).status).toBe(202)
      const health = await h.http('GET', '/v1/health')
      expect(health.status).toBe(200)
      expect(health.body.event_log).toMatchObject({ status: 'ok', backlog_events: 2 })
      // An entitlement check reads no usage: it answers at once, not after the backlog (nor a 503 after 5 s).
      const asked = Date.now()
      expect((await h.http('GET', `/v1/customers/${customer.body.id}/entitlements`)).status).toBe(200)
      expect(Date.now() - asked).toBeLessThan(2000)
    } finally {
      await ch.command({ query: 'RENAME TABLE event_batches_away TO event_batches' })
    }
    // The read waits for the events acknowledged before it: the inserter's retry stores them, the resent copy as a drop.
    expect((await h.http('GET', '/v1/events/lookup?event_id=o1')).body.status).toBe('duplicate')
    expect((await listFor('cust-o')).items).toHaveLength(1)
    expect((await h.http('GET', '/v1/health')).body.event_log).toMatchObject({ backlog_events: 0, backlog_bytes: 0 })
  })
})
