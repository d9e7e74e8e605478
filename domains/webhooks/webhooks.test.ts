// Outbound webhooks end to end: endpoints over HTTP, events caused through the API, the delivery and
// retry jobs run through POST /v1/jobs/{name}/run, and a real HTTP receiver (node:http) standing in for
// the customer's endpoint. The clock is fixed, so backoff delays are advanced by hand.
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../core/clock.ts'
import { newSigningSecret, verify } from '../../core/webhook-signing.ts'
import { unseal } from '../../infra/secrets.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import type { Page, WebhookAttemptWire, WebhookEndpointWire, WebhookEventWire } from '../../test/wire.ts'

const clock = fixedClock('2025-06-02T09:00:00Z')
const MINUTE = 60_000
let h: Harness

beforeAll(async () => {
  h = await startHarness({ clock })
})
afterAll(() => h?.stop())

interface Received {
  headers: IncomingHttpHeaders
  body: string
  at: number
}

interface Receiver {
  url: string
  received: Received[]
  /** webhook-id of each request, in arrival order. */
  ids(): string[]
  close(): Promise<void>
}

/** The customer's endpoint: answers the given statuses in turn, then 200. */
async function receiver(statuses: number[] = []): Promise<Receiver> {
  const received: Received[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() })
      const status = statuses[received.length - 1] ?? 200
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'receiver failed')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received,
    ids: () => received.map((r) => r.headers['webhook-id'] as string),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}

interface Tenant {
  key: string
  tenantId: string
}

const tenant = async (): Promise<Tenant> => {
  const t = await h.newTenant()
  return { key: t.apiKey, tenantId: t.tenantId }
}

async function endpoint(t: Tenant, body: Record<string, unknown>): Promise<WebhookEndpointWire> {
  const res = await h.http<WebhookEndpointWire>('POST', '/v1/webhooks/endpoints', { body, key: t.key })
  expect(res.status, JSON.stringify(res.body)).toBe(201)
  return res.body
}

const run = async (job: 'webhook-delivery' | 'webhook-retry'): Promise<Record<string, number>> => {
  const res = await h.http<{ summary: Record<string, number> }>('POST', `/v1/jobs/${job}/run`)
  expect(res.status, JSON.stringify(res.body)).toBe(200)
  return res.body.summary
}

/** Creates a customer and answers the id of its customer.created event. */
async function customerCreated(t: Tenant, externalId = `c-${Math.random()}`): Promise<{ customerId: string; eventId: string }> {
  const res = await h.http('POST', '/v1/customers', { body: { external_id: externalId }, key: t.key })
  expect(res.status).toBe(201)
  const events = await h.http('GET', `/v1/webhooks/events?entity_id=${res.body.id}&event_type=customer.created`, { key: t.key })
  expect(events.body.items).toHaveLength(1)
  return { customerId: res.body.id, eventId: events.body.items[0].id }
}

const event = async (t: Tenant, id: string): Promise<WebhookEventWire> => (await h.http<WebhookEventWire>('GET', `/v1/webhooks/events/${id}`, { key: t.key })).body
const attempts = async (t: Tenant, id: string): Promise<WebhookAttemptWire[]> => (await h.http<Page<WebhookAttemptWire>>('GET', `/v1/webhooks/events/${id}/attempts`, { key: t.key })).body.items

function verifies(secret: string, r: Received): boolean {
  const headers = { id: r.headers['webhook-id'] as string, timestamp: r.headers['webhook-timestamp'] as string, signature: r.headers['webhook-signature'] as string }
  return verify(secret, headers, r.body, new Date())
}

const storedSecrets = async (id: string): Promise<{ secret: string; previous_secret: string | null }> =>
  (await h.running.deps.sql<{ secret: string; previous_secret: string | null }[]>`SELECT secret, previous_secret FROM webhook_endpoints WHERE id = ${id}`)[0]

