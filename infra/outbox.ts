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
  const id = newId('evt')
  const payload = { event_type: event.eventType, ...event.payload }
  await db`INSERT INTO webhook_events (id, tenant_id, environment_id, event_type, entity_type, entity_id, payload)
    VALUES (${id}, ${scope.tenantId}, ${scope.environmentId}, ${event.eventType}, ${event.entityType ?? null},
            ${event.entityId ?? null}, ${db.json(payload as never)})`
  return id
}
