// JSON schemas shared by the record routes: decimals, metadata, currencies, and the list and search
// requests built from a resource's declared filters.
import type { FilterOp, FilterSpec } from '../infra/records.ts'
import type { ListRequest } from '../core/list.ts'
import { listParams, listQuerySchema } from './list.ts'
import { decimalSchema, type JsonSchema } from '../core/validate.ts'

/** Plain decimal text, as money and quantities travel: "12", "0.000001"; bounded by core/validate.ts's decimalSchema. */
export const decimalString: JsonSchema = decimalSchema(true)
export const nonNegativeDecimal: JsonSchema = decimalSchema(false)
export const metadataSchema: JsonSchema = { type: 'object', additionalProperties: { type: 'string' } }
export const currencySchema: JsonSchema = { type: 'string', pattern: '^[A-Za-z]{3}$', description: 'three-letter ISO 4217 code' }
export const dateTime: JsonSchema = { type: 'string', format: 'date-time' }
export const idList: JsonSchema = { type: 'array', items: { type: 'string', minLength: 1 }, maxItems: 1000 }
/** PUT bodies may carry the version the caller read; a stale one is refused with version_conflict. */
export const versionField: JsonSchema = { type: 'integer', minimum: 1 }

const FILTER_SCHEMA: Record<FilterOp, JsonSchema> = {
  eq: { type: 'string' },
  in: idList,
  contains: { type: 'string', minLength: 1 },
  gte: dateTime,
  lt: dateTime,
  unexpired: { type: 'boolean' },
}

const filterProperties = (spec: FilterSpec): Record<string, JsonSchema> =>
  Object.fromEntries(Object.entries(spec).map(([name, { op }]) => [name, FILTER_SCHEMA[op]]))

/** Query string of GET /v1/<r>: paging, sorting, status, metadata[key]=value and the resource's filters. */
export const listQuery = (sortable: readonly string[], spec: FilterSpec): JsonSchema => listQuerySchema(sortable, filterProperties(spec))

/**
 * Body of POST /v1/<r>/search: the same as the list query, with metadata as an object. Flexprice's clients
 * may send sort as [{field, direction}] (one condition) and expand (accepted; views embed what they embed).
 */
export function searchBody(sortable: readonly string[], spec: FilterSpec): JsonSchema {
  const query = listQuerySchema(sortable) as { properties: Record<string, JsonSchema> }
  const condition: JsonSchema = {
    type: 'object',
    required: ['field'],
    additionalProperties: false,
    properties: { field: { type: 'string', enum: [...sortable] }, direction: { type: 'string', enum: ['asc', 'desc'] } },
  }
  const sort: JsonSchema = { anyOf: [query.properties.sort, { type: 'array', minItems: 1, maxItems: 1, items: condition }], default: sortable[0] }
  return {
    type: 'object',
    additionalProperties: false,
    properties: { ...query.properties, sort, expand: { type: 'string', maxLength: 500 }, metadata: metadataSchema, ...filterProperties(spec) },
  }
}

/** Flexprice's [{field, direction}] sort as sort and order. */
function sortOf(body: Record<string, unknown>): Record<string, unknown> {
  if (!Array.isArray(body.sort)) return body
  const [{ field, direction }] = body.sort as { field: string; direction?: string }[]
  return { ...body, sort: field, order: direction ?? body.order }
}

export const fromListQuery = (query: Record<string, unknown>): ListRequest => ({ params: listParams(query), filters: query })

export const fromSearchBody = (given: Record<string, unknown>): ListRequest => {
  const body = sortOf(given)
  return { params: { ...listParams(body), metadata: (body.metadata as Record<string, string> | undefined) ?? {} }, filters: body }
}
