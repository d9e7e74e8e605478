// Tenancy: a tenant owns environments (production and sandbox at creation); the first start of an
// empty store creates one tenant and prints its production admin key once. A key reads its own tenant, and
// the tenant's owner key renames it (Flexprice's getTenantById, updateTenant).
import { AppError, invalidOperation, notFound, validationError } from '../../../core/errors.ts'
import { newId } from '../../../core/ids.ts'
import type { Actor } from '../../../core/scope.ts'
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

/** The caller's tenant; any other is not found (a key sees one tenant). */
export async function getTenant(deps: Deps, actor: Actor, id: string): Promise<store.TenantRow> {
  const row = id === actor.tenantId ? await store.findTenant(deps.sql, id) : undefined
  if (!row) throw notFound('tenant', id)
  return row
}

/** PUT /v1/tenants/update: the caller's tenant renamed, or its metadata replaced, by its owner key. */
export async function updateTenant(deps: Deps, actor: Actor, input: { name?: string; metadata?: Record<string, string>; billing_details?: unknown }): Promise<store.TenantRow> {
  if (!actor.owner) throw new AppError('permission_denied', "changing the tenant takes its owner key (the key it was created with)", {})
  if (input.billing_details !== undefined) throw validationError('billing_details', 'is not kept: nothing bills a tenant of this service')
  return store.updateTenant(deps.sql, actor.tenantId, { name: input.name, metadata: input.metadata }, deps.clock.now())
}

/** GET /v1/tenant/billing: what Flexprice's cloud bills its tenant; nothing bills a tenant of this service. */
export function tenantBillingUsage(): never {
  throw invalidOperation("a tenant is not billed by this service: there is no plan or usage of the tenant's own to report (its customers' usage is under /v1/events/usage)", { operation: 'tenant_billing_usage' })
}
