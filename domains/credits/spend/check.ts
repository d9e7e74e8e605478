// POST /v1/customers/{id}/entitlements/check: may the customer use `quantity` more of a feature now?
// The verdict is core/credits/spend.ts's; this gathers what it counts. SDKs call it before every request, so
// each input comes from a read cache (READ_CACHE_MS, never across a write of this process), except under
// `reserve`, where the reservations are read again under a lock of the customer's feature so that concurrent
// reserving checks cannot together pass the limit.
//
// In flight: in direct mode the route first waits for the events acknowledged before it to be stored (the
// route's readsUsage), and a cached usage read is reused only while the event log has acknowledged nothing
// since it was read, so stored usage includes every event accepted before the check. With Kafka, events
// still in the topic are not seen: a check may pass by at most the usage of the events not yet stored
// (docs/credits.md states the bound); reservations are exact in every mode.
import { checkEntitlement, type CheckReason } from '../../../core/credits/spend.ts'
import { notFound, validationError } from '../../../core/errors.ts'
import { D, parseDecimal, type Decimal } from '../../../core/money.ts'
import type { Actor } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import { eventLogOf } from '../../../infra/event-log.ts'
import { ReadCache } from '../../../infra/read-cache.ts'
import { insertRecord } from '../../../infra/records.ts'
import { features } from '../../catalog/features/service.ts'
import { auditOf, everyItem, referenced, transaction } from '../../records/service.ts'
import { customerEntitlements } from '../../subscriptions/entitlements.ts'
import { requireSubscription, type SubscriptionRow } from '../../subscriptions/read.ts'
import { limitedSpendings } from './spending-limit.ts'
import * as store from './store.ts'
import { storedUsageOf } from './usage-cache.ts'

export const MAX_RESERVATION_SECONDS = 86_400
const DEFAULT_RESERVATION_SECONDS = 300

export interface CheckRequest {
  feature_id?: string
  feature_lookup_key?: string
  quantity: number | string
  reserve?: boolean
  reservation_expires_in_seconds?: number
}

export interface CheckResult {
  customer_id: string
  feature_id: string
  allowed: boolean
  /** Left under the limit after what is counted (and after this request's reservation, if it made one); null when unlimited. */
  remaining: Decimal | null
  limit: number | null
  reason: CheckReason | null
  usage: { stored: Decimal; reserved: Decimal } | null
  reservation: { id: string; quantity: Decimal; expires_at: Date } | null
}

const caches = new WeakMap<Deps, Map<string, ReadCache<unknown>>>()
function cached<V>(deps: Deps, name: string, key: unknown[], load: () => Promise<V>): Promise<V> {
  let mine = caches.get(deps)
  if (!mine) caches.set(deps, (mine = new Map()))
  let cache = mine.get(name) as ReadCache<V> | undefined
  if (!cache) mine.set(name, (cache = new ReadCache<V>()) as ReadCache<unknown>)
  return cache.read(JSON.stringify(key), deps.clock.now(), load)
}

/** Reservations written by this process: a cached sum older than the last one is read again. */
let reservationsWritten = 0

async function featureIdOf(deps: Deps, actor: Actor, input: CheckRequest): Promise<string> {
  if (input.feature_id) {
    // An id of no feature of this environment (a typo, another tenant's) is a 404 naming the field, not "not entitled".
    const id = input.feature_id
    return cached(deps, 'feature-id', [actor.tenantId, actor.environmentId, id], async () => (await referenced('feature_id', features.get(deps, actor, id))).id)
  }
  if (!input.feature_lookup_key) throw validationError('feature_id', 'give feature_id or feature_lookup_key')
  const key = input.feature_lookup_key
  return cached(deps, 'feature', [actor.tenantId, actor.environmentId, key], async () => {
    const [found] = await everyItem((params) => features.list(deps, actor, { params, filters: { lookup_key: key } }))
    if (!found) throw notFound('feature with lookup_key', key)
    return found.id
  })
}

function quantityOf(value: number | string): Decimal {
  let q: Decimal
  try {
    q = parseDecimal(String(value))
  } catch {
    throw validationError('quantity', 'must be a decimal number, e.g. 2000 or "17.5"')
  }
  if (q.lt(0)) throw validationError('quantity', 'must not be negative')
  return q
}

/** Usage of the meter in the subscription's current period, read after every event the event log has acknowledged so far. */
function storedUsage(deps: Deps, actor: Actor, meterId: string, customerId: string, sub: SubscriptionRow): Promise<Decimal> {
  const acknowledged = eventLogOf(deps)?.syncs ?? 0
  return storedUsageOf(deps, actor, meterId, { customerId, start: sub.current_period_start, end: sub.current_period_end }, acknowledged)
}

