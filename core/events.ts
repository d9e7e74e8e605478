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
  /**
   * The request that brought it in, as its ingest process numbered it (random, per request): a stored copy with the
   * same receipt is the same copy read again (after a crash or a rebalance, or a producer's retry), not a client's resend.
   */
  receipt?: number
}

type FieldErrors = Record<string, string>
export type Normalized = { ok: true; event: UsageEvent } | { ok: false; errors: FieldErrors }

export const MAX_ID_LENGTH = 255
// DateTime64(3) holds any instant from 1900; events before the Unix epoch are almost surely a unit mistake.
const EARLIEST_MS = 0

export interface NormalizeOptions {
  receivedAt: Date
  /** The request's receipt (UsageEvent.receipt). */
  receipt?: number
  maxFutureMs: number
  newId: () => string
  /**
   * external_customer_id → the time (ms) of the test clock the customer lives on: its events default to that
   * time and may be stamped up to it, not beyond, whatever the wall clock says. Absent: no customer on a clock.
   */
  clockTimes?: ReadonlyMap<string, number>
}

function trimmedRequired(value: string, field: string, errors: FieldErrors): string {
  const v = value.trim()
  if (v === '') errors[field] = 'must not be blank'
  else if (v.length > MAX_ID_LENGTH) errors[field] = `must be at most ${MAX_ID_LENGTH} characters`
  return v
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

/** Two decimal digits at i as a number; -1 when either is not a digit. */
function twoDigits(s: string, i: number): number {
  const a = s.charCodeAt(i) - 48
  const b = s.charCodeAt(i + 1) - 48
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : -1
}

/**
 * Milliseconds of `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` (upper-case T and Z, a real calendar day, no leap
 * second), the form SDKs send; NaN for anything else. Read by hand: Date.parse costs several times as much per event.
 */
export function simpleInstant(s: string): number {
  const n = s.length
  if (n < 20 || s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45 || s.charCodeAt(10) !== 84 || s.charCodeAt(13) !== 58 || s.charCodeAt(16) !== 58) return NaN
  const c = twoDigits(s, 0)
  const yy = twoDigits(s, 2)
  const mo = twoDigits(s, 5)
  const d = twoDigits(s, 8)
  const h = twoDigits(s, 11)
  const mi = twoDigits(s, 14)
  const sec = twoDigits(s, 17)
  if (c < 0 || yy < 0 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59) return NaN
  const y = c * 100 + yy
  // Two-digit years would make Date.UTC read 19yy; none of them is a valid event time anyway.
  if (y < 1000 || d > (mo === 2 && y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0) ? 29 : DAYS_IN_MONTH[mo - 1])) return NaN
  let i = 19
  let ms = 0
  if (s.charCodeAt(i) === 46) {
    // Like Date.parse: the first three fraction digits count, further ones are cut off.
    let k = 0
    for (i++; i < n; i++, k++) {
      const digit = s.charCodeAt(i) - 48
      if (digit < 0 || digit > 9) break
      if (k < 3) ms = ms * 10 + digit
    }
    if (k === 0) return NaN
    for (; k < 3; k++) ms *= 10
  }
  const zone = s.charCodeAt(i)
  let offset = 0
  if (zone === 90 && i + 1 === n) offset = 0
  else if ((zone === 43 || zone === 45) && i + 6 === n && s.charCodeAt(i + 3) === 58) {
    const oh = twoDigits(s, i + 1)
    const om = twoDigits(s, i + 4)
    if (oh < 0 || oh > 23 || om < 0 || om > 59) return NaN
    offset = (zone === 43 ? 1 : -1) * (oh * 60 + om) * 60_000
  } else return NaN
  return Date.UTC(y, mo - 1, d, h, mi, sec, ms) - offset
}

/** Date.parse, with the common form read by hand. */
export const parseInstant = (s: string): number => {
  const t = simpleInstant(s)
  return Number.isNaN(t) ? Date.parse(s) : t
}

const pad2 = (n: number): string => (n < 10 ? `0${n}` : `${n}`)
const pad3 = (n: number): string => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : `${n}`)

/**
 * The text of Date.prototype.toISOString for an instant, computed from the day count (H. Hinnant's
 * civil_from_days); toISOString costs several times as much, and every event carries two instants.
 */
export function isoInstant(ms: number): string {
  const days = Math.floor(ms / 86_400_000)
  let rest = ms - days * 86_400_000
  const z = days + 719_468
  const era = Math.floor(z / 146_097)
  const doe = z - era * 146_097
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365)
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100))
  const mp = Math.floor((5 * doy + 2) / 153)
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1
  const month = mp < 10 ? mp + 3 : mp - 9
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0)
  // Other years are written with a sign or fewer digits: leave those rare cases to Date.
  if (year < 1000 || year > 9999 || Number.isNaN(ms)) return new Date(ms).toISOString()
  const h = Math.floor(rest / 3_600_000)
  rest -= h * 3_600_000
  const mi = Math.floor(rest / 60_000)
  rest -= mi * 60_000
  const sec = Math.floor(rest / 1000)
  return `${year}-${pad2(month)}-${pad2(day)}T${pad2(h)}:${pad2(mi)}:${pad2(sec)}.${pad3(rest - sec * 1000)}Z`
}

