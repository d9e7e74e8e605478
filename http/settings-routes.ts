// The GET and PUT of one per-environment settings document (`/v1/<area>/settings`): GET answers the environment's
// settings (or their defaults), PUT changes what its body gives. Communications, dunning and usage adjustments.
import type { Actor } from '../core/scope.ts'
import type { JsonSchema } from '../core/validate.ts'
import type { Deps } from '../infra/deps.ts'
import { toWire } from '../domains/records/wire.ts'
import { defineRoute, type Route } from './route.ts'

export interface SettingsRoutes<I> {
  path: string
  tag: string
  summary: { get: string; put: string }
  body: JsonSchema
  get(deps: Deps, actor: Actor): Promise<unknown>
  update(deps: Deps, actor: Actor, input: I): Promise<unknown>
}

export const settingsRoutes = <I>(s: SettingsRoutes<I>): Route[] => [
  defineRoute({
    method: 'GET',
    path: s.path,
    tag: s.tag,
    summary: s.summary.get,
    permission: 'read',
    handler: async ({ deps, actor }) => toWire(await s.get(deps, actor)),
  }),
  defineRoute<I>({
    method: 'PUT',
    path: s.path,
    tag: s.tag,
    summary: s.summary.put,
    permission: 'write',
    body: s.body,
    handler: async ({ deps, actor, body }) => toWire(await s.update(deps, actor, body)),
  }),
]
