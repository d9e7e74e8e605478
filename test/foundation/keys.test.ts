import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../core/clock.ts'
import { flushLastUsed } from '../../domains/tenancy/keys/service.ts'
import { startHarness, type Harness } from '../harness.ts'

const clock = fixedClock('2026-03-01T12:00:00Z')
let h: Harness

beforeAll(async () => {
  h = await startHarness({ clock })
})
afterAll(() => h?.stop())

async function mint(roles: string[], extra: Record<string, unknown> = {}): Promise<{ api_key: string; secret: { id: string } }> {
  const res = await h.http('POST', '/v1/secrets/api/keys', { body: { name: `k-${roles.join('-')}`, roles, ...extra } })
  expect(res.status).toBe(201)
  return res.body
}

describe('API keys', () => {
  it('returns the secret once, stores only its hash, and lists without it', async () => {
    const created = await mint(['read'])
    expect(created.api_key).toMatch(/^mb_[A-Za-z0-9_-]{43}$/) // 32 random bytes, base64url
    const list = await h.http('GET', '/v1/secrets/api/keys')
    expect(list.status).toBe(200)
    const listed = list.body.items.find((k: { id: string }) => k.id === created.secret.id)
    expect(listed.roles).toEqual(['read'])
    expect(JSON.stringify(list.body)).not.toContain(created.api_key)
    expect(listed).not.toHaveProperty('key_hash')
    const [row] = await h.running.deps.sql`SELECT key_hash FROM api_keys WHERE id = ${created.secret.id}`
    expect(Buffer.from(row.key_hash).toString('utf8')).not.toContain(created.api_key)
  })

  it('enforces roles: read may read, not write; ingest may not read records; only admin manages keys', async () => {
    const read = await mint(['read'])
    const ingest = await mint(['ingest'])
    const write = await mint(['write'])
    expect((await h.http('GET', '/v1/environments', { key: read.api_key })).status).toBe(200)
    const denied = await h.http('GET', '/v1/environments', { key: ingest.api_key })
    expect(denied.status).toBe(403)
    expect(denied.body).toMatchObject({ code: 'permission_denied', http_status_code: 403 })
    expect((await h.http('POST', '/v1/secrets/api/keys', { key: write.api_key, body: { name: 'x' } })).status).toBe(403)
    expect((await h.http('GET', '/v1/secrets/api/keys', { key: read.api_key })).status).toBe(403)
  })

  it('refuses a revoked key at once', async () => {
    const k = await mint(['read'])
    expect((await h.http('GET', '/v1/environments', { key: k.api_key })).status).toBe(200)
    const del = await h.http('DELETE', `/v1/secrets/api/keys/${k.secret.id}`)
    expect(del.status).toBe(204) // as Flexprice answers (its SDK expects no body)
    const after = await h.http('GET', '/v1/environments', { key: k.api_key })
    expect(after.status).toBe(401)
    expect(after.body.code).toBe('permission_denied')
  })

  it('refuses an expired key and rejects an expiry in the past', async () => {
    const past = await h.http('POST', '/v1/secrets/api/keys', { body: { name: 'old', expires_at: '2026-02-01T00:00:00Z' } })
    expect(past.status).toBe(400)
    expect(past.body.details).toHaveProperty('expires_at')
    const k = await mint(['read'], { expires_at: '2026-03-01T13:00:00Z' })
    expect((await h.http('GET', '/v1/environments', { key: k.api_key })).status).toBe(200)
    clock.set('2026-03-01T13:00:00Z')
    const expired = await h.http('GET', '/v1/environments', { key: k.api_key })
    expect(expired.status).toBe(401)
    expect(expired.body.message).toMatch(/expired/)
    clock.set('2026-03-01T12:00:00Z')
  })

  it('records last_used_at in batches, not per request', async () => {
    const k = await mint(['read'])
    await h.http('GET', '/v1/environments', { key: k.api_key })
    const [before] = await h.running.deps.sql`SELECT last_used_at FROM api_keys WHERE id = ${k.secret.id}`
    expect(before.last_used_at).toBeNull()
    await flushLastUsed(h.running.deps)
    const [after] = await h.running.deps.sql`SELECT last_used_at FROM api_keys WHERE id = ${k.secret.id}`
    expect(after.last_used_at?.toISOString()).toBe('2026-03-01T12:00:00.000Z')
  })

  it('lets an admin mint a key for another environment of its tenant, bound to that environment', async () => {
    const sandbox = h.tenant.environments.sandbox
    const k = await mint(['admin'], { environment_id: sandbox })
    const keysThere = await h.http('GET', '/v1/secrets/api/keys', { key: k.api_key })
    expect(keysThere.body.items.map((i: { environment_id: string }) => i.environment_id)).toEqual([sandbox])
    const keysHere = await h.http('GET', '/v1/secrets/api/keys')
    expect(keysHere.body.items.some((i: { id: string }) => i.id === k.secret.id)).toBe(false)
  })

  it("isolates tenants: another tenant's key and environment are not found", async () => {
    const other = await h.newTenant()
    const mine = await mint(['read'])
    const del = await h.http('DELETE', `/v1/secrets/api/keys/${mine.secret.id}`, { key: other.apiKey })
    expect(del.status).toBe(404)
    expect(del.body.code).toBe('not_found')
    const cross = await h.http('POST', '/v1/secrets/api/keys', { key: other.apiKey, body: { name: 'x', environment_id: h.tenant.environments.sandbox } })
    expect(cross.status).toBe(404)
    const envs = await h.http('GET', '/v1/environments', { key: other.apiKey })
    expect(envs.body.items.map((e: { id: string }) => e.id).sort()).toEqual([other.environments.production, other.environments.sandbox].sort())
    // the key still works for its own tenant
    expect((await h.http('GET', '/v1/environments', { key: mine.api_key })).status).toBe(200)
  })
})

