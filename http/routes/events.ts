import { MAX_ID_LENGTH } from '../../core/events.ts'
import { defineRoute, type Route } from '../route.ts'
import * as service from '../../domains/usage/events/service.ts'
import { EVENT_EXPORT_COLUMNS, exportEvents, type EventExportRequest } from '../../domains/usage/events/export.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { sendCsv } from '../csv-stream.ts'

const names = (description: string): JsonSchema => ({ type: 'array', minItems: 1, maxItems: 1000, items: { type: 'string', minLength: 1 }, description })

/** The raw-events export's filters: the POST body, or the GET query (a repeated parameter for several values). */
const exportFilters: JsonSchema = {
  type: 'object',
  required: ['start_time', 'end_time'],
  additionalProperties: false,
  properties: {
    start_time: { type: 'string', format: 'date-time' },
    end_time: { type: 'string', format: 'date-time', description: 'exclusive' },
    external_customer_id: { type: 'string', minLength: 1 },
    external_customer_ids: names('only these customers'),
    event_names: names('only events of these names'),
    sources: { type: 'array', minItems: 1, maxItems: 1000, items: { type: 'string' }, description: "only events of these sources ('' for none)" },
  },
}

const exportRoute = (method: 'GET' | 'POST') =>
  defineRoute<EventExportRequest, EventExportRequest>({
    method,
    path: '/v1/events/export',
    tag: 'Events',
    summary: 'Every stored event of a range with its properties as JSON, as CSV streamed row by row (audits)',
    permission: 'read',
    ...(method === 'POST' ? { body: exportFilters } : { query: exportFilters }),
    produces: 'text/csv',
    handler: async ({ deps, actor, body, query, ctx }) => {
      const { filename, pieces } = exportEvents(deps, actor, method === 'POST' ? body : query)
      await sendCsv(ctx, deps, { filename, columns: EVENT_EXPORT_COLUMNS, pieces })
      return undefined
    },
  })

export const eventRoutes: Route[] = [
  exportRoute('POST'),
  exportRoute('GET'),
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
  defineRoute<service.EventQuery>({
    method: 'POST',
    path: '/v1/events/query',
    tag: 'Events',
    summary: "Raw events by the filters in the body (Flexprice's form): pages by offset, or on from iter_last_key",
    permission: 'read',
    body: {
      type: 'object',
      additionalProperties: false,
      properties: {
        external_customer_id: { type: 'string' },
        event_name: { type: 'string' },
        event_id: { type: 'string' },
        source: { type: 'string' },
        start_time: { type: 'string', format: 'date-time' },
        end_time: { type: 'string', format: 'date-time' },
        property_filters: { type: 'object', maxProperties: 20, additionalProperties: { type: 'array', minItems: 1, maxItems: 100, items: { type: 'string' } } },
        page_size: { type: 'integer', minimum: 1, maximum: 1000, default: 50 },
        offset: { type: 'integer', minimum: 0 },
        iter_last_key: { type: 'string', maxLength: 1000, description: 'the iter_last_key of the previous page' },
        sort: { type: 'string', enum: ['timestamp'] },
        order: { type: 'string', enum: ['asc', 'desc'], default: 'desc' },
      },
    },
    handler: ({ deps, actor, body }) => service.queryEvents(deps, actor, body),
  }),
  defineRoute<Record<string, never>, Record<string, never>>({
    method: 'GET',
    path: '/v1/events/{id}',
    tag: 'Events',
    summary: 'One event by id: stored (with the event), duplicate, or rejected and why (as GET /v1/events/lookup)',
    permission: 'read',
    handler: ({ deps, actor, params }) => service.lookupEvent(deps, actor, params.id.trim()),
  }),
]
