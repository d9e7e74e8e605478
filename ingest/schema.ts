// The intake request schemas; the same objects validate requests and describe them in OpenAPI.
import type { JsonSchema } from '../core/validate.ts'
import { MAX_ID_LENGTH, simpleInstant, type EventInput } from '../core/events.ts'

const MAX_BULK = 1000

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

const OBJECT = -1
const INSTANT = -2
/** Per field of eventSchema: its maxLength, or OBJECT, or INSTANT (date-time); read from the schema so the two cannot drift. */
const rules = new Map<string, number>(
  Object.entries(eventSchema.properties as Record<string, JsonSchema>).map(([field, p]) => {
    if (p.type === 'object' && Object.keys(p).length === 1) return [field, OBJECT]
    if (p.type === 'string' && p.format === 'date-time' && Object.keys(p).length === 2) return [field, INSTANT]
    if (p.type === 'string' && typeof p.maxLength === 'number' && Object.keys(p).length === 2) return [field, p.maxLength]
    throw new Error(`the fast event check does not know the schema of ${field}`)
  }),
)
const required = eventSchema.required as string[]

/**
 * True only for an event that ajv accepts too, in a fraction of its time: the common shape (known fields, strings
 * within their length in UTF-16 units, which is never less than ajv's count of code points, instants in the usual
 * form). False means "ask ajv", which accepts or names the fields.
 */
export function plainEvent(raw: unknown): raw is EventInput {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return false
  const r = raw as Record<string, unknown>
  for (const field of required) if (r[field] === undefined) return false
  for (const field in r) {
    const rule = rules.get(field)
    const v = r[field]
    if (rule === undefined) return false
    if (rule === OBJECT) {
      if (typeof v !== 'object' || v === null || Array.isArray(v)) return false
    } else if (typeof v !== 'string' || (rule === INSTANT ? Number.isNaN(simpleInstant(v)) : v.length > rule)) return false
  }
  return true
}
