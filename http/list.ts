// The list conventions of core/list.ts as a query string: `limit`, `offset`, `sort`, `order`, `status` and
// `metadata[key]=value`.
import { RECORD_STATUSES, type ListParams, type RecordStatus } from '../core/list.ts'
import type { JsonSchema } from '../core/validate.ts'

/** The query-string schema of a list route; `extra` adds the resource's own filters. */
export function listQuerySchema(sortable: readonly string[], extra: Record<string, JsonSchema> = {}): JsonSchema {
  return {
    type: 'object',
    properties: {
      limit: { type: 'integer', minimum: 1, maximum: 1000, default: 50 },
      offset: { type: 'integer', minimum: 0, default: 0 },
      sort: { type: 'string', enum: [...sortable], default: sortable[0] },
      order: { type: 'string', enum: ['asc', 'desc'], default: 'desc' },
      status: { type: 'string', enum: [...RECORD_STATUSES], default: 'published' },
      ...extra,
    },
    patternProperties: { '^metadata\\[[^\\]]+\\]$': { type: 'string' } },
    additionalProperties: false,
  }
}

export function listParams(query: Record<string, unknown>): ListParams {
  const metadata: Record<string, string> = {}
  for (const [key, value] of Object.entries(query)) {
    const m = /^metadata\[([^\]]+)\]$/.exec(key)
    if (m) metadata[m[1]] = String(value)
  }
  return {
    limit: query.limit as number,
    offset: query.offset as number,
    sort: query.sort as string,
    order: query.order as 'asc' | 'desc',
    status: query.status as RecordStatus,
    metadata,
  }
}

