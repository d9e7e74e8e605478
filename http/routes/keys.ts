import { ROLES, type Role } from '../../core/scope.ts'
import { listParams, listQuerySchema } from '../list.ts'
import { defineRoute, type Route } from '../route.ts'
import * as service from '../../domains/tenancy/keys/service.ts'

const createBody = {
  type: 'object',
  required: ['name'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 255 },
    roles: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'string', enum: [...ROLES] } },
    expires_at: { type: 'string', format: 'date-time' },
    environment_id: { type: 'string', minLength: 1 },
    type: { type: 'string', enum: ['private_key'] },
  },
}

export const keyRoutes: Route[] = [
  defineRoute<Record<string, never>, Record<string, unknown>>({
    method: 'GET',
    path: '/v1/secrets/api/keys',
    tag: 'API keys',
    summary: "List API keys of this environment, or with the tenant's owner key of environment_id (never the secret)",
    permission: 'admin',
    query: listQuerySchema(['created_at', 'name', 'last_used_at'], { environment_id: { type: 'string', minLength: 1 } }),
    handler: ({ deps, actor, query }) => service.listKeys(deps, actor, listParams(query), query.environment_id as string | undefined),
  }),
  defineRoute<service.CreateKeyInput & { roles?: Role[] }>({
    method: 'POST',
    path: '/v1/secrets/api/keys',
    tag: 'API keys',
    summary: "Create an API key; the secret is returned once as api_key. environment_id: another environment's key (the tenant's owner key only)",
    permission: 'admin',
    body: createBody,
    status: 201,
    handler: ({ deps, actor, body }) => service.createKey(deps, actor, body),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/secrets/api/keys/{id}',
    tag: 'API keys',
    summary: "Revoke an API key of this environment (the tenant's owner key: of any environment); 204, as Flexprice answers",
    permission: 'admin',
    status: 204,
    handler: async ({ deps, actor, params, ctx }) => {
      await service.revokeKey(deps, actor, params.id)
      ctx.status = 204
      return undefined
    },
  }),
]
