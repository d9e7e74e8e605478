// Webhook endpoints (records), the outbox events they receive, one delivery per (event, endpoint) and
// every attempt. Event rows are written by infra/outbox.ts; their delivery_status here summarizes their deliveries.
import type { Scope } from '../../core/scope.ts'
import type { Db, Tx } from '../../infra/postgres.ts'
import { filterSpec, listRows, type FilterSpec, type Fragment, type RecordRow, type RecordTable } from '../../infra/records.ts'
import type { ListParams } from '../../core/list.ts'

export const ENDPOINTS: RecordTable = { name: 'webhook_endpoints', noun: 'webhook_endpoint', prefix: 'ep' }
export const FILTERS: FilterSpec = filterSpec({ in: { endpoint_ids: 'id' }, contains: { url: 'url' } })
export const EVENT_FILTERS: FilterSpec = filterSpec({ eq: { event_type: 'event_type', delivery_status: 'delivery_status', entity_type: 'entity_type', entity_id: 'entity_id' } })

export interface EndpointRow extends RecordRow {
  url: string
  description: string | null
  filter_types: string[]
  disabled: boolean
  /** Sealed (service.ts openSecret), or in clear in rows written before secrets were sealed. */
  secret: string
  previous_secret: string | null
  previous_secret_expires_at: Date | null
}

export type EventStatus = 'pending' | 'delivered' | 'failed' | 'skipped'

export interface EventRow {
  id: string
  tenant_id: string
  environment_id: string
  event_type: string
  entity_type: string | null
  entity_id: string | null
  payload: Record<string, unknown>
  delivery_status: EventStatus
  /** Attempts made, over every endpoint. */
  attempts: number
  next_attempt_at: Date
  last_error: string | null
  created_at: Date
  delivered_at: Date | null
  dispatched_at: Date | null
}

export interface DeliveryRow {
  event_id: string
  endpoint_id: string
  tenant_id: string
  environment_id: string
  delivery_status: 'pending' | 'delivered' | 'failed'
  attempts: number
  next_attempt_at: Date
  last_status_code: number | null
  last_error: string | null
  delivered_at: Date | null
  created_at: Date
  updated_at: Date
  url: string
}

/** A due delivery with what sending it needs: the event and the endpoint's state and secrets. */
export interface DueDelivery extends DeliveryRow {
  event_type: string
  payload: Record<string, unknown>
  endpoint_status: string
  disabled: boolean
  secret: string
  previous_secret: string | null
  previous_secret_expires_at: Date | null
}

export interface AttemptRow {
  id: string
  event_id: string
  endpoint_id: string
  url: string
  response_status_code: number | null
  response: string | null
  error: string | null
  duration_ms: number
  created_at: Date
}

/**
 * Matches up to `limit` undispatched events, oldest first, to the endpoints of their environment that
 * are enabled and subscribed to their type: one pending delivery each; an event no endpoint wants is skipped.
 */
export async function dispatch(tx: Tx, now: Date, limit: number): Promise<{ status: EventStatus }[]> {
  return tx<{ status: EventStatus }[]>`
    WITH batch AS (
      SELECT id, tenant_id, environment_id, event_type FROM webhook_events
      WHERE dispatched_at IS NULL ORDER BY created_at, id LIMIT ${limit} FOR UPDATE SKIP LOCKED
    ), matched AS (
      INSERT INTO webhook_deliveries (event_id, endpoint_id, tenant_id, environment_id, next_attempt_at, created_at, updated_at)
      SELECT b.id, ep.id, b.tenant_id, b.environment_id, ${now}, ${now}, ${now}
      FROM batch b JOIN webhook_endpoints ep ON ep.tenant_id = b.tenant_id AND ep.environment_id = b.environment_id
        AND ep.status = 'published' AND NOT ep.disabled AND (ep.filter_types = '[]' OR ep.filter_types ? b.event_type)
      ON CONFLICT DO NOTHING
      RETURNING event_id
    )
    UPDATE webhook_events e SET dispatched_at = ${now},
      delivery_status = CASE WHEN e.id IN (SELECT event_id FROM matched) THEN 'pending' ELSE 'skipped' END
    FROM batch WHERE e.id = batch.id
    RETURNING e.delivery_status AS status`
}

export interface DueQuery {
  now: Date
  /** false: first attempts (never tried since queued); true: retries whose backoff has passed. */
  retries: boolean
  excludedTenants: string[]
  /** Empty: every type. */
  eventTypes: string[]
  /** Endpoints not to send to again in this run. */
  skipEndpoints: string[]
  limit: number
}

