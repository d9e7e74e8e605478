import { defineRoute, type Route } from '../route.ts'
import * as service from '../../infra/health.ts'

export const healthRoutes: Route[] = [
  defineRoute({
    method: 'GET',
    path: '/v1/health',
    readsUsage: false,
    tag: 'Health',
    summary: "Each engine's state; 503 when one is down",
    permission: 'public',
    handler: async ({ deps, ctx }) => {
      const health = await service.checkHealth(deps)
      ctx.status = health.status === 'ok' ? 200 : 503
      ctx.body = health
      return undefined
    },
  }),
]
