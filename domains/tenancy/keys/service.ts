// API keys: minted with 256 random bits, stored only as a SHA-256 hash, bound to one environment,
// refused once revoked or expired. Lookups are cached briefly; last use is recorded in batches.
import { hash } from 'node:crypto'
import { AppError, notFound, validationError } from '../../../core/errors.ts'
import { newId, newSecret } from '../../../core/ids.ts'
import type { Actor, Role, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Db } from '../../../infra/postgres.ts'
import { findEnvironment } from '../environments/service.ts'
import { page, type ListParams, type Page } from '../../../core/list.ts'
import * as store from './store.ts'

const CACHE_TTL_MS = 10_000
const FLUSH_EVERY_MS = 10_000

interface KeyState {
  cache: Map<string, { row: store.ApiKeyRow; at: number }>
  used: Map<string, Date>
}
const states = new WeakMap<object, KeyState>()
const stateOf = (deps: Deps): KeyState => {
  let s = states.get(deps.sql)
  if (!s) states.set(deps.sql, (s = { cache: new Map(), used: new Map() }))
  return s
}

// Keys are stored as their SHA-256; crypto.hash (Node ≥ 20.12) makes it in one call.
const hashKey = (secret: string): Buffer => hash('sha256', secret, 'buffer')

export interface KeyView extends Omit<store.ApiKeyRow, 'revoked_at'> {
  provider: string
  user_type: string
}

// Built field by field, so a column added to the table never reaches the wire by accident.
const view = (row: store.ApiKeyRow): KeyView => ({
  id: row.id,
  tenant_id: row.tenant_id,
  environment_id: row.environment_id,
  name: row.name,
  display_id: row.display_id,
  roles: row.roles,
  tenant_owner: row.tenant_owner,
  type: row.type,
  provider: 'meterbill',
  user_type: 'service_account',
  expires_at: row.expires_at,
  last_used_at: row.last_used_at,
  status: row.status,
  metadata: row.metadata,
  created_at: row.created_at,
  created_by: row.created_by,
  updated_at: row.updated_at,
  updated_by: row.updated_by,
})

const unauthenticated = (message: string): AppError =>
  new AppError('permission_denied', message, { header: 'x-api-key' }, { status: 401 })

/** Resolves the caller of a request, or fails with 401. */
export async function authenticate(deps: Deps, secret: string | undefined): Promise<Actor> {
  if (!secret) throw unauthenticated('missing API key: send it in the x-api-key header')
  const state = stateOf(deps)
  // The cache is keyed by the hash in base64 (as row.key_hash reads), straight from the one-shot digest.
  const cacheKey = hash('sha256', secret, 'base64')
  const now = deps.clock.now()
  let entry = state.cache.get(cacheKey)
  if (!entry || Date.now() - entry.at > CACHE_TTL_MS) {
    const row = await store.findByHash(deps.sql, Buffer.from(cacheKey, 'base64'))
    if (!row) throw unauthenticated('invalid API key')
    entry = { row, at: Date.now() }
    state.cache.set(cacheKey, entry)
  }
  const { row } = entry
  if (row.revoked_at || row.status !== 'published') throw unauthenticated('API key has been revoked')
  if (row.expires_at && row.expires_at <= now) throw unauthenticated('API key has expired')
  state.used.set(row.id, now)
  return { keyId: row.id, tenantId: row.tenant_id, environmentId: row.environment_id, roles: row.roles, owner: row.tenant_owner }
}

/** Writes the last-use times gathered since the previous flush. */
export async function flushLastUsed(deps: Deps): Promise<void> {
  const state = stateOf(deps)
  if (state.used.size === 0) return
  const used = state.used
  state.used = new Map()
  await store.touchKeys(deps.sql, used)
}

export function startLastUsedFlusher(deps: Deps): () => Promise<void> {
  const timer = setInterval(() => {
    flushLastUsed(deps).catch((err) => deps.logger.warn({ err }, 'could not record API key use'))
  }, FLUSH_EVERY_MS)
  timer.unref()
  return async () => {
    clearInterval(timer)
    await flushLastUsed(deps)
  }
}