/** Pending deliveries that are due, first attempts in event order, retries in the order they fell due. */
export async function dueDeliveries(db: Db, q: DueQuery): Promise<DueDelivery[]> {
  const attempts = q.retries ? db`d.attempts > 0` : db`d.attempts = 0`
  const types = q.eventTypes.length > 0 ? db`e.event_type = ANY(${q.eventTypes}::text[])` : db`true`
  const order = q.retries ? db`d.next_attempt_at, e.created_at, e.id` : db`e.created_at, e.id`
  return db<DueDelivery[]>`
    SELECT d.*, ep.url, e.event_type, e.payload, ep.status AS endpoint_status, ep.disabled, ep.secret, ep.previous_secret, ep.previous_secret_expires_at
    FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id JOIN webhook_endpoints ep ON ep.id = d.endpoint_id
    WHERE d.delivery_status = 'pending' AND ${attempts} AND d.next_attempt_at <= ${q.now}
      AND d.tenant_id <> ALL(${q.excludedTenants}::text[]) AND d.endpoint_id <> ALL(${q.skipEndpoints}::text[]) AND ${types}
    ORDER BY ${order} LIMIT ${q.limit}`
}

/** What became of one delivery; `attempt` is absent when nothing was sent (the endpoint is gone). */
export interface Settlement {
  status: DeliveryRow['delivery_status']
  attempts: number
  nextAttemptAt: Date
  statusCode: number | null
  error: string | null
  attempt?: Omit<AttemptRow, 'event_id' | 'endpoint_id' | 'url'>
}

/** Records an attempt and its outcome on the delivery and on the event's summary, in one transaction. */
export async function settle(tx: Tx, d: DeliveryRow, s: Settlement, now: Date): Promise<void> {
  // The event row first: deliveries of one event settled in parallel then summarize in turn, each seeing the other.
  await tx`SELECT id FROM webhook_events WHERE id = ${d.event_id} FOR UPDATE`
  if (s.attempt) {
    const a = s.attempt
    await tx`INSERT INTO webhook_attempts (id, event_id, endpoint_id, tenant_id, environment_id, url, response_status_code, response, error, duration_ms, created_at)
      VALUES (${a.id}, ${d.event_id}, ${d.endpoint_id}, ${d.tenant_id}, ${d.environment_id}, ${d.url}, ${a.response_status_code}, ${a.response}, ${a.error}, ${a.duration_ms}, ${a.created_at})`
  }
  await tx`UPDATE webhook_deliveries SET delivery_status = ${s.status}, attempts = ${s.attempts}, next_attempt_at = ${s.nextAttemptAt},
      last_status_code = ${s.statusCode}, last_error = ${s.error}, delivered_at = ${s.status === 'delivered' ? now : null}, updated_at = ${now}
    WHERE event_id = ${d.event_id} AND endpoint_id = ${d.endpoint_id}`
  await summarize(tx, d.event_id)
}

/** The event's delivery_status from its deliveries: pending while any is, else failed if any failed, else delivered. */
async function summarize(tx: Tx, eventId: string): Promise<void> {
  await tx`UPDATE webhook_events e SET
      delivery_status = CASE WHEN s.pending > 0 THEN 'pending' WHEN s.failed > 0 THEN 'failed' ELSE 'delivered' END,
      attempts = s.attempts,
      last_error = s.last_error,
      next_attempt_at = coalesce(s.next_attempt_at, e.next_attempt_at),
      delivered_at = CASE WHEN s.pending = 0 AND s.failed = 0 THEN s.delivered_at END
    FROM (
      SELECT count(*) FILTER (WHERE delivery_status = 'pending') AS pending,
        count(*) FILTER (WHERE delivery_status = 'failed') AS failed,
        min(next_attempt_at) FILTER (WHERE delivery_status = 'pending') AS next_attempt_at,
        max(delivered_at) AS delivered_at,
        (array_agg(last_error ORDER BY updated_at DESC) FILTER (WHERE last_error IS NOT NULL))[1] AS last_error,
        (SELECT count(*)::int FROM webhook_attempts WHERE event_id = ${eventId}) AS attempts
      FROM webhook_deliveries WHERE event_id = ${eventId}
    ) s
    WHERE e.id = ${eventId}`
}

/** Endpoints holding a secret not sealed (`v1:…`, infra/secrets.ts), any status: written before secrets were sealed. */
export const plaintextSecrets = (db: Db, limit: number): Promise<Pick<EndpointRow, 'id' | 'secret' | 'previous_secret'>[]> =>
  db<Pick<EndpointRow, 'id' | 'secret' | 'previous_secret'>[]>`SELECT id, secret, previous_secret FROM webhook_endpoints WHERE secret NOT LIKE 'v1:%' OR previous_secret NOT LIKE 'v1:%' LIMIT ${limit}`

