// Credit grants and their applications. An application is unique per (grant, subscription, period start):
// inserting one again does nothing, which is what makes the scheduled job exactly-once.
import type { Decimal } from '../../../core/money.ts'
import type { BillingPeriod } from '../../../core/periods.ts'
import type { ExpirationUnit, ApplicationReason, DueApplication } from '../../../core/credits/grants.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Db } from '../../../infra/postgres.ts'
import { newId } from '../../../core/ids.ts'
import { decodeRow, type Audit, type FilterSpec, type Fragment, type RecordRow, type RecordTable } from '../../../infra/records.ts'

export const GRANTS: RecordTable = { name: 'credit_grants', noun: 'credit_grant', prefix: 'cg', decimals: ['credits', 'conversion_rate', 'topup_conversion_rate'] }
export const APPLICATIONS: RecordTable = { name: 'credit_grant_applications', noun: 'credit_grant_application', prefix: 'cga', decimals: ['credits'] }

export const FILTERS: FilterSpec = {
  credit_grant_ids: { column: 'id', op: 'in' },
  plan_ids: { column: 'plan_id', op: 'in' },
  subscription_ids: { column: 'subscription_id', op: 'in' },
  scope: { column: 'scope', op: 'eq' },
  cadence: { column: 'cadence', op: 'eq' },
}

export const APPLICATION_FILTERS: FilterSpec = {
  subscription_ids: { column: 'subscription_id', op: 'in' },
  application_status: { column: 'application_status', op: 'in' },
}

export interface GrantRow extends RecordRow {
  name: string
  scope: 'PLAN' | 'SUBSCRIPTION'
  plan_id: string | null
  subscription_id: string | null
  cadence: 'ONETIME' | 'RECURRING'
  credits: Decimal
  conversion_rate: Decimal | null
  topup_conversion_rate: Decimal | null
  period: BillingPeriod | null
  period_count: number | null
  credit_grant_anchor: Date | null
  start_date: Date | null
  end_date: Date | null
  expiration_type: 'NEVER' | 'DURATION' | 'BILLING_CYCLE'
  expiration_duration: number | null
  expiration_duration_unit: ExpirationUnit | null
  priority: number | null
}

type ApplicationStatus = 'pending' | 'applied' | 'failed' | 'skipped' | 'cancelled'

export interface ApplicationRow extends RecordRow {
  credit_grant_id: string
  subscription_id: string
  credits: Decimal
  application_reason: ApplicationReason
  application_status: ApplicationStatus
  scheduled_for: Date
  applied_at: Date | null
  period_start: Date
  period_end: Date | null
  expiry_date: Date | null
  priority: number | null
  failure_reason: string | null
  retry_count: number
  idempotency_key: string
  subscription_status_at_application: string | null
  wallet_transaction_id: string | null
}

const decodeApplication = (row: Record<string, unknown>) => decodeRow<ApplicationRow>(APPLICATIONS, row as never)

/** Published grants of every scope, a page at a time by id (the job walks them all). */
export async function grantsAfter(db: Db, afterId: string, limit: number): Promise<GrantRow[]> {
  const rows = await db`SELECT * FROM credit_grants WHERE status = 'published' AND id > ${afterId} ORDER BY id LIMIT ${limit}`
  return rows.map((row) => decodeRow<GrantRow>(GRANTS, row))
}

/** Where the schedule of a grant stands for each of these subscriptions: the last period it has an application for (absent: none yet). */
export async function lastPeriodStarts(db: Db, grantId: string, subscriptionIds: string[]): Promise<Map<string, Date>> {
  if (subscriptionIds.length === 0) return new Map()
  const rows = await db<{ subscription_id: string; last: Date }[]>`SELECT subscription_id, max(period_start) AS last FROM credit_grant_applications
    WHERE credit_grant_id = ${grantId} AND subscription_id = ANY(${subscriptionIds}::text[]) GROUP BY subscription_id`
  return new Map(rows.map((r) => [r.subscription_id, r.last]))
}