/** Deletes the tenant's endpoints and stops the receivers, so later tests' runs send nothing to them. */
async function cleanup(t: Tenant, receivers: Receiver[]): Promise<void> {
  const list = await h.http('GET', '/v1/webhooks/endpoints?limit=1000', { key: t.key })
  for (const ep of list.body.items) await h.http('DELETE', `/v1/webhooks/endpoints/${ep.id}`, { key: t.key })
  await Promise.all(receivers.map((r) => r.close()))
}

describe('webhook endpoints', () => {
  it('creates an endpoint with a whsec_ secret shown once; reads, lists, updates and deletes it', async () => {
    const t = await tenant()
    const created = await endpoint(t, { url: 'https://hooks.example.com/billing', description: 'billing sync', filter_types: ['invoice.update.finalized'], metadata: { team: 'fin' } })
    expect(created).toMatchObject({ url: 'https://hooks.example.com/billing', description: 'billing sync', filter_types: ['invoice.update.finalized'], disabled: false, status: 'published', version: 1, tenant_id: t.tenantId })
    expect(created.id).toMatch(/^ep_/)
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)

    const read = await h.http('GET', `/v1/webhooks/endpoints/${created.id}`, { key: t.key })
    expect(read.status).toBe(200)
    expect(read.body).not.toHaveProperty('secret')
    expect(read.body).not.toHaveProperty('previous_secret')
    const list = await h.http('GET', '/v1/webhooks/endpoints?metadata[team]=fin', { key: t.key })
    expect(list.body.items.map((e: WebhookEndpointWire) => e.id)).toEqual([created.id])
    expect(list.body.items[0]).not.toHaveProperty('secret')

    const updated = await h.http('PUT', `/v1/webhooks/endpoints/${created.id}`, { key: t.key, body: { disabled: true, filter_types: [], description: null, version: 1 } })
    expect(updated.body).toMatchObject({ disabled: true, filter_types: [], description: null, version: 2 })
    const stale = await h.http('PUT', `/v1/webhooks/endpoints/${created.id}`, { key: t.key, body: { disabled: false, version: 1 } })
    expect(stale.body.code).toBe('version_conflict')

    expect((await h.http('DELETE', `/v1/webhooks/endpoints/${created.id}`, { key: t.key })).body.status).toBe('deleted')
    expect((await h.http('GET', '/v1/webhooks/endpoints', { key: t.key })).body.items).toEqual([])
  })

  it('stores the secret sealed with the endpoint id, before and after a rotation: the row holds neither secret in clear', async () => {
    const t = await tenant()
    const ep = await endpoint(t, { url: 'https://hooks.example.com/sealed' })
    const created = await storedSecrets(ep.id)
    expect(created.secret).toMatch(/^v1:/)
    expect(created.previous_secret).toBeNull()
    expect(unseal(h.config, ep.id, created.secret)).toBe(ep.secret)
    expect(() => unseal(h.config, 'ep_other', created.secret)).toThrow(/do not decrypt/)

    const rotated = (await h.http('POST', `/v1/webhooks/endpoints/${ep.id}/secret/rotate`, { key: t.key })).body
    const [row] = await h.running.deps.sql`SELECT * FROM webhook_endpoints WHERE id = ${ep.id}`
    expect([row.secret, row.previous_secret]).toEqual([expect.stringMatching(/^v1:/), expect.stringMatching(/^v1:/)])
    expect([unseal(h.config, ep.id, row.secret), unseal(h.config, ep.id, row.previous_secret)]).toEqual([rotated.secret, ep.secret])
    // The key bytes, not just the whsec_ form, appear nowhere in the row.
    for (const secret of [ep.secret, rotated.secret]) expect(JSON.stringify(row)).not.toContain(secret.slice('whsec_'.length))
    for (const res of [await h.http('GET', `/v1/webhooks/endpoints/${ep.id}`, { key: t.key }), await h.http('GET', '/v1/webhooks/endpoints', { key: t.key })]) {
      for (const secret of [ep.secret, rotated.secret, row.secret, row.previous_secret]) expect(JSON.stringify(res.body)).not.toContain(secret)
    }
    await cleanup(t, [])
  })

  it.each([
    ['url', { url: 'http://hooks.example.com/x' }],
    ['url', { url: 'ftp://127.0.0.1/x' }],
    ['url', { url: 'not a url' }],
    ['url', { url: 'https://user:pw@hooks.example.com/x' }],
    ['url', {}],
    ['filter_types[1]', { url: 'https://hooks.example.com/x', filter_types: ['customer.created', 'customer.exploded'] }],
    ['filter_types[0]', { url: 'https://hooks.example.com/x', filter_types: ['subscription.resumed'] }],
    ['disabled', { url: 'https://hooks.example.com/x', disabled: 'yes' }],
  ])('refuses a bad %s with validation_error naming it, writing nothing', async (field, body) => {
    const t = await tenant()
    const res = await h.http('POST', '/v1/webhooks/endpoints', { body, key: t.key })
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('validation_error')
    expect(Object.keys(res.body.details)).toContain(field)
    expect((await h.http('GET', '/v1/webhooks/endpoints', { key: t.key })).body.pagination.total).toBe(0)
  })

  it('accepts http only for localhost and 127.0.0.1', async () => {
    const t = await tenant()
    await endpoint(t, { url: 'http://localhost:9999/hooks' })
    await endpoint(t, { url: 'http://127.0.0.1:9999/hooks' })
    await cleanup(t, [])
  })

  it('lets only admin keys change endpoints; read keys may look', async () => {
    const t = await tenant()
    const minted = async (roles: string[]) => (await h.http('POST', '/v1/secrets/api/keys', { key: t.key, body: { name: roles.join(), roles } })).body.api_key as string
    const write = await minted(['write'])
    const read = await minted(['read'])
    const refused = await h.http('POST', '/v1/webhooks/endpoints', { key: write, body: { url: 'https://hooks.example.com/x' } })
    expect(refused.status).toBe(403)
    const ep = await endpoint(t, { url: 'https://hooks.example.com/x' })
    expect((await h.http('POST', `/v1/webhooks/endpoints/${ep.id}/secret/rotate`, { key: write })).status).toBe(403)
    expect((await h.http('DELETE', `/v1/webhooks/endpoints/${ep.id}`, { key: write })).status).toBe(403)
    expect((await h.http('GET', `/v1/webhooks/endpoints/${ep.id}`, { key: read })).status).toBe(200)
    await cleanup(t, [])
  })
})