/** Replaces a secret by its sealed form if it still holds `plain`; not a change of the record (no version, no audit). */
export async function replaceSecret(db: Db, id: string, column: 'secret' | 'previous_secret', plain: string, sealed: string): Promise<void> {
  await db`UPDATE webhook_endpoints SET ${db(column)} = ${sealed} WHERE id = ${id} AND ${db(column)} = ${plain}`
}

/**
 * Queues an event again: its failed and waiting deliveries become due now with their attempts reset;
 * an event no endpoint took is matched again to today's endpoints.
 */
export async function requeue(tx: Tx, event: EventRow, now: Date): Promise<void> {
  if (event.delivery_status === 'skipped') {
    await tx`UPDATE webhook_events SET dispatched_at = NULL, delivery_status = 'pending' WHERE id = ${event.id}`
    return
  }
  await tx`UPDATE webhook_deliveries SET delivery_status = 'pending', attempts = 0, next_attempt_at = ${now}, updated_at = ${now}
    WHERE event_id = ${event.id} AND delivery_status <> 'delivered'`
  await summarize(tx, event.id)
}

/** One event of the scope; `lock` holds its row until the transaction ends. */
export async function findEvent(db: Db, scope: Scope, id: string, lock = false): Promise<EventRow | undefined> {
  const [row] = await db<EventRow[]>`SELECT * FROM webhook_events WHERE id = ${id} AND tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}
    ${lock ? db`FOR UPDATE` : db``}`
  return row
}

export const listEvents = (db: Db, scope: Scope, params: Pick<ListParams, 'limit' | 'offset' | 'sort' | 'order'>, where: Fragment[]): Promise<{ rows: EventRow[]; total: number }> =>
  listRows<EventRow>(db, 'webhook_events', [db`tenant_id = ${scope.tenantId}`, db`environment_id = ${scope.environmentId}`, ...where], params)

export async function deliveriesOf(db: Db, scope: Scope, eventIds: string[]): Promise<DeliveryRow[]> {
  if (eventIds.length === 0) return []
  return db<DeliveryRow[]>`SELECT d.*, ep.url FROM webhook_deliveries d JOIN webhook_endpoints ep ON ep.id = d.endpoint_id
    WHERE d.event_id = ANY(${eventIds}::text[]) AND d.tenant_id = ${scope.tenantId} AND d.environment_id = ${scope.environmentId}
    ORDER BY d.created_at, d.endpoint_id`
}

export const attemptsOf = (db: Db, scope: Scope, eventId: string, params: Pick<ListParams, 'limit' | 'offset' | 'order'>): Promise<{ rows: AttemptRow[]; total: number }> =>
  listRows<AttemptRow>(db, 'webhook_attempts', [db`tenant_id = ${scope.tenantId}`, db`environment_id = ${scope.environmentId}`, db`event_id = ${eventId}`], { ...params, sort: 'created_at' }, 'id, event_id, endpoint_id, url, response_status_code, response, error, duration_ms, created_at')

/** The outbox events that announce a wallet's or a feature's balance alert changing state. */
const ALERT_EVENT_TYPES = ['wallet.credit_balance.dropped', 'wallet.credit_balance.recovered', 'wallet.ongoing_balance.dropped', 'wallet.ongoing_balance.recovered', 'feature.wallet_balance.alert']

export interface AlertEventFilter {
  entity_type?: 'wallet' | 'feature'
  entity_id?: string
  customer_id?: string
  alert_type?: string
  alert_status?: string
  start_time?: string
  end_time?: string
}

/** Alert events of the scope, by what their payload says (a feature's alert names its wallet as the event's entity). */
export function alertEvents(db: Db, scope: Scope, params: Pick<ListParams, 'limit' | 'offset' | 'sort' | 'order'>, f: AlertEventFilter): Promise<{ rows: EventRow[]; total: number }> {
  const where: Fragment[] = [db`event_type = ANY(${ALERT_EVENT_TYPES}::text[])`]
  if (f.entity_type === 'feature') where.push(db`event_type = 'feature.wallet_balance.alert'`)
  if (f.entity_type === 'wallet') where.push(db`event_type LIKE 'wallet.%'`)
  if (f.entity_id !== undefined) where.push(db`(CASE WHEN event_type = 'feature.wallet_balance.alert' THEN payload->'feature'->>'id' ELSE entity_id END) = ${f.entity_id}`)
  if (f.customer_id !== undefined) where.push(db`payload->'customer'->>'id' = ${f.customer_id}`)
  if (f.alert_type !== undefined) where.push(db`payload->'alert'->>'alert_type' = ${f.alert_type}`)
  if (f.alert_status !== undefined) where.push(db`payload->'alert'->>'state' = ${f.alert_status}`)
  if (f.start_time !== undefined) where.push(db`created_at >= ${new Date(f.start_time)}`)
  if (f.end_time !== undefined) where.push(db`created_at < ${new Date(f.end_time)}`)
  return listEvents(db, scope, params, where)
}
