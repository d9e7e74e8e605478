// Raw events as clients sent them: keyset-paged lists and, per id, whether it was stored, dropped as a
// duplicate, or rejected and why.
import { notFound, validationError } from '../../../core/errors.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import { fromChDateTime } from '../../../infra/ch-literals.ts'
import type { StoredEventRow } from '../../../infra/stored-events.ts'
import * as store from './store.ts'

export interface EventView {
  id: string
  event_name: string
  external_customer_id: string
  customer_id: string
  source: string
  timestamp: string
  received_at: string
  properties: Record<string, unknown>
  environment_id: string
}

const iso = (ch: string): string => fromChDateTime(ch).toISOString()

const view = (scope: Scope, r: StoredEventRow): EventView => ({
  id: r.id,
  event_name: r.event_name,
  external_customer_id: r.external_customer_id,
  customer_id: r.customer_id,
  source: r.source,
  timestamp: iso(r.timestamp),
  received_at: iso(r.received_at),
  properties: JSON.parse(r.properties) as Record<string, unknown>,
  environment_id: scope.environmentId,
})

export interface ListEventsQuery {
  external_customer_id?: string
  event_name?: string
  source?: string
  start_time?: string
  end_time?: string
  limit: number
  cursor?: string
}

const encodeCursor = (r: StoredEventRow): string => Buffer.from(JSON.stringify([iso(r.timestamp), r.id])).toString('base64url')

function decodeCursor(cursor: string, field = 'cursor'): { timestamp: Date; id: string } {
  try {
    const [t, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, string]
    const timestamp = new Date(t)
    if (typeof id !== 'string' || Number.isNaN(timestamp.getTime())) throw new Error('bad cursor')
    return { timestamp, id }
  } catch {
    throw validationError(field, 'is not a cursor returned by this list')
  }
}

export async function listEvents(deps: Deps, scope: Scope, q: ListEventsQuery) {
  const { rows, total } = await store.listEvents(
    deps.ch,
    scope,
    {
      externalCustomerId: q.external_customer_id?.trim(),
      eventName: q.event_name?.trim(),
      source: q.source,
      start: q.start_time ? new Date(q.start_time) : undefined,
      end: q.end_time ? new Date(q.end_time) : undefined,
      before: q.cursor ? decodeCursor(q.cursor) : undefined,
    },
    { limit: q.limit },
  )
  const last = rows.length === q.limit ? rows[rows.length - 1] : undefined
  return {
    items: rows.map((r) => view(scope, r)),
    pagination: { limit: q.limit, offset: 0, total },
    has_more: last !== undefined,
    next_cursor: last ? encodeCursor(last) : null,
  }
}

/** Flexprice's POST /v1/events/query: filters in the body, pages by offset or by iter_last_key (a cursor). */
export interface EventQuery {
  external_customer_id?: string
  event_name?: string
  event_id?: string
  source?: string
  start_time?: string
  end_time?: string
  property_filters?: Record<string, string[]>
  page_size: number
  offset?: number
  iter_last_key?: string
  order?: 'asc' | 'desc'
}

export async function queryEvents(deps: Deps, scope: Scope, q: EventQuery) {
  const ascending = q.order === 'asc'
  const offset = q.iter_last_key ? 0 : (q.offset ?? 0)
  const { rows, total } = await store.listEvents(
    deps.ch,
    scope,
    {
      externalCustomerId: q.external_customer_id?.trim(),
      eventName: q.event_name?.trim(),
      eventId: q.event_id?.trim(),
      source: q.source,
      start: q.start_time ? new Date(q.start_time) : undefined,
      end: q.end_time ? new Date(q.end_time) : undefined,
      properties: q.property_filters,
      before: q.iter_last_key ? decodeCursor(q.iter_last_key, 'iter_last_key') : undefined,
    },
    { limit: q.page_size, offset, ascending },
  )
  const hasMore = rows.length === q.page_size && (q.iter_last_key ? true : offset + rows.length < total)
  return {
    events: rows.map((r) => view(scope, r)),
    has_more: hasMore,
    iter_first_key: rows.length ? encodeCursor(rows[0]) : '',
    iter_last_key: rows.length ? encodeCursor(rows[rows.length - 1]) : '',
    offset,
    total_count: total,
  }
}

export async function lookupEvent(deps: Deps, scope: Scope, eventId: string) {
  const { stored, drops } = await store.lookupEvent(deps.ch, scope, eventId)
  const duplicates = drops.filter((d) => d.kind === 'duplicate')
  if (stored) {
    return {
      event_id: eventId,
      status: duplicates.length > 0 ? 'duplicate' : 'stored',
      event: view(scope, stored),
      duplicates: duplicates.map((d) => ({ timestamp: iso(d.timestamp), received_at: iso(d.received_at) })),
    }
  }
  const rejected = drops.find((d) => d.kind === 'rejected')
  if (rejected) return { event_id: eventId, status: 'rejected', reason: rejected.reason, received_at: iso(rejected.received_at) }
  throw notFound('event', eventId)
}
