// The SQL of spend control: reservations made by the entitlement check, and spending limits per subscription.
import { D, type Decimal } from '../../../core/money.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Db } from '../../../infra/postgres.ts'
import type { RecordTable } from '../../../infra/records.ts'

export const RESERVATIONS: RecordTable = { name: 'entitlement_reservations', noun: 'entitlement_reservation', prefix: 'resv', decimals: ['quantity'] }

export interface ReservationRow {
  id: string
  customer_id: string
  feature_id: string
  quantity: Decimal
  reservation_status: 'active' | 'released'
  expires_at: Date
  created_at: Date
}

/** Serializes the reservations of one customer's feature across connections and processes, until the transaction ends. */
export async function lockFeatureOf(db: Db, scope: Scope, customerId: string, featureId: string): Promise<void> {
  await db`SELECT pg_advisory_xact_lock(hashtextextended(${`${scope.tenantId}:${scope.environmentId}:${customerId}:${featureId}`}, 0))`
}

/** What active reservations of the customer's feature hold at `at`. */
export async function reservedQuantity(db: Db, scope: Scope, customerId: string, featureId: string, at: Date): Promise<Decimal> {
  const [row] = await db<{ reserved: string | null }[]>`SELECT sum(quantity) AS reserved FROM entitlement_reservations
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND customer_id = ${customerId} AND feature_id = ${featureId}
      AND reservation_status = 'active' AND expires_at > ${at}`
  return new D(row?.reserved ?? 0)
}

/** What active reservations of a feature hold at `at`, by customer (customers holding none are absent). */
export async function reservedByCustomer(db: Db, scope: Scope, featureId: string, at: Date): Promise<Map<string, Decimal>> {
  const rows = await db<{ customer_id: string; reserved: string }[]>`SELECT customer_id, sum(quantity) AS reserved FROM entitlement_reservations
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND feature_id = ${featureId}
      AND reservation_status = 'active' AND expires_at > ${at}
    GROUP BY customer_id`
  return new Map(rows.map((r) => [r.customer_id, new D(r.reserved)]))
}

/** Releases an active reservation; undefined when it is not the scope's or was not active. */
export async function releaseReservation(db: Db, scope: Scope, id: string, at: Date): Promise<ReservationRow | undefined> {
  const [row] = await db<ReservationRow[]>`UPDATE entitlement_reservations SET reservation_status = 'released', updated_at = ${at}, version = version + 1
    WHERE id = ${id} AND tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND reservation_status = 'active' RETURNING *`
  return row
}

export async function findReservation(db: Db, scope: Scope, id: string): Promise<ReservationRow | undefined> {
  const [row] = await db<ReservationRow[]>`SELECT * FROM entitlement_reservations WHERE id = ${id} AND tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}`
  return row
}

export interface SpendingLimitRow {
  subscription_id: string
  spending_limit: Decimal
  currency: string
  reached_period_start: Date | null
}

const decodeLimit = (row: Record<string, unknown>): SpendingLimitRow => ({ ...(row as unknown as SpendingLimitRow), spending_limit: new D(row.spending_limit as string) })

/** The limits of some subscriptions of the scope. */
export async function limitsOf(db: Db, scope: Scope, subscriptionIds: string[]): Promise<SpendingLimitRow[]> {
  if (subscriptionIds.length === 0) return []
  const rows = await db`SELECT subscription_id, spending_limit, currency, reached_period_start FROM subscription_spending_limits
    WHERE subscription_id = ANY(${subscriptionIds}::text[]) AND tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}`
  return rows.map(decodeLimit)
}

/** Every limit of the scope: the check reads them all once a second rather than a subscription's at a time. */
export async function limitsOfScope(db: Db, scope: Scope): Promise<SpendingLimitRow[]> {
  const rows = await db`SELECT subscription_id, spending_limit, currency, reached_period_start FROM subscription_spending_limits
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}`
  return rows.map(decodeLimit)
}

export async function putLimit(db: Db, scope: Scope, subscriptionId: string, limit: Decimal, currency: string, at: Date): Promise<SpendingLimitRow> {
  const [row] = await db`INSERT INTO subscription_spending_limits (subscription_id, tenant_id, environment_id, spending_limit, currency, updated_at)
    VALUES (${subscriptionId}, ${scope.tenantId}, ${scope.environmentId}, ${limit.toFixed()}, ${currency}, ${at})
    ON CONFLICT (subscription_id) DO UPDATE SET spending_limit = EXCLUDED.spending_limit, updated_at = EXCLUDED.updated_at
    RETURNING subscription_id, spending_limit, currency, reached_period_start`
  return decodeLimit(row)
}

export async function deleteLimit(db: Db, scope: Scope, subscriptionId: string): Promise<void> {
  await db`DELETE FROM subscription_spending_limits WHERE subscription_id = ${subscriptionId} AND tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}`
}

/** Marks the limit reached for the period starting at `periodStart`; true only for the first caller of that period. */
export async function markReached(db: Db, subscriptionId: string, periodStart: Date): Promise<boolean> {
  const rows = await db`UPDATE subscription_spending_limits SET reached_period_start = ${periodStart}
    WHERE subscription_id = ${subscriptionId} AND reached_period_start IS DISTINCT FROM ${periodStart} RETURNING subscription_id`
  return rows.length === 1
}
