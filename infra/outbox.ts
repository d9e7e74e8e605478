// Outbound events are recorded in the same transaction as the change they announce, so an event
// exists exactly when its change committed. Delivery (signed, retried) reads this table later.
import { newId } from '../core/ids.ts'
import type { Scope } from '../core/scope.ts'
import type { Db } from './postgres.ts'


export interface OutboundEvent {
  eventType: string
  entityType?: string
  entityId?: string
  payload: Record<string, unknown>
}

export async function recordEvent(db: Db, scope: Scope, event: OutboundEvent): Promise<string> {
  const [id] = await recordEvents(db, scope, [event])
  return id
}

/** Several events of one scope in one statement (a billing run announces its invoices page by page). */
export async function recordEvents(db: Db, scope: Scope, events: OutboundEvent[]): Promise<string[]> {
  if (events.length === 0) return []
  const rows = events.map((event) => ({
    id: newId('evt'),
    tenant_id: scope.tenantId,
    environment_id: scope.environmentId,
    event_type: event.eventType,
    entity_type: event.entityType ?? null,
    entity_id: event.entityId ?? null,
    payload: { event_type: event.eventType, ...event.payload },
  }))
  // One JSON parameter rather than seven per event: binding thousands of parameters is what costs.
  await db`INSERT INTO webhook_events (id, tenant_id, environment_id, event_type, entity_type, entity_id, payload)
    SELECT id, tenant_id, environment_id, event_type, entity_type, entity_id, payload
    FROM jsonb_populate_recordset(NULL::webhook_events, ${db.json(rows as never)})`
  return rows.map((r) => r.id)
}