export interface CreateKeyInput {
  name: string
  roles?: Role[]
  expires_at?: string
  environment_id?: string
  type?: string
}

/** Mints a key; the secret is returned here once and never again. */
export async function mintKey(
  db: Db,
  scope: Scope,
  input: { name: string; roles: Role[]; expiresAt: Date | null; createdBy: string; secret?: string; owner?: boolean },
): Promise<{ api_key: string; secret: KeyView }> {
  const prefix = 'mb'
  const secret = input.secret ?? newSecret(prefix)
  const row = await store.insertKey(db, {
    id: newId('key'),
    tenant_id: scope.tenantId,
    environment_id: scope.environmentId,
    name: input.name,
    key_hash: hashKey(secret),
    display_id: `${secret.slice(0, 6)}…${secret.slice(-4)}`,
    roles: input.roles,
    tenant_owner: input.owner ?? false,
    expires_at: input.expiresAt,
    created_by: input.createdBy,
  })
  return { api_key: secret, secret: view(row) }
}

/**
 * The environment whose keys the caller may manage: its own, or with a tenant's owner key any of the
 * tenant's. Another tenant's environment is not found; another environment of the tenant, for an
 * environment's admin key, is permission_denied.
 */
async function managedEnvironment(deps: Deps, actor: Actor, environmentId: string | undefined): Promise<string> {
  if (!environmentId || environmentId === actor.environmentId) return actor.environmentId
  const env = await findEnvironment(deps, actor, environmentId)
  if (!env || env.status !== 'published') throw new AppError('not_found', `environment_id: environment ${environmentId} not found`, { id: environmentId, environment_id: environmentId })
  if (!actor.owner) {
    throw new AppError('permission_denied', "an environment's admin key manages the keys of its own environment only; use the tenant's owner key", { environment_id: environmentId })
  }
  return env.id
}

export async function createKey(deps: Deps, actor: Actor, input: CreateKeyInput): Promise<{ api_key: string; secret: KeyView }> {
  const environmentId = await managedEnvironment(deps, actor, input.environment_id)
  let expiresAt: Date | null = null
  if (input.expires_at) {
    expiresAt = new Date(input.expires_at)
    if (expiresAt <= deps.clock.now()) throw validationError('expires_at', 'must be in the future')
  }
  return mintKey(deps.sql, { tenantId: actor.tenantId, environmentId }, {
    name: input.name,
    roles: input.roles ?? ['admin'],
    expiresAt,
    createdBy: actor.keyId,
  })
}

export async function listKeys(deps: Deps, actor: Actor, params: ListParams, environmentId?: string): Promise<Page<KeyView>> {
  const scope = { tenantId: actor.tenantId, environmentId: await managedEnvironment(deps, actor, environmentId) }
  const { rows, total } = await store.listKeys(deps.sql, scope, params)
  return page(rows.map(view), total, params)
}

/**
 * Revokes a key of the caller's environment, or with the owner key of any of the tenant's; another
 * environment's key is not found for an environment's admin, and only an owner key revokes an owner key.
 */
export async function revokeKey(deps: Deps, actor: Actor, id: string): Promise<KeyView> {
  const target = await store.findLiveKey(deps.sql, actor.tenantId, id)
  if (!target || (!actor.owner && target.environment_id !== actor.environmentId)) throw notFound('api key', id)
  if (target.tenant_owner && !actor.owner) throw new AppError('permission_denied', "only a tenant's owner key revokes an owner key", { id })
  const row = await store.revokeKey(deps.sql, { tenantId: actor.tenantId, environmentId: target.environment_id }, id, actor.keyId, deps.clock.now())
  if (!row) throw notFound('api key', id)
  stateOf(deps).cache.delete(row.key_hash.toString('base64'))
  return view(row)
}
