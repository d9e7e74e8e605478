// A route is declared once: method, path, permission, the JSON schemas of its body and query, and a
// handler. Mounting adds authentication, the role check, rate limiting and validation, and the
// same declarations generate the OpenAPI document.
import type Router from '@koa/router'
import type { Context } from 'koa'
import { AppError, serviceUnavailable } from '../core/errors.ts'
import type { Actor, Role } from '../core/scope.ts'
import type { Deps } from '../infra/deps.ts'
import { eventLogOf } from '../infra/event-log.ts'
import { authenticate } from '../domains/tenancy/keys/service.ts'
import { authenticateSession, SESSION_HEADER } from '../domains/portal/service.ts'
import type { RateLimiter } from './rate-limit.ts'
import { BOUNDS, validateBody, validateQuery, wellFormed, type JsonSchema } from '../core/validate.ts'

/**
 * `public` needs no key; `ingest` is event intake, which SDK-embedded keys may call and nothing else; `session` is
 * the customer portal's: a portal session token (X-Session-Token) instead of a key, and no key is taken there.
 */
export type Permission = 'public' | 'session' | 'ingest' | 'read' | 'write' | 'admin'

const ALLOWED: Record<Exclude<Permission, 'public' | 'session'>, readonly Role[]> = {
  ingest: ['ingest', 'write', 'admin'],
  read: ['read', 'write', 'admin'],
  write: ['write', 'admin'],
  admin: ['admin'],
}

interface Request<B, Q> {
  deps: Deps
  actor: Actor
  body: B
  query: Q
  params: Record<string, string>
  ctx: Context
}

export interface Route<B = any, Q = any> {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH'
  /** OpenAPI style: `/v1/customers/{id}`. */
  path: string
  tag: string
  summary: string
  permission: Permission
  body?: JsonSchema
  query?: JsonSchema
  /** Success status; default 200. */
  status?: number
  /** Response schema, for the OpenAPI document only. */
  response?: JsonSchema
  /** Response media type, for the OpenAPI document only; default application/json (text/csv: a streamed export). */
  produces?: string
  /**
   * False for a route that never reads usage (intake, health, the SDK's entitlement checks): it does not wait for the
   * events acknowledged before it to be stored (direct mode, infra/event-log.ts). Default true.
   */
  readsUsage?: boolean
  /** Returns the response body; returning undefined leaves ctx.body as the handler set it. */
  handler(req: Request<B, Q>): Promise<unknown>
}

export const defineRoute = <B = Record<string, never>, Q = Record<string, never>>(route: Route<B, Q>): Route<B, Q> => route

const koaPath = (path: string): string => path.replace(/\{(\w+)\}/g, ':$1')

/** How long a request waits for the events acknowledged before it to be inserted (direct mode) before a 503. */
const SETTLE_MS = 5000

/**
 * Direct mode acknowledges events before their insert: a route that reads usage first waits for the events
 * acknowledged before the request to be stored, so a client reads its own writes as it did when 202 came after the
 * insert. With no backlog it returns at once.
 */
async function awaitEvents(deps: Deps): Promise<void> {
  const log = eventLogOf(deps)
  if (log && !(await log.settled(SETTLE_MS))) {
    throw serviceUnavailable('events accepted before this request are not stored yet; retry shortly', { backlog_events: log.backlog().events })
  }
}

export interface MountOptions {
  deps: Deps
  limiter: RateLimiter
}

function authorize(actor: Actor, permission: Exclude<Permission, 'public' | 'session'>): void {
  if (!actor.roles.some((r) => ALLOWED[permission].includes(r))) {
    throw new AppError('permission_denied', `this API key may not ${permission === 'ingest' ? 'send events' : permission}`, {
      required_roles: ALLOWED[permission],
      key_roles: actor.roles,
    })
  }
}

/** A path segment no record can be named by (too long, NUL, unpaired surrogates) is refused before any lookup. */
function checkParams(params: Record<string, string>): void {
  wellFormed(params, 'path')
  for (const [name, value] of Object.entries(params)) {
    if (value.length > BOUNDS.text) throw new AppError('validation_error', `${name} must be at most ${BOUNDS.text} characters`, { [name]: `must be at most ${BOUNDS.text} characters` })
  }
}

export function mountRoutes(router: Router, routes: Route[], { deps, limiter }: MountOptions): void {
  for (const route of routes) {
    router.register(koaPath(route.path), [route.method], async (ctx: Context) => {
      let actor = undefined as unknown as Actor
      if (route.permission === 'session') {
        actor = await authenticateSession(deps, ctx.get(SESSION_HEADER) || undefined)
        limiter.take(actor.keyId)
      } else if (route.permission !== 'public') {
        actor = await authenticate(deps, ctx.get('x-api-key') || undefined)
        limiter.take(actor.keyId)
        authorize(actor, route.permission)
      }
      const params = (ctx as unknown as { params: Record<string, string> }).params
      checkParams(params)
      wellFormed(ctx.query, 'query')
      const query = route.query ? validateQuery(route.query, { ...ctx.query }) : {}
      const raw = (ctx.request as { body?: unknown }).body ?? {}
      if (route.body) wellFormed(raw, 'body')
      const body = route.body ? validateBody(route.body, raw) : {}
      if (route.readsUsage !== false) await awaitEvents(deps)
      const result = await route.handler({ deps, actor, body, query, params, ctx })
      if (result !== undefined) {
        ctx.status = route.status ?? 200
        ctx.body = result
      }
    })
  }
}
