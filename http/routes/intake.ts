import type { Context } from 'koa'
import { defineRoute, type Route } from '../route.ts'
import { bulkSchema, eventSchema } from '../../ingest/schema.ts'
import { exactJson } from '../../ingest/exact-json.ts'
import * as service from '../../ingest/service.ts'

const rawOf = (ctx: Context): string | undefined => (ctx.request as { rawBody?: string }).rawBody

export const ingestRoutes: Route[] = [
  defineRoute<Record<string, unknown>>({
    method: 'POST',
    path: '/v1/events',
    readsUsage: false,
    tag: 'Events',
    summary: 'Send one usage event; answered 202 once it is durably stored (or in Kafka)',
    permission: 'ingest',
    body: eventSchema,
    status: 202,
    handler: ({ deps, actor, body, ctx }) => service.ingestEvent(deps, actor, exactJson(rawOf(ctx), body), ctx.request.length ?? 0),
  }),
  defineRoute<{ events: unknown[] }>({
    method: 'POST',
    path: '/v1/events/bulk',
    readsUsage: false,
    tag: 'Events',
    summary: 'Send 1-1000 usage events; every event is validated first, invalid ones are reported per index',
    permission: 'ingest',
    body: bulkSchema,
    status: 202,
    handler: ({ deps, actor, body, ctx }) => {
      const exact = exactJson(rawOf(ctx), body) as { events: unknown[] }
      return service.ingestEvents(deps, actor, exact.events, ctx.request.length ?? 0)
    },
  }),
]
