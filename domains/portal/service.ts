// Customer portal sessions: an API key opens one for a customer (Flexprice's GET /v1/customers/portal/{external_id})
// and hands its link to that customer. The token carries 256 random bits and is stored only as its SHA-256; it
// reads that one customer's billing for an hour, read-only, and is refused once expired, revoked or its
// customer deleted. Every refusal is the same 401, so a token's state cannot be probed.
import { hash } from 'node:crypto'
import { AppError } from '../../core/errors.ts'
import { newId, newSecret } from '../../core/ids.ts'
import type { Actor } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import { findCustomerByExternalId, requireCustomer } from '../customers/service.ts'
import * as store from './store.ts'

/** How long a portal link works: Flexprice's portal sessions last one hour. */
const SESSION_TTL_MS = 3600_000

/** The header the portal's calls carry the token in (Flexprice's). */
export const SESSION_HEADER = 'x-session-token'

/** The caller of a portal request: one customer of one environment, and no API role at all. */
export interface PortalActor extends Actor {
  portal: { sessionId: string; customerId: string }
}

const hashToken = (token: string): Buffer => hash('sha256', token, 'buffer')

/** The link opens the portal page with the token in the fragment: browsers send a fragment neither to the server nor in a Referer. */
const portalUrl = (origin: string, token: string): string => `${origin}/portal/#token=${encodeURIComponent(token)}`

export interface PortalSession {
  url: string
  token: string
  expires_at: Date
}

/** Opens a session for the customer with this external id; the token is answered here once and never again. */
export async function createPortalSession(deps: Deps, actor: Actor, externalId: string, origin: string): Promise<PortalSession> {
  const customer = await findCustomerByExternalId(deps, actor, externalId)
  const token = newSecret('mbps')
  const now = deps.clock.now()
  const row = await store.insertSession(deps.sql, {
    id: newId('psess'),
    tenant_id: actor.tenantId,
    environment_id: actor.environmentId,
    customer_id: customer.id,
    token_hash: hashToken(token),
    expires_at: new Date(now.getTime() + SESSION_TTL_MS),
    created_at: now,
    created_by: actor.keyId,
  })
  return { url: portalUrl(origin, token), token, expires_at: row.expires_at }
}

/** Ends every live session of a customer at once (a link sent to the wrong person, an offboarded customer). */
export async function revokePortalSessions(deps: Deps, actor: Actor, externalId: string): Promise<{ revoked_sessions: number }> {
  const customer = await findCustomerByExternalId(deps, actor, externalId)
  return { revoked_sessions: await store.revokeCustomerSessions(deps.sql, actor, customer.id, deps.clock.now()) }
}

const refused = (message: string): AppError => new AppError('permission_denied', message, { header: SESSION_HEADER }, { status: 401 })

/** Resolves a portal request's caller from its token, or fails with 401. No cache: a revocation holds at once. */
export async function authenticateSession(deps: Deps, token: string | undefined): Promise<PortalActor> {
  if (!token) throw refused(`missing portal session: send its token in the ${SESSION_HEADER} header`)
  const row = await store.findByHash(deps.sql, hashToken(token))
  const now = deps.clock.now()
  if (!row || row.revoked_at || row.expires_at <= now) throw refused('this portal link has expired or was revoked; ask for a new one')
  const scope = { tenantId: row.tenant_id, environmentId: row.environment_id }
  // A deleted customer's sessions end with it.
  try {
    await requireCustomer(deps, scope, row.customer_id)
  } catch (err) {
    if (err instanceof AppError && err.code === 'not_found') throw refused('this portal link has expired or was revoked; ask for a new one')
    throw err
  }
  await store.touchSession(deps.sql, row.id, now)
  return { ...scope, keyId: row.id, roles: [], portal: { sessionId: row.id, customerId: row.customer_id } }
}

/** The portal caller of a request, refusing any other: the portal's reads are scoped by it. */
export function portalActor(actor: Actor): PortalActor {
  if (!('portal' in actor)) throw refused('this operation takes a portal session')
  return actor as PortalActor
}

/** The customer signs out: its own session ends. */
export async function endSession(deps: Deps, actor: PortalActor): Promise<{ revoked: true }> {
  await store.revokeSession(deps.sql, actor, actor.portal.sessionId, deps.clock.now())
  return { revoked: true }
}
