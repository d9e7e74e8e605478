// Usage events: the shape accepted at intake and carried to storage, and the rules that normalise
// one (spec rule 13: names trimmed). Pure: the clock, the scope and the id generator come from the caller.
import type { Scope } from './scope.ts'

/** One event as a client sends it (already type-checked by the intake schema). */
export interface EventInput {
  event_name: string
  external_customer_id: string
  event_id?: string
  customer_id?: string
  timestamp?: string
  source?: string
  properties?: Record<string, unknown>
}

/** An accepted event: what Kafka carries and what the batch writer stores. */
export interface UsageEvent {
  id: string
  tenantId: string
  environmentId: string
  eventName: string
  externalCustomerId: string
  customerId: string
  source: string
  timestamp: Date
  receivedAt: Date
  properties: Record<string, unknown>
}

export type FieldErrors = Record<string, string>
export type Normalized = { ok: true; event: UsageEvent } | { ok: false; errors: FieldErrors }

export const MAX_ID_LENGTH = 255
// DateTime64(3) holds any instant from 1900; events before the Unix epoch are almost surely a unit mistake.
const EARLIEST_MS = 0

export interface NormalizeOptions {
  receivedAt: Date
  maxFutureMs: number
  newId: () => string
}

function trimmedRequired(value: string, field: string, errors: FieldErrors): string {
  const v = value.trim()
  if (v === '') errors[field] = 'must not be blank'
  else if (v.length > MAX_ID_LENGTH) errors[field] = `must be at most ${MAX_ID_LENGTH} characters`
  return v
}

/** Trims names, checks what a schema cannot (blank after trimming, time bounds) and stamps scope and id. */
export function normalizeEvent(input: EventInput, scope: Scope, opts: NormalizeOptions): Normalized {
  const errors: FieldErrors = {}
  const eventName = trimmedRequired(input.event_name, 'event_name', errors)
  const externalCustomerId = trimmedRequired(input.external_customer_id, 'external_customer_id', errors)
  const id = input.event_id === undefined ? opts.newId() : trimmedRequired(input.event_id, 'event_id', errors)

  let timestamp = opts.receivedAt
  if (input.timestamp !== undefined) {
    timestamp = new Date(input.timestamp)
    const t = timestamp.getTime()
    if (Number.isNaN(t)) errors.timestamp = 'must be an RFC 3339 date-time'
    else if (t < EARLIEST_MS) errors.timestamp = 'must not be before 1970-01-01T00:00:00Z'
    else if (t > opts.receivedAt.getTime() + opts.maxFutureMs) {
      errors.timestamp = `must not be more than ${opts.maxFutureMs / 1000} seconds in the future`
    }
  }
  if (Object.keys(errors).length > 0) return { ok: false, errors }
  return {
    ok: true,
    event: {
      id,
      tenantId: scope.tenantId,
      environmentId: scope.environmentId,
      eventName,
      externalCustomerId,
      customerId: input.customer_id?.trim() ?? '',
      source: input.source?.trim() ?? '',
      timestamp,
      receivedAt: opts.receivedAt,
      properties: input.properties ?? {},
    },
  }
}

/** The wire form of an accepted event (Kafka message value), ISO instants with milliseconds. */
export function encodeEvent(e: UsageEvent): string {
  return JSON.stringify({
    id: e.id,
    tenant_id: e.tenantId,
    environment_id: e.environmentId,
    event_name: e.eventName,
    external_customer_id: e.externalCustomerId,
    customer_id: e.customerId,
    source: e.source,
    timestamp: e.timestamp.toISOString(),
    received_at: e.receivedAt.toISOString(),
    properties: e.properties,
  })
}

const isText = (v: unknown): v is string => typeof v === 'string'
// DateTime64(3) ends in 2299: a record beyond it (a foreign producer) would fail every insert of its batch.
const LATEST_MS = Date.UTC(2200, 0, 1)
const isInstant = (v: unknown): v is string => {
  if (!isText(v)) return false
  const t = Date.parse(v)
  return t >= EARLIEST_MS && t < LATEST_MS
}

export type Decoded = { ok: true; event: UsageEvent } | { ok: false; reason: string; raw: unknown }

function fromWire(raw: unknown): Decoded {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return { ok: false, reason: 'not a JSON object', raw }
  const r = raw as Record<string, unknown>
  for (const f of ['id', 'tenant_id', 'environment_id', 'event_name', 'external_customer_id'] as const) {
    if (!isText(r[f]) || r[f] === '') return { ok: false, reason: `${f} is missing`, raw }
  }
  for (const f of ['timestamp', 'received_at'] as const) if (!isInstant(r[f])) return { ok: false, reason: `${f} is not a date-time between 1970 and 2200`, raw }
  const props = r.properties ?? {}
  if (typeof props !== 'object' || props === null || Array.isArray(props)) return { ok: false, reason: 'properties is not an object', raw }
  return {
    ok: true,
    event: {
      id: r.id as string,
      tenantId: r.tenant_id as string,
      environmentId: r.environment_id as string,
      eventName: r.event_name as string,
      externalCustomerId: r.external_customer_id as string,
      customerId: isText(r.customer_id) ? r.customer_id : '',
      source: isText(r.source) ? r.source : '',
      timestamp: new Date(r.timestamp as string),
      receivedAt: new Date(r.received_at as string),
      properties: props as Record<string, unknown>,
    },
  }
}

/**
 * Reads a record back: one wire event or an array of them. Each element that is not an event (a foreign
 * producer, corruption) comes back with the reason and what it was.
 */
export function decodeRecord(text: string): Decoded[] {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return [{ ok: false, reason: 'not JSON', raw: text }]
  }
  return (Array.isArray(parsed) ? parsed : [parsed]).map(fromWire)
}
