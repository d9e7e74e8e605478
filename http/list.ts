// List conventions in one place: limit (default 50, max 1000), offset, sort, order, status and a
// metadata filter `metadata[key]=value`; responses are {items, pagination: {limit, offset, total}}.
import type { JsonSchema } from '../core/validate.ts'

export const RECORD_STATUSES = ['published', 'deleted', 'archived'] as const
export type RecordStatus = (typeof RECORD_STATUSES)[number]

export interface ListParams {
  limit: number
  offset: number
  sort: string
  order: 'asc' | 'desc'
  status: RecordStatus
  metadata: Record<string, string>
}

export interface Page<T> {
  items: T[]
  pagination: { limit: number; offset: number; total: number }
}

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

export const page = <T>(items: T[], total: number, params: Pick<ListParams, 'limit' | 'offset'>): Page<T> => ({
  items,
  pagination: { limit: params.limit, offset: params.offset, total },
})
