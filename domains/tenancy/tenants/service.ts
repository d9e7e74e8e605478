// Tenancy: a tenant owns environments (production and sandbox at creation); the first start of an
// empty store creates one tenant and prints its production admin key once.
import { newId } from '../../../core/ids.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Tx } from '../../../infra/postgres.ts'
import * as environments from '../environments/store.ts'
import { mintKey } from '../keys/service.ts'
import * as store from './store.ts'

export interface NewTenant {
  tenantId: string
  environments: { production: string; sandbox: string }
  apiKey: string
}

async function createTenantIn(tx: Tx, name: string, secret?: string): Promise<NewTenant> {
  const tenantId = newId('tenant')
  await store.insertTenant(tx, tenantId, name)
  const production = await environments.insertEnvironment(tx, {
    id: newId('env'),
    tenant_id: tenantId,
    name: 'Production',
    type: 'production',
    slug: 'production',
    created_by: 'system',
  })
  const sandbox = await environments.insertEnvironment(tx, {
    id: newId('env'),
    tenant_id: tenantId,
    name: 'Sandbox',
    type: 'sandbox',
    slug: 'sandbox',
    created_by: 'system',
  })
  const key = await mintKey(tx, { tenantId, environmentId: production.id }, {
    name: 'bootstrap admin',
    roles: ['admin'],
    expiresAt: null,
    createdBy: 'system',
    secret,
    owner: true,
  })
  return { tenantId, environments: { production: production.id, sandbox: sandbox.id }, apiKey: key.api_key }
}

export const createTenant = (deps: Deps, name: string): Promise<NewTenant> =>
  deps.sql.begin((tx) => createTenantIn(tx, name)) as Promise<NewTenant>

/** On an empty store: a tenant, two environments and an admin key (BOOTSTRAP_API_KEY when set). */
export async function bootstrapIfEmpty(deps: Deps): Promise<NewTenant | undefined> {
  return deps.sql.begin(async (tx) => {
    await store.lockBootstrap(tx)
    if ((await store.countTenants(tx)) > 0) return undefined
    return createTenantIn(tx, 'default', deps.config.bootstrapApiKey)
  }) as Promise<NewTenant | undefined>
}
