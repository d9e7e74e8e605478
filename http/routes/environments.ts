import { listParams, listQuerySchema } from '../list.ts'
import { defineRoute, type Route } from '../route.ts'
import * as service from '../../domains/tenancy/environments/service.ts'
import { cloneEnvironment } from '../../domains/cloning/service.ts'
import { toWire } from '../../domains/records/wire.ts'
import { metadataSchema } from '../record-schema.ts'
import type { JsonSchema } from '../../core/validate.ts'

const environmentFields: Record<string, JsonSchema> = {
  name: { type: 'string', minLength: 1, maxLength: 255 },
  type: { type: 'string', enum: [...service.ENVIRONMENT_TYPES] },
  metadata: metadataSchema,
}

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
  defineRoute<service.EnvironmentInput>({
    method: 'POST',
    path: '/v1/environments',
    tag: 'Environments',
    summary: "Create an environment of the tenant (the tenant's owner key); mint its keys with POST /v1/secrets/api/keys and its environment_id",
    permission: 'admin',
    status: 201,
    body: { type: 'object', required: ['name', 'type'], additionalProperties: false, properties: environmentFields },
    handler: async ({ deps, actor, body }) => toWire(await service.createEnvironment(deps, actor, body)),
  }),
  defineRoute<Partial<service.EnvironmentInput>>({
    method: 'PUT',
    path: '/v1/environments/{id}',
    tag: 'Environments',
    summary: "Rename an environment or replace its metadata (the tenant's owner key, or the environment's admin key); its type and slug stay",
    permission: 'admin',
    body: { type: 'object', additionalProperties: false, properties: environmentFields },
    handler: async ({ deps, actor, params, body }) => toWire(await service.updateEnvironment(deps, actor, params.id, body)),
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
