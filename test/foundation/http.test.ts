import { Agent, request } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../harness.ts'

let h: Harness

beforeAll(async () => {
  h = await startHarness({ env: { MAX_BODY_BYTES: '2048', RATE_LIMIT_PER_SECOND: '1000' } })
})
afterAll(() => h?.stop())

// The spec's fields, and Flexprice's beside them (its SDK reads error.message).
const errorShape = (status: number, code: string) => ({
  code,
  http_status_code: status,
  message: expect.any(String),
  details: expect.any(Object),
  success: false,
  error: { message: expect.any(String), internal_error: expect.stringContaining(code) },
})

async function keyCount(): Promise<number> {
  return (await h.http('GET', '/v1/secrets/api/keys')).body.pagination.total
}

describe('HTTP conventions', () => {
  it('answers every failure with the error body', async () => {
    const missing = await h.http('GET', '/v1/environments', { key: null })
    expect(missing.status).toBe(401)
    expect(missing.body).toEqual(errorShape(401, 'permission_denied'))

    const bad = await h.http('GET', '/v1/environments', { key: 'mb_not-a-real-key' })
    expect(bad.status).toBe(401)
    expect(bad.body).toEqual(errorShape(401, 'permission_denied'))

    const unknown = await h.http('GET', '/v1/no-such-thing')
    expect(unknown.status).toBe(404)
    expect(unknown.body).toEqual(errorShape(404, 'not_found'))

    const method = await h.http('PATCH', '/v1/environments')
    expect(method.status).toBe(405)
    expect(method.body).toEqual(errorShape(405, 'invalid_operation'))
  })

  // http/route-groups.ts: the routes are found through their group (the first two path segments) and answer as one
  // router over all of them did.
  it('routes by group as one router did: case, trailing slash, static paths first, OPTIONS, unknown methods', async () => {
    expect((await h.http('GET', '/V1/Environments/')).status).toBe(200)
    expect((await h.http('GET', '/v1//environments')).body).toEqual(errorShape(404, 'not_found'))
    expect((await h.http('GET', '/v1')).body).toEqual(errorShape(404, 'not_found'))
    // A static path of the group before its {id}: a validation error about the query, not "customer wallets not found".
    expect((await h.http('GET', '/v1/customers/wallets')).body).toEqual(errorShape(400, 'validation_error'))
    const options = await h.http('OPTIONS', '/v1/environments')
    expect(options.status).toBe(200)
    expect(options.headers.get('allow')?.split(', ').sort()).toEqual(['GET', 'HEAD', 'POST'])
    expect((await h.http('OPTIONS', '/v1/no-such-thing')).status).toBe(404)
    // The router answered a method it does not know with 501, which reached clients as an internal error (500).
    expect((await h.http('PROPFIND', '/v1/environments')).body).toEqual(errorShape(405, 'invalid_operation'))
    expect((await h.http('PROPFIND', '/v1/no-such-thing')).body).toEqual(errorShape(404, 'not_found'))
  })

  it('rejects bad bodies with 4xx, names the field, and writes nothing', async () => {
    const before = await keyCount()

    const malformed = await h.http('POST', '/v1/secrets/api/keys', { raw: '{"name": ', headers: { 'content-type': 'application/json' } })
    expect(malformed.status).toBe(400)
    expect(malformed.body).toEqual(errorShape(400, 'validation_error'))
    expect(malformed.body.details).toHaveProperty('body')

    const notJson = await h.http('POST', '/v1/secrets/api/keys', { raw: 'name=x', headers: { 'content-type': 'text/plain' } })
    expect(notJson.status).toBe(400)
    expect(notJson.body.details).toHaveProperty('body')

    const tooLarge = await h.http('POST', '/v1/secrets/api/keys', { body: { name: 'x'.repeat(5000) } })
    expect(tooLarge.status).toBe(413)
    expect(tooLarge.body).toEqual(errorShape(413, 'validation_error'))

    // Refused at the limit, the rest of a large body unread: the connection is closed after the answer, and a client
    // keeping connections alive sends its next request on a new one.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    const raw = (body: string) =>
      new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
        const req = request(`${h.baseUrl}/v1/secrets/api/keys`, { method: 'POST', agent, headers: { 'x-api-key': h.key, 'content-type': 'application/json' } }, (res) => {
          res.resume()
          res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection }))
        })
        req.on('error', reject)
        req.end(body)
      })
    expect(await raw(JSON.stringify({ name: 'x'.repeat(4 * 1024 * 1024) }))).toEqual({ status: 413, connection: 'close' })
    expect((await raw(JSON.stringify({ name: 'after', colour: 'blue' }))).status).toBe(400)
    agent.destroy()

    const unknownField = await h.http('POST', '/v1/secrets/api/keys', { body: { name: 'x', colour: 'blue' } })
    expect(unknownField.status).toBe(400)
    expect(unknownField.body.details).toEqual({ colour: 'is not a known field' })

    const wrongType = await h.http('POST', '/v1/secrets/api/keys', { body: { name: 42 } })
    expect(wrongType.status).toBe(400)
    expect(wrongType.body.details).toHaveProperty('name')

    const badEnum = await h.http('POST', '/v1/secrets/api/keys', { body: { name: 'x', roles: ['superuser'] } })
    expect(badEnum.status).toBe(400)
    expect(badEnum.body.details).toHaveProperty(['roles[0]'])

    const missingField = await h.http('POST', '/v1/secrets/api/keys', { body: {} })
    expect(missingField.body.details).toEqual({ name: 'is required' })

    expect(await keyCount()).toBe(before)
  })

  it('validates list parameters and pages with a stable order', async () => {
    for (const name of ['a', 'b', 'c']) await h.http('POST', '/v1/secrets/api/keys', { body: { name } })
    const tooMany = await h.http('GET', '/v1/secrets/api/keys?limit=1001')
    expect(tooMany.status).toBe(400)
    expect(tooMany.body.details).toHaveProperty('limit')
    const badSort = await h.http('GET', '/v1/secrets/api/keys?sort=key_hash')
    expect(badSort.status).toBe(400)

    const all = await h.http('GET', '/v1/secrets/api/keys?sort=created_at&order=asc&limit=1000')
    const total = all.body.pagination.total
    expect(total).toBeGreaterThanOrEqual(4)
    const page1 = await h.http('GET', '/v1/secrets/api/keys?sort=created_at&order=asc&limit=2&offset=0')
    const page2 = await h.http('GET', '/v1/secrets/api/keys?sort=created_at&order=asc&limit=2&offset=2')
    expect(page1.body.pagination).toEqual({ limit: 2, offset: 0, total })
    expect([...page1.body.items, ...page2.body.items].map((k: { id: string }) => k.id)).toEqual(
      all.body.items.slice(0, 4).map((k: { id: string }) => k.id),
    )
    const defaults = await h.http('GET', '/v1/secrets/api/keys')
    expect(defaults.body.pagination.limit).toBe(50)
  })

  it('filters lists by metadata', async () => {
    await h.running.deps.sql`UPDATE environments SET metadata = '{"region":"eu"}' WHERE id = ${h.tenant.environments.sandbox}`
    const eu = await h.http('GET', '/v1/environments?metadata[region]=eu')
    expect(eu.body.items.map((e: { id: string }) => e.id)).toEqual([h.tenant.environments.sandbox])
    const none = await h.http('GET', '/v1/environments?metadata[region]=us')
    expect(none.body.items).toEqual([])
  })

  it('lists only published environments unless status asks otherwise (rule 15)', async () => {
    await h.running.deps.sql`UPDATE environments SET status = 'archived' WHERE id = ${h.tenant.environments.sandbox}`
    const published = await h.http('GET', '/v1/environments')
    expect(published.body.items.map((e: { id: string }) => e.id)).toEqual([h.tenant.environments.production])
    const archived = await h.http('GET', '/v1/environments?status=archived')
    expect(archived.body.items.map((e: { id: string }) => e.id)).toEqual([h.tenant.environments.sandbox])
    await h.running.deps.sql`UPDATE environments SET status = 'published' WHERE id = ${h.tenant.environments.sandbox}`
  })

  it('echoes a request id, or makes one', async () => {
    const given = await h.http('GET', '/v1/health', { headers: { 'x-request-id': 'req-123' } })
    expect(given.headers.get('x-request-id')).toBe('req-123')
    const made = await h.http('GET', '/v1/health')
    expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
  })

  it('reports each engine in /v1/health without a key', async () => {
    const health = await h.http('GET', '/v1/health', { key: null })
    expect(health.status).toBe(200)
    expect(health.body.status).toBe('ok')
    expect(health.body.engines.postgres.status).toBe('ok')
    expect(health.body.engines.clickhouse.status).toBe('ok')
  })

  it('serves an OpenAPI document built from the validating schemas', async () => {
    const doc = await h.http('GET', '/v1/openapi.json', { key: null })
    expect(doc.status).toBe(200)
    // The interface's version, the spec's: 1.0 (its paths under /v1).
    expect(doc.body.info).toEqual({ title: 'meterbill API', version: '1.0' })
    const create = doc.body.paths['/v1/secrets/api/keys'].post
    expect(create.requestBody.content['application/json'].schema.required).toEqual(['name'])
    expect(create.requestBody.content['application/json'].schema.properties.roles.items.enum).toEqual(['admin', 'read', 'write', 'ingest'])
    expect(doc.body.paths['/v1/environments'].get.parameters.map((p: { name: string }) => p.name)).toContain('limit')
    expect(doc.body.paths['/v1/health'].get.security).toEqual([])
  })
})
