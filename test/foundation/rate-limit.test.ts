import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mintKey } from '../../domains/tenancy/keys/service.ts'
import { startHarness, type Harness } from '../harness.ts'

// A harness of its own: chDB allows one data directory per process, so one harness per test file.
let limited: Harness
beforeAll(async () => {
  limited = await startHarness({ env: { RATE_LIMIT_PER_SECOND: '1' } })
})
afterAll(() => limited?.stop())

describe('rate limits', () => {
  it('answers 429 with Retry-After once a key exceeds its rate', async () => {
    const results = []
    for (let i = 0; i < 4; i++) results.push(await limited.http('GET', '/v1/environments'))
    expect(results.slice(0, 2).map((r) => r.status)).toEqual([200, 200]) // burst of twice the rate
    const rejected = results.find((r) => r.status === 429)
    expect(rejected?.body).toMatchObject({ code: 'too_many_requests', http_status_code: 429 })
    expect(Number(rejected?.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
  })

  it('limits each key on its own', async () => {
    for (let i = 0; i < 4; i++) await limited.http('GET', '/v1/environments')
    expect((await limited.http('GET', '/v1/environments')).status).toBe(429)
    const fresh = await mintKey(limited.running.deps.sql, { tenantId: limited.tenant.tenantId, environmentId: limited.tenant.environments.production }, {
      name: 'fresh',
      roles: ['read'],
      expiresAt: null,
      createdBy: 'test',
    })
    expect((await limited.http('GET', '/v1/environments', { key: fresh.api_key })).status).toBe(200)
  })
})
