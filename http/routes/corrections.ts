// Usage corrections (docs/usage.md, "Corrections"): cancel or amend stored events by id, and the record of them.
import { MAX_ID_LENGTH } from '../../core/events.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { eventSchema } from '../../ingest/schema.ts'
import { defineRoute, type Route } from '../route.ts'
import * as service from '../../domains/usage/corrections/service.ts'

const eventId: JsonSchema = { type: 'string', minLength: 1, maxLength: MAX_ID_LENGTH + 64 }

const itemSchema: JsonSchema = {
  type: 'object',
  required: ['event_id', 'action'],
  additionalProperties: false,
  properties: {
    event_id: eventId,
    action: { type: 'string', enum: ['cancel', 'amend'] },
    reason: { type: 'string', maxLength: 1000 },
    event: { ...eventSchema, description: 'amend only: the full corrected event (its event_id, if given, must be the corrected one)' },
  },
}

export const correctionRoutes: Route[] = [
  defineRoute<{ items: service.CorrectionItem[] }>({
    method: 'POST',
    path: '/v1/events/corrections',
    tag: 'Events',
    summary: 'Cancel or amend 1-1000 stored events by id; answered per item (applied, unchanged when sent before, or failed)',
    permission: 'write',
    body: { type: 'object', required: ['items'], additionalProperties: false, properties: { items: { type: 'array', minItems: 1, maxItems: 1000, items: itemSchema } } },
    handler: ({ deps, actor, body }) => service.applyCorrections(deps, actor, body.items.map((i) => ({ ...i, event_id: i.event_id.trim() }))),
  }),
  defineRoute<Record<string, never>, service.ListCorrectionsQuery>({
    method: 'GET',
    path: '/v1/events/corrections',
    tag: 'Events',
    summary: 'Corrections made, newest first, with who, when and why; the time range filters the corrected events',
    permission: 'read',
    readsUsage: false,
    query: {
      type: 'object',
      additionalProperties: false,
      properties: {
        external_customer_id: { type: 'string' },
        event_name: { type: 'string' },
        event_id: { type: 'string' },
        action: { type: 'string', enum: ['cancel', 'amend'] },
        start_time: { type: 'string', format: 'date-time' },
        end_time: { type: 'string', format: 'date-time', description: 'exclusive' },
        limit: { type: 'integer', minimum: 1, maximum: 1000, default: 50 },
        offset: { type: 'integer', minimum: 0, default: 0 },
      },
    },
    handler: ({ deps, actor, query }) => service.listCorrections(deps, actor, query),
  }),
]
