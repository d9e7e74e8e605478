// The intake request schemas; the same objects validate requests and describe them in OpenAPI.
import type { JsonSchema } from '../api/http/validate.ts'
import { MAX_ID_LENGTH } from '../core/events.ts'

export const MAX_BULK = 1000

const text = (maxLength: number): JsonSchema => ({ type: 'string', maxLength })

export const eventSchema: JsonSchema = {
  type: 'object',
  required: ['event_name', 'external_customer_id'],
  additionalProperties: false,
  properties: {
    event_name: text(MAX_ID_LENGTH + 64),
    external_customer_id: text(MAX_ID_LENGTH + 64),
    event_id: text(MAX_ID_LENGTH + 64),
    customer_id: text(MAX_ID_LENGTH),
    timestamp: { type: 'string', format: 'date-time' },
    source: text(MAX_ID_LENGTH),
    properties: { type: 'object' },
  },
}

/** Only the envelope: each event is validated on its own so that bulk reports failures per index. */
export const bulkSchema: JsonSchema = {
  type: 'object',
  required: ['events'],
  additionalProperties: false,
  properties: { events: { type: 'array', minItems: 1, maxItems: MAX_BULK, items: { type: 'object' } } },
}
