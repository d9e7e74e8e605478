// Flexprice's tenant, user and RBAC calls over what this service has: one tenant per key, API keys as the only
// users (service accounts), and the four fixed roles keys hold. A tenant and a role are not records of an
// environment: their path parameters are named for what they are ({tenant_id}, {role_id}), not {id}.
import { ROLES } from '../../core/scope.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { defineRoute, type Route } from '../route.ts'
import { fromSearchBody, idList, metadataSchema, searchBody } from '../record-schema.ts'
import { filterSpec } from '../../infra/records.ts'
import { toWire } from '../../domains/records/wire.ts'
import * as tenants from '../../domains/tenancy/tenants/service.ts'
import * as users from '../../domains/tenancy/keys/users.ts'
import { getRole, listRoles } from '../../domains/tenancy/keys/roles.ts'

const TAG = 'Tenancy'
const roleList: JsonSchema = { type: 'array', items: { type: 'string', enum: [...ROLES] }, maxItems: ROLES.length }
const userType: JsonSchema = { type: 'string', enum: ['user', 'service_account'] }
const userSearch = searchBody(['created_at', 'name', 'last_used_at'], filterSpec({ in: { user_ids: 'id' } })) as { properties: Record<string, JsonSchema> }

export const tenancyRoutes: Route[] = [
  defineRoute({
    method: 'GET',
    path: '/v1/tenant/billing',
    tag: TAG,
    summary: "Flexprice's own bill to its tenant: refused, nothing bills a tenant of this service",
    permission: 'read',
    handler: async () => tenants.tenantBillingUsage(),
  }),
  defineRoute<{ name?: string; metadata?: Record<string, string>; billing_details?: unknown }>({
    method: 'PUT',
    path: '/v1/tenants/update',
    tag: TAG,
    summary: "Rename the caller's tenant or replace its metadata (the tenant's owner key)",
    permission: 'admin',
    body: {
      type: 'object',
      additionalProperties: false,
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 255 },
        metadata: metadataSchema,
        billing_details: { type: 'object', description: 'refused: a tenant has no billing details here (nothing bills it)' },
      },
    },
    handler: async ({ deps, actor, body }) => toWire(await tenants.updateTenant(deps, actor, body)),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/tenants/{tenant_id}',
    tag: TAG,
    summary: "The caller's tenant (another is not found)",
    permission: 'read',
    handler: async ({ deps, actor, params }) => toWire(await tenants.getTenant(deps, actor, params.tenant_id)),
  }),
  defineRoute<{ type: string }>({
    method: 'POST',
    path: '/v1/users',
    tag: TAG,
    summary: 'Refused: users here are API keys (POST /v1/secrets/api/keys); there is no sign-in to invite people to',
    permission: 'admin',
    body: { type: 'object', required: ['type'], additionalProperties: false, properties: { type: userType, roles: roleList, name: { type: 'string', maxLength: 255 } } },
    handler: async ({ body }) => users.createUser(body),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/users/me',
    tag: TAG,
    summary: 'The calling API key as a user: a service account with its roles and tenant',
    permission: 'read',
    handler: async ({ deps, actor }) => toWire(await users.currentUser(deps, actor)),
  }),
  defineRoute<Record<string, unknown>>({
    method: 'POST',
    path: '/v1/users/search',
    tag: TAG,
    summary: "The environment's API keys as users (service accounts): by user_ids, roles (any of) and type",
    permission: 'admin',
    body: { ...userSearch, properties: { ...userSearch.properties, user_ids: idList, roles: roleList, type: userType } },
    handler: async ({ deps, actor, body }) => {
      const { params } = fromSearchBody(body)
      return toWire(await users.searchUsers(deps, actor, params, body as users.UserSearch))
    },
  }),
  defineRoute({ method: 'GET', path: '/v1/rbac/roles', tag: TAG, summary: 'The four roles a key may hold (fixed)', permission: 'read', handler: async () => listRoles() }),
  defineRoute({ method: 'GET', path: '/v1/rbac/roles/{role_id}', tag: TAG, summary: 'One of the four roles', permission: 'read', handler: async ({ params }) => getRole(params.role_id) }),
]
