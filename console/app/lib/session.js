// Who the pasted key is, learned from the public API alone, and the keys of this tab. Keys live in
// sessionStorage only: closing the tab forgets them; nothing is sent anywhere but the x-api-key header.
import { ApiError, apiClient } from './api.js'

const STORE = 'meterbill.console'

/** {current: environment id, keys: {environment id: key}} of this tab. */
export function loadStore() {
  try {
    const s = JSON.parse(sessionStorage.getItem(STORE) || '{}')
    return { current: s.current ?? null, keys: s.keys ?? {} }
  } catch {
    return { current: null, keys: {} }
  }
}

export function saveStore(store) {
  sessionStorage.setItem(STORE, JSON.stringify(store))
}

export function forget() {
  sessionStorage.removeItem(STORE)
}

const INGEST_ONLY = 'This is an ingest key: it may only send events (POST /v1/events). Paste a read, write or admin key to use the console.'

/**
 * Checks a key and finds its roles and environment.
 * - GET /v1/environments needs `read`: 401 is a bad key, 403 an ingest key.
 * - GET /v1/secrets/api/keys needs `admin`: it answers an admin key with the environment's keys (their
 *   environment_id is the key's), and any other key with 403 naming the key's roles (details.key_roles).
 * - A read or write key's environment is read off its first record; with none yet it stays unknown.
 */
export async function probe(key) {
  const api = apiClient(key)
  let environments
  try {
    environments = (await api.get('/v1/environments', { limit: 100, sort: 'created_at', order: 'asc' })).items
  } catch (err) {
    if (err instanceof ApiError && err.status === 403) throw new ApiError(403, { code: 'permission_denied', message: INGEST_ONLY, details: err.details })
    throw err
  }
  let roles
  let environmentId = null
  try {
    const keys = await api.get('/v1/secrets/api/keys', { limit: 1 })
    roles = ['admin']
    environmentId = keys.items[0]?.environment_id ?? null
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 403) throw err
    roles = Array.isArray(err.details.key_roles) ? err.details.key_roles : ['read']
  }
  if (!environmentId) {
    const firsts = await Promise.all(
      ['/v1/customers', '/v1/meters', '/v1/features', '/v1/plans', '/v1/invoices'].map((p) => api.get(p, { limit: 1 }).catch(() => ({ items: [] }))),
    )
    environmentId = firsts.map((r) => r.items[0]?.environment_id).find(Boolean) ?? null
  }
  return { key, roles, environmentId, environments, canWrite: roles.includes('write') || roles.includes('admin'), isAdmin: roles.includes('admin') }
}

/** An admin key mints a key for another environment of the tenant, for this tab, expiring in 12 hours. */
export async function mintFor(session, environment) {
  const expires = new Date(Date.now() + 12 * 3600_000).toISOString()
  const created = await apiClient(session.key).post('/v1/secrets/api/keys', {
    name: `console session (${environment.name ?? environment.type})`,
    roles: session.roles,
    environment_id: environment.id,
    expires_at: expires,
  })
  return created.api_key
}