describe('webhook delivery', () => {
  it('delivers a new event once, signed so that it verifies, and logs the attempt', async () => {
    const t = await tenant()
    const rx = await receiver()
    const ep = await endpoint(t, { url: rx.url })
    const { customerId, eventId } = await customerCreated(t)

    const summary = await run('webhook-delivery')
    expect(summary.delivered).toBeGreaterThanOrEqual(1)
    expect(rx.received).toHaveLength(1)
    const [got] = rx.received
    expect(got.headers['webhook-id']).toBe(eventId)
    expect(got.headers['svix-id']).toBe(eventId)
    expect(got.headers['content-type']).toBe('application/json')
    expect(verifies(ep.secret, got)).toBe(true)
    expect(verifies(ep.secret, { ...got, body: got.body.replace(customerId, 'cus_forged') })).toBe(false)
    const payload = JSON.parse(got.body)
    expect(payload.event_type).toBe('customer.created')
    expect(payload.customer).toMatchObject({ id: customerId, tenant_id: t.tenantId })

    await run('webhook-delivery')
    await run('webhook-retry')
    expect(rx.received).toHaveLength(1)

    expect(await event(t, eventId)).toMatchObject({
      id: eventId,
      event_type: 'customer.created',
      entity_id: customerId,
      delivery_status: 'delivered',
      attempts: 1,
      delivered_at: clock.now().toISOString(),
      deliveries: [{ endpoint_id: ep.id, url: rx.url, delivery_status: 'delivered', attempts: 1, last_status_code: 200, last_error: null }],
    })
    expect(await attempts(t, eventId)).toMatchObject([{ endpoint_id: ep.id, url: rx.url, response_status_code: 200, response: 'ok', error: null }])
    await cleanup(t, [rx])
  })

  it('retries with exponential backoff: 500, 500, then 200 is delivered on the third attempt, same webhook-id', async () => {
    const t = await tenant()
    const rx = await receiver([500, 500])
    await endpoint(t, { url: rx.url })
    const { eventId } = await customerCreated(t)

    await run('webhook-delivery')
    expect(rx.received).toHaveLength(1)
    const first = await event(t, eventId)
    // First backoff: WEBHOOK_RETRY_BACKOFF_SECONDS, 300 s by default.
    expect(first).toMatchObject({ delivery_status: 'pending', attempts: 1, last_error: 'HTTP 500' })
    expect(first.deliveries[0]).toMatchObject({ delivery_status: 'pending', attempts: 1, last_status_code: 500, next_attempt_at: new Date(clock.now().getTime() + 5 * MINUTE).toISOString() })

    clock.advance(5 * MINUTE - 1000)
    await run('webhook-retry')
    expect(rx.received).toHaveLength(1) // not due yet

    clock.advance(1000)
    await run('webhook-retry')
    expect(rx.received).toHaveLength(2)
    // Second backoff doubles: 600 s.
    expect((await event(t, eventId)).deliveries[0]).toMatchObject({ attempts: 2, next_attempt_at: new Date(clock.now().getTime() + 10 * MINUTE).toISOString() })

    clock.advance(10 * MINUTE)
    await run('webhook-retry')
    expect(rx.ids()).toEqual([eventId, eventId, eventId])
    expect(await event(t, eventId)).toMatchObject({ delivery_status: 'delivered', attempts: 3, last_error: null, deliveries: [{ delivery_status: 'delivered', attempts: 3, last_status_code: 200 }] })
    expect((await attempts(t, eventId)).map((a) => [a.response_status_code, a.error, a.response])).toEqual([
      [500, 'HTTP 500', 'receiver failed'],
      [500, 'HTTP 500', 'receiver failed'],
      [200, null, 'ok'],
    ])
    await cleanup(t, [rx])
  })

  it('marks a delivery failed after max_attempts (5); POST /v1/webhooks/{id}/retry re-queues it for the next run', async () => {
    const t = await tenant()
    const rx = await receiver([500, 500, 500, 500, 500])
    await endpoint(t, { url: rx.url })
    const { eventId } = await customerCreated(t)

    await run('webhook-delivery')
    for (const wait of [5, 10, 20, 40]) {
      clock.advance(wait * MINUTE)
      await run('webhook-retry')
    }
    expect(rx.received).toHaveLength(5)
    expect(await event(t, eventId)).toMatchObject({ delivery_status: 'failed', attempts: 5, last_error: 'HTTP 500', deliveries: [{ delivery_status: 'failed', attempts: 5 }] })
    clock.advance(24 * 60 * MINUTE)
    await run('webhook-retry')
    expect(rx.received).toHaveLength(5)

    const retried = await h.http('POST', `/v1/webhooks/${eventId}/retry`, { key: t.key })
    expect(retried.status).toBe(200)
    expect(retried.body).toMatchObject({ id: eventId, delivery_status: 'pending', deliveries: [{ delivery_status: 'pending', attempts: 0, next_attempt_at: clock.now().toISOString() }] })
    await run('webhook-delivery')
    expect(rx.ids()).toEqual(Array(6).fill(eventId))
    expect(await event(t, eventId)).toMatchObject({ delivery_status: 'delivered', attempts: 6, deliveries: [{ delivery_status: 'delivered', attempts: 1 }] })

    const again = await h.http('POST', `/v1/webhooks/${eventId}/retry`, { key: t.key })
    expect(again.status).toBe(400)
    expect(again.body).toMatchObject({ code: 'invalid_operation', details: { id: eventId } })
    await cleanup(t, [rx])
  })

  it('sends each endpoint only the event types it filters on, and nothing to a disabled endpoint', async () => {
    const t = await tenant()
    const [updates, creates, all, off] = await Promise.all([receiver(), receiver(), receiver(), receiver()])
    await endpoint(t, { url: updates.url, filter_types: ['customer.updated'] })
    await endpoint(t, { url: creates.url, filter_types: ['customer.created', 'customer.deleted'] })
    await endpoint(t, { url: all.url })
    const disabled = await endpoint(t, { url: off.url, disabled: true })

    const { customerId, eventId: createdId } = await customerCreated(t)
    expect((await h.http('PUT', `/v1/customers/${customerId}`, { key: t.key, body: { name: 'Renamed' } })).status).toBe(200)
    const updatedId = (await h.http('GET', `/v1/webhooks/events?entity_id=${customerId}&event_type=customer.updated`, { key: t.key })).body.items[0].id
    await run('webhook-delivery')
    expect(updates.ids()).toEqual([updatedId])
    expect(creates.ids()).toEqual([createdId])
    expect(all.ids()).toEqual([createdId, updatedId]) // in order
    expect(off.received).toEqual([])

    // Enabled again, it gets what happens from then on.
    await h.http('PUT', `/v1/webhooks/endpoints/${disabled.id}`, { key: t.key, body: { disabled: false } })
    await h.http('DELETE', `/v1/customers/${customerId}`, { key: t.key })
    await run('webhook-delivery')
    const deletedId = (await h.http('GET', `/v1/webhooks/events?entity_id=${customerId}&event_type=customer.deleted`, { key: t.key })).body.items[0].id
    expect(off.ids()).toEqual([deletedId])
    expect(creates.ids()).toEqual([createdId, deletedId])
    expect(updates.ids()).toEqual([updatedId])
    await cleanup(t, [updates, creates, all, off])
  })

  it('skips an event no endpoint subscribes to; a retry matches it to the endpoints of now', async () => {
    const t = await tenant()
    const { eventId } = await customerCreated(t)
    await run('webhook-delivery')
    expect(await event(t, eventId)).toMatchObject({ delivery_status: 'skipped', deliveries: [] })

    const rx = await receiver()
    await endpoint(t, { url: rx.url })
    expect((await h.http('POST', `/v1/webhooks/${eventId}/retry`, { key: t.key })).body.delivery_status).toBe('pending')
    await run('webhook-delivery')
    expect(rx.ids()).toEqual([eventId])
    expect((await event(t, eventId)).delivery_status).toBe('delivered')
    await cleanup(t, [rx])
  })

  it("never sends one tenant's events to another tenant's endpoint; another tenant's records are 404", async () => {
    const [a, b] = await Promise.all([tenant(), tenant()])
    const [rxA, rxB] = await Promise.all([receiver(), receiver()])
    const epA = await endpoint(a, { url: rxA.url })
    await endpoint(b, { url: rxB.url })
    const fromA = await customerCreated(a)
    const fromB = await customerCreated(b)
    await run('webhook-delivery')
    expect(rxA.ids()).toEqual([fromA.eventId])
    expect(rxB.ids()).toEqual([fromB.eventId])
    expect(JSON.parse(rxA.received[0].body).customer.tenant_id).toBe(a.tenantId)

    for (const [method, path] of [
      ['GET', `/v1/webhooks/endpoints/${epA.id}`],
      ['PUT', `/v1/webhooks/endpoints/${epA.id}`],
      ['DELETE', `/v1/webhooks/endpoints/${epA.id}`],
      ['POST', `/v1/webhooks/endpoints/${epA.id}/secret/rotate`],
      ['GET', `/v1/webhooks/events/${fromA.eventId}`],
      ['GET', `/v1/webhooks/events/${fromA.eventId}/attempts`],
      ['POST', `/v1/webhooks/${fromA.eventId}/retry`],
    ]) {
      const res = await h.http(method, path, { key: b.key, ...(method === 'PUT' && { body: { disabled: true } }) })
      expect(res.status, `${method} ${path}`).toBe(404)
      expect(res.body.code).toBe('not_found')
    }
    expect((await h.http('GET', '/v1/webhooks/events', { key: b.key })).body.items.map((e: WebhookEventWire) => e.id)).toEqual([fromB.eventId])
    await cleanup(a, [rxA])
    await cleanup(b, [rxB])
  })

  it('signs with both secrets for a day after a rotation, then with the new one alone', async () => {
    const t = await tenant()
    const rx = await receiver()
    const ep = await endpoint(t, { url: rx.url })
    const rotated = await h.http('POST', `/v1/webhooks/endpoints/${ep.id}/secret/rotate`, { key: t.key })
    expect(rotated.status).toBe(200)
    expect(rotated.body).toMatchObject({ id: ep.id, version: 2 })
    expect(rotated.body.secret).toMatch(/^whsec_/)
    expect(rotated.body.secret).not.toBe(ep.secret)

    await customerCreated(t)
    await run('webhook-delivery')
    expect((rx.received[0].headers['webhook-signature'] as string).split(' ')).toHaveLength(2)
    expect(verifies(rotated.body.secret, rx.received[0])).toBe(true)
    expect(verifies(ep.secret, rx.received[0])).toBe(true)

    clock.advance(24 * 60 * MINUTE + 1000)
    await customerCreated(t)
    await run('webhook-delivery')
    expect(verifies(rotated.body.secret, rx.received[1])).toBe(true)
    expect(verifies(ep.secret, rx.received[1])).toBe(false)
    await cleanup(t, [rx])
  })

  it('delivers for an endpoint whose secrets are still in clear (written before sealing); the delivery job seals them', async () => {
    const t = await tenant()
    const rx = await receiver([500])
    const ep = await endpoint(t, { url: rx.url })
    const [legacy, older] = [newSigningSecret(), newSigningSecret()]
    const inClear = () => h.running.deps.sql`UPDATE webhook_endpoints SET secret = ${legacy}, previous_secret = ${older},
      previous_secret_expires_at = ${new Date(clock.now().getTime() + 60 * MINUTE)} WHERE id = ${ep.id}`
    await inClear()
    const { eventId } = await customerCreated(t)

    // The delivery job seals them first, then signs with them (the first attempt gets a 500).
    await run('webhook-delivery')
    const sealed = await storedSecrets(ep.id)
    expect([sealed.secret, sealed.previous_secret]).toEqual([expect.stringMatching(/^v1:/), expect.stringMatching(/^v1:/)])
    expect([unseal(h.config, ep.id, sealed.secret), unseal(h.config, ep.id, sealed.previous_secret!)]).toEqual([legacy, older])
    expect([verifies(legacy, rx.received[0]), verifies(older, rx.received[0]), verifies(ep.secret, rx.received[0])]).toEqual([true, true, false])

    // Read in clear by the retry job, which seals nothing: used as they are.
    await inClear()
    clock.advance(5 * MINUTE)
    await run('webhook-retry')
    expect(rx.ids()).toEqual([eventId, eventId])
    expect([verifies(legacy, rx.received[1]), verifies(older, rx.received[1])]).toEqual([true, true])
    expect(await event(t, eventId)).toMatchObject({ delivery_status: 'delivered' })
    expect((await storedSecrets(ep.id)).secret).toBe(legacy)

    // A rotation seals the secret in clear as the previous one, which keeps signing.
    const rotated = (await h.http('POST', `/v1/webhooks/endpoints/${ep.id}/secret/rotate`, { key: t.key })).body
    const after = await storedSecrets(ep.id)
    expect(after.previous_secret).toMatch(/^v1:/)
    expect(unseal(h.config, ep.id, after.previous_secret!)).toBe(legacy)
    await customerCreated(t)
    await run('webhook-delivery')
    expect([verifies(rotated.secret, rx.received[2]), verifies(legacy, rx.received[2])]).toEqual([true, true])
    await cleanup(t, [rx])
  })

  it('records an endpoint that does not answer as an error without a status code', async () => {
    const t = await tenant()
    const closed = await receiver()
    await closed.close() // nothing listens on its port any more
    await endpoint(t, { url: closed.url })
    const { eventId } = await customerCreated(t)
    await run('webhook-delivery')
    const [logged] = await attempts(t, eventId)
    expect(logged).toMatchObject({ response_status_code: null, error: 'ECONNREFUSED' })
    expect((await event(t, eventId)).delivery_status).toBe('pending')
    await cleanup(t, [])
  })
})

