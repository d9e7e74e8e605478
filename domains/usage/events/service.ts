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

function decodeCursor(cursor: string): { timestamp: Date; id: string } {
  try {
    const [t, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, string]
    const timestamp = new Date(t)
    if (typeof id !== 'string' || Number.isNaN(timestamp.getTime())) throw new Error('bad cursor')
    return { timestamp, id }
  } catch {
    throw validationError('cursor', 'is not a cursor returned by this list')
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
    q.limit,
  )
  const last = rows.length === q.limit ? rows[rows.length - 1] : undefined
  return {
    items: rows.map((r) => view(scope, r)),
    pagination: { limit: q.limit, offset: 0, total },
    has_more: last !== undefined,
    next_cursor: last ? encodeCursor(last) : null,
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
