import { MAX_ID_LENGTH } from '../../core/events.ts'
import { defineRoute, type Route } from '../route.ts'
import * as service from '../../domains/usage/events/service.ts'

export const eventRoutes: Route[] = [
  defineRoute<Record<string, never>, service.ListEventsQuery>({
    method: 'GET',
    path: '/v1/events',
    tag: 'Events',
    summary: 'Raw events, newest first; page on with next_cursor',
    permission: 'read',
    query: {
      type: 'object',
      additionalProperties: false,
      properties: {
        external_customer_id: { type: 'string' },
        event_name: { type: 'string' },
        source: { type: 'string' },
        start_time: { type: 'string', format: 'date-time' },
        end_time: { type: 'string', format: 'date-time' },
        limit: { type: 'integer', minimum: 1, maximum: 1000, default: 50 },
        cursor: { type: 'string', maxLength: 1000 },
      },
    },
    handler: ({ deps, actor, query }) => service.listEvents(deps, actor, query),
  }),
  defineRoute<Record<string, never>, { event_id: string }>({
    method: 'GET',
    path: '/v1/events/lookup',
    tag: 'Events',
    summary: 'Whether one event id was stored, dropped as a duplicate (with each copy), or rejected and why',
    permission: 'read',
    query: { type: 'object', required: ['event_id'], additionalProperties: false, properties: { event_id: { type: 'string', minLength: 1, maxLength: MAX_ID_LENGTH + 64 } } },
    // As long as intake takes an event_id before trimming it: nothing longer can have been stored.
    handler: ({ deps, actor, query }) => service.lookupEvent(deps, actor, query.event_id.trim()),
  }),
]