describe('who manages which keys', () => {
  it("an environment's admin key manages its own environment's keys only; the tenant's owner key manages all", async () => {
    const { sandbox, production } = h.tenant.environments
    // The key the tenant was created with is its owner key; a minted admin key is not.
    const owner = (await h.http('GET', '/v1/secrets/api/keys')).body.items.find((k: { tenant_owner: boolean }) => k.tenant_owner)
    expect(owner).toMatchObject({ roles: ['admin'], environment_id: production })
    const sandboxAdmin = await mint(['admin'], { environment_id: sandbox })
    const prodAdmin = await mint(['admin'])
    const countIn = async (environmentId: string) => (await h.http('GET', `/v1/secrets/api/keys?environment_id=${environmentId}`)).body.pagination.total
    const [sandboxKeys, prodKeys] = [await countIn(sandbox), await countIn(production)]

    // The sandbox admin may not mint, list or revoke production keys, and writes nothing trying.
    const mintThere = await h.http('POST', '/v1/secrets/api/keys', { key: sandboxAdmin.api_key, body: { name: 'escalate', environment_id: production } })
    expect([mintThere.status, mintThere.body.code, mintThere.body.details]).toEqual([403, 'permission_denied', { environment_id: production }])
    const listThere = await h.http('GET', `/v1/secrets/api/keys?environment_id=${production}`, { key: sandboxAdmin.api_key })
    expect(listThere.status).toBe(403)
    const revokeThere = await h.http('DELETE', `/v1/secrets/api/keys/${prodAdmin.secret.id}`, { key: sandboxAdmin.api_key })
    expect([revokeThere.status, revokeThere.body.code]).toEqual([404, 'not_found'])
    // A production admin that is not the owner may not mint for the sandbox either, nor revoke the owner key.
    const prodToSandbox = await h.http('POST', '/v1/secrets/api/keys', { key: prodAdmin.api_key, body: { name: 'x', environment_id: sandbox } })
    expect(prodToSandbox.status).toBe(403)
    const revokeOwner = await h.http('DELETE', `/v1/secrets/api/keys/${owner.id}`, { key: prodAdmin.api_key })
    expect([revokeOwner.status, revokeOwner.body.code]).toEqual([403, 'permission_denied'])
    expect([await countIn(sandbox), await countIn(production)]).toEqual([sandboxKeys, prodKeys])

    // Within its environment the sandbox admin manages keys as before.
    const own = await h.http('POST', '/v1/secrets/api/keys', { key: sandboxAdmin.api_key, body: { name: 'own', roles: ['read'] } })
    expect([own.status, own.body.secret.environment_id, own.body.secret.tenant_owner]).toEqual([201, sandbox, false])
    // The owner key lists and revokes keys of any environment of its tenant.
    expect(await countIn(sandbox)).toBe(sandboxKeys + 1)
    const revoked = await h.http('DELETE', `/v1/secrets/api/keys/${own.body.secret.id}`)
    expect(revoked.status).toBe(204)
    expect((await h.http('GET', '/v1/environments', { key: own.body.api_key })).status).toBe(401)
  })
})