describe('the stale-webhook retry job settings', () => {
  const settings = () => h.running.deps.config.webhooks.retry

  it('retries nothing for an excluded tenant, nor event types outside allowed_event_types', async () => {
    const [excluded, limited] = await Promise.all([tenant(), tenant()])
    const [rxExcluded, rxLimited] = await Promise.all([receiver([500]), receiver([500, 500])])
    await endpoint(excluded, { url: rxExcluded.url })
    await endpoint(limited, { url: rxLimited.url })
    // As an operator restarting the worker with WEBHOOK_EXCLUDED_TENANTS and WEBHOOK_ALLOWED_EVENT_TYPES set.
    settings().excludedTenants = [excluded.tenantId]
    settings().allowedEventTypes = ['customer.updated']
    try {
      const skipped = await customerCreated(excluded)
      const notAllowed = await customerCreated(limited)
      await h.http('PUT', `/v1/customers/${notAllowed.customerId}`, { key: limited.key, body: { name: 'Renamed' } })
      // First attempts go to everyone; the endpoint of `limited` fails once per run, so its second event waits a run.
      await run('webhook-delivery')
      await run('webhook-delivery')
      expect(rxExcluded.ids()).toEqual([skipped.eventId])
      expect(rxLimited.received).toHaveLength(2)
      expect((await event(excluded, skipped.eventId)).delivery_status).toBe('failed')
      expect((await event(limited, notAllowed.eventId)).delivery_status).toBe('failed')
      const updatedId = rxLimited.ids()[1]
      expect((await event(limited, updatedId)).event_type).toBe('customer.updated')
      expect((await event(limited, updatedId)).delivery_status).toBe('pending')

      clock.advance(5 * MINUTE)
      await run('webhook-retry')
      expect(rxExcluded.received).toHaveLength(1)
      expect(rxLimited.ids()).toEqual([notAllowed.eventId, updatedId, updatedId])
      expect((await event(limited, updatedId)).delivery_status).toBe('delivered')
    } finally {
      settings().excludedTenants = []
      settings().allowedEventTypes = []
    }
    await cleanup(excluded, [rxExcluded])
    await cleanup(limited, [rxLimited])
  })

  it('does nothing when disabled, and a failure is then final', async () => {
    const t = await tenant()
    const rx = await receiver([500])
    await endpoint(t, { url: rx.url })
    settings().enabled = false
    try {
      const { eventId } = await customerCreated(t)
      await run('webhook-delivery')
      expect((await event(t, eventId)).delivery_status).toBe('failed')
      clock.advance(5 * MINUTE)
      expect(await run('webhook-retry')).toEqual({ enabled: false })
      expect(rx.received).toHaveLength(1)
    } finally {
      settings().enabled = true
    }
    await cleanup(t, [rx])
  })

  it('paces retries to rate_limit per second (5 by default, bursts of 5)', async () => {
    const t = await tenant()
    // Seven endpoints fail once each: seven retries fall due together.
    const rx = await receiver(Array(7).fill(500))
    for (let i = 0; i < 7; i++) await endpoint(t, { url: `${rx.url}/${i}` })
    await customerCreated(t)
    await run('webhook-delivery')
    expect(rx.received).toHaveLength(7)

    clock.advance(5 * MINUTE)
    const summary = await run('webhook-retry')
    expect(summary).toMatchObject({ sent: 7, delivered: 7 })
    const retries = rx.received.slice(7).map((r) => r.at)
    // Five tokens at once, then one every 200 ms: the seventh at least 400 ms after the first.
    expect(Math.max(...retries) - Math.min(...retries)).toBeGreaterThanOrEqual(380)
    await cleanup(t, [rx])
  })
})
