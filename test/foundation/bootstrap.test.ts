import { rmSync } from 'node:fs'
import { afterAll, describe, expect, it } from 'vitest'
import { startRoles, type Running } from '../../roles.ts'
import { testConfig } from '../harness.ts'

// Always on a fresh embedded store, whatever engines the run configured: bootstrap needs an empty one.
const bootstrapKey = 'mb_fixed-key-for-docker-compose-0123456789abcdef'
const config = testConfig({ DATABASE_URL: '', BOOTSTRAP_API_KEY: bootstrapKey })
let running: Running | undefined

afterAll(async () => {
  await running?.stop()
  rmSync(config.dataDir, { recursive: true, force: true })
})

describe('first start', () => {
  it('creates a tenant, production and sandbox, and an admin key that is BOOTSTRAP_API_KEY', async () => {
    running = await startRoles(config, ['api'])
    expect(running.bootstrap?.apiKey).toBe(bootstrapKey)
    const res = await fetch(`http://127.0.0.1:${running.port}/v1/secrets/api/keys`, { headers: { 'x-api-key': bootstrapKey } })
    expect(res.status).toBe(200)
    const body = (await res.json()) as { items: { roles: string[]; environment_id: string }[] }
    expect(body.items).toHaveLength(1)
    expect(body.items[0].roles).toEqual(['admin'])
    expect(body.items[0].environment_id).toBe(running.bootstrap?.environments.production)
  })
})
