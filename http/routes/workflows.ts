// Flexprice's workflow search: its Temporal workflow executions have no counterpart here, so the call says so.
import { invalidOperation } from '../../core/errors.ts'
import { defineRoute, type Route } from '../route.ts'

export const workflowRoutes: Route[] = [
  defineRoute({
    method: 'POST',
    path: '/v1/workflows/search',
    tag: 'Workflows',
    summary: "Refused: there are no per-record workflow executions; the worker's scheduled jobs run across tenants (run one with POST /v1/jobs/{name}/run)",
    permission: 'read',
    handler: async () => {
      throw invalidOperation("there are no workflow executions to search: billing runs, syncs and alerts are the worker's scheduled jobs, which run across tenants and keep no per-tenant history (run one now with POST /v1/jobs/{name}/run)", { operation: 'workflows_search' })
    },
  }),
]
