// List conventions in one place: limit (default 50, max 1000), offset, sort, order, status and a
// metadata filter; a page is {items, pagination: {limit, offset, total}}. The HTTP side (query schema,
// parsing) is http/list.ts.

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

export const page = <T>(items: T[], total: number, params: Pick<ListParams, 'limit' | 'offset'>): Page<T> => ({
  items,
  pagination: { limit: params.limit, offset: params.offset, total },
})

/** A list request as a service takes it: the paging and the resource's own filters. */
export interface ListRequest {
  params: ListParams
  filters: Record<string, unknown>
}