/** Reserved quantities of the feature for all its customers at once: one read a second whatever the customers checked. */
const reservedOf = async (deps: Deps, actor: Actor, customerId: string, featureId: string): Promise<Decimal> =>
  (
    await cached(deps, 'reserved', [actor.tenantId, actor.environmentId, featureId, reservationsWritten], () =>
      store.reservedByCustomer(deps.sql, actor, featureId, deps.clock.now()),
    )
  ).get(customerId) ?? new D(0)

export async function checkEntitlementOf(deps: Deps, actor: Actor, customerId: string, input: CheckRequest): Promise<CheckResult> {
  const quantity = quantityOf(input.quantity)
  const seconds = input.reservation_expires_in_seconds ?? DEFAULT_RESERVATION_SECONDS
  if (input.reserve && !quantity.gt(0)) throw validationError('quantity', 'must be greater than 0 to reserve')
  const featureId = await featureIdOf(deps, actor, input)
  const { features: granted } = await customerEntitlements(deps, actor, { id: customerId }, { feature_ids: [featureId] })
  const found = granted.find((f) => f.feature.id === featureId)
  const result = (over: Partial<CheckResult>): CheckResult => ({ customer_id: customerId, feature_id: featureId, allowed: false, remaining: null, limit: null, reason: null, usage: null, reservation: null, ...over })
  if (!found) return result(checkEntitlement({ entitlement: null, quantity, stored: new D(0), in_flight: new D(0), reserved: new D(0), spending: null }))

  const { feature, entitlement, sources } = found
  const subs = await Promise.all(
    [...new Set(sources.map((s) => s.subscription_id))].map((id) => cached(deps, 'subscription', [actor.tenantId, actor.environmentId, id], () => requireSubscription(deps.sql, actor, id))),
  )
  const counted = feature.type === 'metered' && feature.meter_id !== null && entitlement.usage_limit !== null
  const stored = counted ? await storedUsage(deps, actor, feature.meter_id!, customerId, subs[0]) : new D(0)
  const spendings = await limitedSpendings(deps, actor, subs)
  const spending = spendings.find((s) => s.accrued.plus(s.held).gte(s.limit)) ?? spendings[0] ?? null
  const judge = (reserved: Decimal) =>
    checkEntitlement({
      entitlement: { feature_type: feature.type, is_enabled: entitlement.is_enabled, usage_limit: entitlement.usage_limit, is_soft_limit: entitlement.is_soft_limit },
      quantity,
      stored,
      in_flight: new D(0),
      reserved,
      spending,
    })
  if (!input.reserve) {
    const reserved = counted ? await reservedOf(deps, actor, customerId, featureId) : new D(0)
    return result({ ...judge(reserved), usage: counted ? { stored, reserved } : null })
  }
  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    await store.lockFeatureOf(tx, actor, customerId, featureId)
    const reserved = await store.reservedQuantity(tx, actor, customerId, featureId, audit.at)
    const verdict = judge(reserved)
    if (!verdict.allowed) return result({ ...verdict, usage: counted ? { stored, reserved } : null })
    const row = await insertRecord<store.ReservationRow>(tx, store.RESERVATIONS, actor, audit, {
      customer_id: customerId,
      feature_id: featureId,
      quantity,
      expires_at: new Date(audit.at.getTime() + seconds * 1000),
    })
    reservationsWritten++
    const remaining = verdict.remaining === null ? null : D.max(verdict.remaining.minus(quantity), 0)
    return result({ ...verdict, remaining, usage: counted ? { stored, reserved } : null, reservation: { id: row.id, quantity, expires_at: row.expires_at } })
  })
}

/** POST /v1/entitlements/reservations/{id}/release: frees a reservation early (its usage was sent, or the work failed). Twice is answered the same. */
export async function releaseReservationOf(deps: Deps, actor: Actor, id: string) {
  const released = await transaction(deps, (tx) => store.releaseReservation(tx, actor, id, deps.clock.now()))
  if (released) reservationsWritten++
  const row = released ?? (await store.findReservation(deps.sql, actor, id))
  if (!row) throw notFound('entitlement reservation', id)
  return { id: row.id, customer_id: row.customer_id, feature_id: row.feature_id, quantity: new D(row.quantity), status: row.reservation_status, expires_at: row.expires_at }
}
