import { listParams, listQuerySchema } from '../list.ts'
import { defineRoute, type Route } from '../route.ts'
import * as service from '../../domains/tenancy/environments/service.ts'

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
]
