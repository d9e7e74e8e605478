import { AGGREGATION_TYPES } from '../../core/meters.ts'
import { WINDOW_SIZES } from '../../core/periods.ts'
import { listParams, listQuerySchema } from '../list.ts'
import { defineRoute, type Route } from '../route.ts'
import type { JsonSchema } from '../../core/validate.ts'
import * as service from '../../domains/catalog/meters/service.ts'
import { decimalString } from '../record-schema.ts'

const filters: JsonSchema = {
  type: 'array',
  maxItems: 50,
  items: {
    type: 'object',
    required: ['key', 'values'],
    additionalProperties: false,
    properties: { key: { type: 'string', minLength: 1, maxLength: 255 }, values: { type: 'array', minItems: 1, maxItems: 1000, items: { type: 'string' } } },
  },
}

/** A meter as POST /v1/meters takes it (the pricing parser's meters are checked against it too). */
export const meterSchema: JsonSchema = {
  type: 'object',
  required: ['name', 'event_name', 'aggregation'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 255 },
    event_name: { type: 'string', minLength: 1, maxLength: 255 },
    aggregation: {
      type: 'object',
      required: ['type'],
      additionalProperties: false,
      properties: {
        type: { type: 'string', enum: [...AGGREGATION_TYPES] },
        field: { type: 'string', minLength: 1, maxLength: 255 },
        multiplier: { anyOf: [decimalString, { type: 'number' }] },
        group_by: { type: 'string', minLength: 1, maxLength: 255 },
        bucket_size: { type: 'string', enum: [...WINDOW_SIZES] },
        expression: { type: 'string', minLength: 1, maxLength: 1000, description: 'computes each event\'s value from its properties instead of field, e.g. properties.input_tokens + properties.output_tokens * 3' },
      },
    },
    filters,
    reset_usage: { type: 'string', enum: ['BILLING_PERIOD', 'NEVER'] },
    metadata: { type: 'object', additionalProperties: { type: 'string' } },
  },
}

const updateBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: { name: { type: 'string', minLength: 1, maxLength: 255 }, filters, version: { type: 'integer', minimum: 1 } },
}

export const meterRoutes: Route[] = [
  defineRoute<service.CreateMeterInput>({
    method: 'POST',
    path: '/v1/meters',
    tag: 'Meters',
    summary: 'Create a meter; events stored before it are backfilled (see backfill on the meter)',
    permission: 'write',
    body: meterSchema,
    status: 201,
    handler: ({ deps, actor, body }) => service.createMeter(deps, actor, body),
  }),
  defineRoute<Record<string, never>, Record<string, unknown>>({
    method: 'GET',
    path: '/v1/meters',
    tag: 'Meters',
    summary: 'List meters',
    permission: 'read',
    query: listQuerySchema(['created_at', 'name'], { event_name: { type: 'string' } }),
    handler: ({ deps, actor, query }) => service.listMeters(deps, actor, listParams(query), query.event_name as string | undefined),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/meters/{id}',
    tag: 'Meters',
    summary: 'Get a meter with its backfill progress',
    permission: 'read',
    handler: ({ deps, actor, params }) => service.getMeter(deps, actor, params.id),
  }),
  defineRoute<service.UpdateMeterInput>({
    method: 'PUT',
    path: '/v1/meters/{id}',
    tag: 'Meters',
    summary: 'Rename a meter or change its filters (new filters are backfilled; queries use the old ones until done)',
    permission: 'write',
    body: updateBody,
    handler: ({ deps, actor, params, body }) => service.updateMeter(deps, actor, params.id, body),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/meters/{id}',
    tag: 'Meters',
    summary: 'Archive a meter: it stops counting new events; its usage stays readable',
    permission: 'write',
    handler: ({ deps, actor, params }) => service.archiveMeter(deps, actor, params.id),
  }),
]
