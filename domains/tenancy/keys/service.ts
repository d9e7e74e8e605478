// API keys: minted with 256 random bits, stored only as a SHA-256 hash, bound to one environment,
// refused once revoked or expired. Lookups are cached briefly; last use is recorded in batches.
import { createHash } from 'node:crypto'
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

const hashKey = (secret: string): Buffer => createHash('sha256').update(secret).digest()

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
  const hash = hashKey(secret)
  const cacheKey = hash.toString('base64')
  const now = deps.clock.now()
  let entry = state.cache.get(cacheKey)
  if (!entry || Date.now() - entry.at > CACHE_TTL_MS) {
    const row = await store.findByHash(deps.sql, hash)
    if (!row) throw unauthenticated('invalid API key')
    entry = { row, at: Date.now() }
    state.cache.set(cacheKey, entry)
  }
  const { row } = entry
  if (row.revoked_at || row.status !== 'published') throw unauthenticated('API key has been revoked')
  if (row.expires_at && row.expires_at <= now) throw unauthenticated('API key has expired')
  state.used.set(row.id, now)
  return { keyId: row.id, tenantId: row.tenant_id, environmentId: row.environment_id, roles: row.roles }
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
  input: { name: string; roles: Role[]; expiresAt: Date | null; createdBy: string; secret?: string },
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
    expires_at: input.expiresAt,
    created_by: input.createdBy,
  })
  return { api_key: secret, secret: view(row) }
}

export async function createKey(deps: Deps, actor: Actor, input: CreateKeyInput): Promise<{ api_key: string; secret: KeyView }> {
  let environmentId = actor.environmentId
  if (input.environment_id && input.environment_id !== actor.environmentId) {
    // Another tenant's environment is simply not found.
    const env = await findEnvironment(deps, actor, input.environment_id)
    if (!env || env.status !== 'published') throw notFound('environment', input.environment_id)
    environmentId = env.id
  }
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

export async function listKeys(deps: Deps, actor: Actor, params: ListParams): Promise<Page<KeyView>> {
  const { rows, total } = await store.listKeys(deps.sql, actor, params)
  return page(rows.map(view), total, params)
}

export async function revokeKey(deps: Deps, actor: Actor, id: string): Promise<KeyView> {
  const row = await store.revokeKey(deps.sql, actor, id, actor.keyId, deps.clock.now())
  if (!row) throw notFound('api key', id)
  stateOf(deps).cache.delete(row.key_hash.toString('base64'))
  return view(row)
}