/** Inserts the applications not there yet, in one statement; a period that has one keeps it. Returns how many were new. */
export async function insertApplications(db: Db, scope: Scope, audit: Audit, due: DueApplication[]): Promise<number> {
  if (due.length === 0) return 0
  const rows = due.map((a) => ({
    id: newId(APPLICATIONS.prefix),
    tenant_id: scope.tenantId,
    environment_id: scope.environmentId,
    credit_grant_id: a.credit_grant_id,
    subscription_id: a.subscription_id,
    credits: a.credits.toFixed(),
    application_reason: a.application_reason,
    application_status: 'pending',
    scheduled_for: a.scheduled_for,
    period_start: a.period_start,
    period_end: a.period_end,
    expiry_date: a.expiry_date,
    priority: a.priority,
    idempotency_key: a.idempotency_key,
    created_at: audit.at,
    created_by: audit.by,
    updated_at: audit.at,
    updated_by: audit.by,
  }))
  const inserted = await db`INSERT INTO credit_grant_applications ${db(rows as never)}
    ON CONFLICT (credit_grant_id, subscription_id, period_start) DO NOTHING RETURNING id`
  return inserted.length
}

/**
 * Applications due by `now` and not applied yet, oldest period first; failed ones while attempts are left,
 * once per run (a run stamps what it touches with its `now`).
 */
/** `reach` is a condition on subscriptions.customer_id (domains/customers/reach.ts). */
export async function applicationsDue(db: Db, now: Date, maxAttempts: number, limit: number, reach: Fragment): Promise<ApplicationRow[]> {
  const rows = await db`SELECT * FROM credit_grant_applications
    WHERE scheduled_for <= ${now} AND subscription_id IN (SELECT subscriptions.id FROM subscriptions WHERE ${reach})
      AND (application_status = 'pending' OR (application_status = 'failed' AND retry_count < ${maxAttempts} AND updated_at < ${now}))
    ORDER BY scheduled_for, period_start, id
    LIMIT ${limit}`
  return rows.map(decodeApplication)
}

/** The application under a row lock if it still waits; a run that holds it already makes this undefined. */
export async function lockWaiting(db: Db, id: string): Promise<ApplicationRow | undefined> {
  const [row] = await db`SELECT * FROM credit_grant_applications
    WHERE id = ${id} AND application_status IN ('pending', 'failed') FOR UPDATE SKIP LOCKED`
  return row ? decodeApplication(row) : undefined
}

/** lockWaiting for many applications, locked in id order: those another run holds, or that no longer wait, are absent. */
export async function lockWaitingMany(db: Db, ids: string[]): Promise<Map<string, ApplicationRow>> {
  const rows = await db`SELECT * FROM credit_grant_applications
    WHERE id = ANY(${ids}::text[]) AND application_status IN ('pending', 'failed') ORDER BY id FOR UPDATE SKIP LOCKED`
  return new Map(rows.map((r) => [r.id as string, decodeApplication(r)]))
}

/** A deleted grant applies nothing more: what still waits is cancelled. */
export async function cancelWaiting(db: Db, scope: Scope, grantId: string, audit: Audit): Promise<void> {
  await db`UPDATE credit_grant_applications
    SET application_status = 'cancelled', version = version + 1, updated_at = ${audit.at}, updated_by = ${audit.by}
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND credit_grant_id = ${grantId}
      AND application_status IN ('pending', 'failed')`
}

/** Applications of the customer's subscriptions, none scheduled after its subscription's cancellation. */
export const ofCustomerUncancelled = (db: Db, scope: Scope, customerId: string): Fragment =>
  db`subscription_id IN (SELECT s.id FROM subscriptions s WHERE s.customer_id = ${customerId}
      AND s.tenant_id = ${scope.tenantId} AND s.environment_id = ${scope.environmentId}
      AND (s.cancelled_at IS NULL OR credit_grant_applications.scheduled_for < s.cancelled_at))`