/** Trims names, checks what a schema cannot (blank after trimming, time bounds) and stamps scope and id. */
export function normalizeEvent(input: EventInput, scope: Scope, opts: NormalizeOptions): Normalized {
  const errors: FieldErrors = {}
  const eventName = trimmedRequired(input.event_name, 'event_name', errors)
  const externalCustomerId = trimmedRequired(input.external_customer_id, 'external_customer_id', errors)
  const id = input.event_id === undefined ? opts.newId() : trimmedRequired(input.event_id, 'event_id', errors)

  const clockAt = opts.clockTimes?.get(externalCustomerId)
  let timestamp = clockAt === undefined ? opts.receivedAt : new Date(clockAt)
  if (input.timestamp !== undefined) {
    const t = parseInstant(input.timestamp)
    timestamp = new Date(t)
    if (Number.isNaN(t)) errors.timestamp = 'must be an RFC 3339 date-time'
    else if (t < EARLIEST_MS) errors.timestamp = 'must not be before 1970-01-01T00:00:00Z'
    else if (clockAt !== undefined) {
      if (t > clockAt) errors.timestamp = `must not be after ${isoInstant(clockAt)}, the time of the customer's test clock`
    } else if (t > opts.receivedAt.getTime() + opts.maxFutureMs) {
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
      receipt: opts.receipt,
    },
  }
}

/**
 * The text of an instant, kept for the next call: the events of one request share their reception instant, and often
 * their timestamp (an SDK's batch), so consecutive calls mostly ask for the same one.
 */
function isoCache(): (ms: number) => string {
  let last = Number.NaN
  let iso = ''
  return (ms) => {
    if (ms !== last) {
      last = ms
      iso = isoInstant(ms)
    }
    return iso
  }
}
const receivedIso = isoCache()
const timestampIso = isoCache()

/** The object whose JSON text is an event's wire form; a JSON array of them is a Kafka record's value. */
export const wireEvent = (e: UsageEvent): object => ({
  id: e.id,
  tenant_id: e.tenantId,
  environment_id: e.environmentId,
  event_name: e.eventName,
  external_customer_id: e.externalCustomerId,
  customer_id: e.customerId,
  source: e.source,
  timestamp: timestampIso(e.timestamp.getTime()),
  received_at: receivedIso(e.receivedAt.getTime()),
  properties: e.properties,
  receipt: e.receipt,
})

/** The wire form of an accepted event (Kafka message value), ISO instants with milliseconds. */
export const encodeEvent = (e: UsageEvent): string => JSON.stringify(wireEvent(e))

const isText = (v: unknown): v is string => typeof v === 'string'
// DateTime64(3) ends in 2299: a record beyond it (a foreign producer) would fail every insert of its batch.
const LATEST_MS = Date.UTC(2200, 0, 1)
/** The instant's milliseconds, or NaN when it is not a date-time between 1970 and 2200. */
const instantMs = (v: unknown): number => {
  const t = isText(v) ? parseInstant(v) : NaN
  return t >= EARLIEST_MS && t < LATEST_MS ? t : NaN
}
/** instantMs, kept for the next call with the same text: the events of one request mostly share their instants. */
function instantCache(): (v: unknown) => number {
  let last: string | undefined
  let ms = Number.NaN
  return (v) => {
    if (v !== last) {
      ms = instantMs(v)
      last = isText(v) ? v : undefined
    }
    return ms
  }
}
const timestampMs = instantCache()
const receivedMs = instantCache()
/** A wire event's receipt, when it has one (records written before receipts, or by another producer, have none). */
export const receiptOf = (v: unknown): number | undefined => (Number.isSafeInteger(v) && (v as number) > 0 ? (v as number) : undefined)
const REQUIRED_TEXTS = ['id', 'tenant_id', 'environment_id', 'event_name', 'external_customer_id'] as const

export type Decoded = { ok: true; event: UsageEvent } | { ok: false; reason: string; raw: unknown }

function fromWire(raw: unknown): Decoded {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return { ok: false, reason: 'not a JSON object', raw }
  const r = raw as Record<string, unknown>
  for (const f of REQUIRED_TEXTS) {
    if (!isText(r[f]) || r[f] === '') return { ok: false, reason: `${f} is missing`, raw }
  }
  const timestamp = timestampMs(r.timestamp)
  const receivedAt = receivedMs(r.received_at)
  const badInstant = Number.isNaN(timestamp) ? 'timestamp' : Number.isNaN(receivedAt) ? 'received_at' : undefined
  if (badInstant) return { ok: false, reason: `${badInstant} is not a date-time between 1970 and 2200`, raw }
  const props = r.properties ?? {}
  if (typeof props !== 'object' || props === null || Array.isArray(props)) return { ok: false, reason: 'properties is not an object', raw }
  const p = lastDecoded
  const event: UsageEvent = {
    id: r.id as string,
    tenantId: same(r.tenant_id as string, p?.tenantId),
    environmentId: same(r.environment_id as string, p?.environmentId),
    eventName: same(r.event_name as string, p?.eventName),
    externalCustomerId: same(r.external_customer_id as string, p?.externalCustomerId),
    customerId: isText(r.customer_id) ? same(r.customer_id, p?.customerId) : '',
    source: isText(r.source) ? same(r.source, p?.source) : '',
    timestamp: p?.timestamp.getTime() === timestamp ? p.timestamp : new Date(timestamp),
    receivedAt: p?.receivedAt.getTime() === receivedAt ? p.receivedAt : new Date(receivedAt),
    properties: props as Record<string, unknown>,
  }
  const receipt = receiptOf(r.receipt)
  if (receipt !== undefined) event.receipt = receipt
  lastDecoded = event
  return { ok: true, event }
}

// Consecutive records mostly share their scope, name, customer and instants (the events of one request):
// an event takes the previous one's strings and dates when equal, so a batch held until its insert keeps one
// copy of each, not one per event (their garbage collection was a quarter of the consumer's time). Dates
// are shared as normalizeEvent already shares a request's reception instant.
let lastDecoded: UsageEvent | undefined
const same = (value: string, previous: string | undefined): string => (value === previous ? previous : value)

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
