// Flexprice's users, as this service has them: no people (nobody signs in), only API keys, each a service
// account with the roles it holds. GET /v1/users/me is the calling key; POST /v1/users/search lists the
// environment's keys (admin, as the key list is); POST /v1/users cannot make a person and says how to make a key.
import { AppError, invalidOperation, notFound } from '../../../core/errors.ts'
import { page, type ListParams, type Page } from '../../../core/list.ts'
import type { Actor, Role } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import { findTenant, type TenantRow } from '../tenants/store.ts'
import * as store from './store.ts'

export interface UserView {
  id: string
  name: string
  email: string
  type: 'service_account'
  roles: Role[]
  environment_id: string
  tenant: TenantRow | null
}

const userOf = (key: store.ApiKeyRow, tenant: TenantRow | undefined): UserView => ({
  id: key.id,
  name: key.name,
  email: '',
  type: 'service_account',
  roles: key.roles,
  environment_id: key.environment_id,
  tenant: tenant ?? null,
})

export async function currentUser(deps: Deps, actor: Actor): Promise<UserView> {
  const key = await store.findLiveKey(deps.sql, actor.tenantId, actor.keyId)
  if (!key) throw notFound('user', actor.keyId)
  return userOf(key, await findTenant(deps.sql, actor.tenantId))
}

export interface UserSearch {
  user_ids?: string[]
  roles?: Role[]
  type?: 'user' | 'service_account'
}

export async function searchUsers(deps: Deps, actor: Actor, params: ListParams, filters: UserSearch): Promise<Page<UserView>> {
  // People do not exist here: asking for them finds none.
  if (filters.type === 'user') return page([], 0, params)
  const { rows, total } = await store.listKeysMatching(deps.sql, actor, params, { ids: filters.user_ids, roles: filters.roles })
  const tenant = await findTenant(deps.sql, actor.tenantId)
  return page(rows.map((k) => userOf(k, tenant)), total, params)
}

export function createUser(input: { type: string }): never {
  if (input.type === 'user') throw invalidOperation('there are no people to invite: this service has no sign-in, only API keys', { type: 'user' })
  throw new AppError('invalid_operation', 'a service account here is an API key: make one with POST /v1/secrets/api/keys {name, roles}; its secret is shown once', { type: input.type })
}
