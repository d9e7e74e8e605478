import { listParams, listQuerySchema } from '../list.ts'
import { defineRoute, type Route } from '../route.ts'
import * as service from '../../domains/tenancy/environments/service.ts'
import { cloneEnvironment } from '../../domains/cloning/service.ts'
import { toWire } from '../../domains/records/wire.ts'

export const environmentRoutes: Route[] = [
  defineRoute<Record<string, never>, Record<string, unknown>>({
    method: 'GET',
    path: '/v1/environments',
    tag: 'Environments',
    summary: "List the tenant's environments (published only unless status asks otherwise)",
    permission: 'read',
    query: listQuerySchema(['created_at', 'name']),
    handler: ({ deps, actor, query }) => service.listEnvironments(deps, actor, listParams(query)),
  }),
  defineRoute<{ target_environment_id: string }>({
    method: 'POST',
    path: '/v1/environments/{id}/clone',
    tag: 'Environments',
    summary: "Copy this environment's published meters, groups, features, plans and addons (prices, entitlements, credit grants) into another environment of the tenant; again: updates, never duplicates",
    permission: 'admin',
    body: { type: 'object', required: ['target_environment_id'], additionalProperties: false, properties: { target_environment_id: { type: 'string', minLength: 1, maxLength: 255 } } },
    handler: async ({ deps, actor, params, body }) => toWire(await cloneEnvironment(deps, actor, params.id, body.target_environment_id)),
  }),
]
