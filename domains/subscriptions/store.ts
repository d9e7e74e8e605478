// Subscriptions, their line items, phases and addon associations.
import type { ProrationBehavior } from '../../core/billing/cycle.ts'
import type { BillingPeriod } from '../../core/periods.ts'
import type { Scope } from '../../core/scope.ts'
import type { BillingCycle, SubscriptionStatus, SubscriptionType } from '../../core/subscriptions.ts'
import type { Decimal } from '../../core/money.ts'
import type { Db } from '../../infra/postgres.ts'
import { type Audit, decodeRow, type FilterSpec, filterSpec, type Fragment, publishedIn, type RecordRow, type RecordTable } from '../../infra/records.ts'

export const SUBSCRIPTIONS: RecordTable = {
  name: 'subscriptions',
  noun: 'subscription',
  prefix: 'sub',
  decimals: ['commitment_amount', 'overage_factor', 'auto_invoice_threshold'],
}
export const LINE_ITEMS: RecordTable = { name: 'subscription_line_items', noun: 'subscription_line_item', prefix: 'subli', decimals: ['quantity'] }
export const PHASES: RecordTable = { name: 'subscription_phases', noun: 'subscription_phase', prefix: 'phase' }
export const ADDON_ASSOCIATIONS: RecordTable = { name: 'subscription_addons', noun: 'addon_association', prefix: 'addonassoc' }

export const FILTERS: FilterSpec = filterSpec({
  in: { subscription_ids: 'id', customer_ids: 'customer_id', plan_ids: 'plan_id', subscription_status: 'subscription_status' },
  eq: { customer_id: 'customer_id', subscription_type: 'subscription_type', parent_subscription_id: 'parent_subscription_id', currency: 'currency', billing_period: 'billing_period' },
})

export const LINE_ITEM_FILTERS: FilterSpec = filterSpec({
  in: { line_item_ids: 'id', subscription_ids: 'subscription_id', customer_ids: 'customer_id', price_ids: 'price_id', meter_ids: 'meter_id', entity_ids: 'entity_id', subscription_phase_ids: 'subscription_phase_id' },
  eq: { price_type: 'price_type', currency: 'currency' },
  gte: { start_date_gte: 'start_date', end_date_gte: 'end_date' },
  lt: { start_date_lt: 'start_date', end_date_lt: 'end_date' },
})

export interface SubscriptionRow extends RecordRow {
  customer_id: string
  invoicing_customer_id: string | null
  parent_subscription_id: string | null
  plan_id: string
  /** When it joined plan_id by a plan change (sql/postgres/0700); null: at its start. */
  plan_start_date: Date | null
  lookup_key: string | null
  currency: string
  subscription_status: SubscriptionStatus
  subscription_type: SubscriptionType
  billing_cadence: 'RECURRING'
  billing_cycle: BillingCycle
  billing_period: BillingPeriod
  billing_period_count: number
  billing_anchor: Date
  start_date: Date
  end_date: Date | null
  current_period_start: Date
  current_period_end: Date
  trial_start: Date | null
  trial_end: Date | null
  cancel_at: Date | null
  cancel_at_period_end: boolean
  cancelled_at: Date | null
  collection_method: string
  payment_behavior: string
  payment_terms: string | null
  proration_behavior: string
  customer_timezone: string
  gateway_payment_method_id: string | null
  commitment_amount: Decimal | null
  commitment_duration: string | null
  overage_factor: Decimal | null
  enable_true_up: boolean
  auto_invoice_threshold: Decimal | null
  coupons: string[]
  tax_rate_overrides: Record<string, unknown>[]
}

export interface LineItemRow extends RecordRow {
  subscription_id: string
  subscription_phase_id: string | null
  addon_association_id: string | null
  customer_id: string
  entity_type: 'plan' | 'addon'
  entity_id: string
  plan_display_name: string | null
  display_name: string | null
  price_id: string
  /** The price's billing terms as they were when the line was made, decimals as strings. */
  price: Record<string, unknown>
  price_type: 'FIXED' | 'USAGE'
  meter_id: string | null
  currency: string
  quantity: Decimal
  billing_period: string
  billing_period_count: number
  invoice_cadence: 'ADVANCE' | 'ARREAR'
  trial_period_days: number
  start_date: Date
  end_date: Date | null
  /** How its start and its end inside a billing period are settled (sql/postgres/0304); null: as the subscription prorates. */
  proration_behavior: ProrationBehavior | null
  end_proration_behavior: ProrationBehavior | null
}

export interface PhaseRow extends RecordRow {
  subscription_id: string
  start_date: Date
  end_date: Date | null
}

export interface AddonAssociationRow extends RecordRow {
  subscription_id: string
  addon_id: string
  quantity: number
  start_date: Date
  end_date: Date | null
}

/** Published child rows of some subscriptions (line items, phases, addons), by start. */
export const childrenOf = <T>(db: Db, table: RecordTable, scope: Scope, subscriptionIds: string[]): Promise<T[]> =>
  publishedIn<T>(db, table, scope, 'subscription_id', subscriptionIds, ['start_date', 'created_at'])

export async function countLive(db: Db, scope: Scope, customerId: string): Promise<number> {
  const [{ n }] = await db<{ n: number }[]>`SELECT count(*)::int AS n FROM subscriptions
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND customer_id = ${customerId}
      AND subscription_status <> 'cancelled' AND status = 'published'`
  return n
}

/** Subscriptions grouped under or inheriting from a parent. */
export async function childSubscriptions(db: Db, scope: Scope, parentId: string): Promise<SubscriptionRow[]> {
  const rows = await db`SELECT * FROM subscriptions
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND parent_subscription_id = ${parentId}
      AND subscription_status <> 'cancelled' AND status = 'published'
    ORDER BY created_at, id`
  return rows.map((row) => decodeRow<SubscriptionRow>(SUBSCRIPTIONS, row))
}

/** Line items in force at an instant: started and not yet ended. */
export const activeAt = (db: Db, at: Date): Fragment => db`start_date <= ${at} AND (end_date IS NULL OR end_date > ${at})`

/**
 * Ends the line items of a subscription (or of one phase) still in force at `at`, recording how that end
 * is settled (`behavior`; null: as the subscription prorates). A line that starts later ends as it
 * starts, so it never spans a negative time. `from`: lines ending there (at an earlier scheduled
 * cancellation) end at `at` instead, also when `at` is later.
 */
export async function endLineItems(
  db: Db,
  scope: Scope,
  where: { subscription_id: string; subscription_phase_id?: string },
  at: Date,
  audit: Audit,
  settle: { behavior?: ProrationBehavior | null; from?: Date | null } = {},
): Promise<void> {
  await db`UPDATE subscription_line_items
    SET end_date = GREATEST(start_date, ${at}), end_proration_behavior = ${settle.behavior ?? null}, version = version + 1, updated_at = ${audit.at}, updated_by = ${audit.by}
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND subscription_id = ${where.subscription_id}
      AND status = 'published' AND (end_date IS NULL OR end_date > ${at} ${settle.from ? db`OR end_date = ${settle.from}` : db``})
      ${where.subscription_phase_id ? db`AND subscription_phase_id = ${where.subscription_phase_id}` : db``}`
}

/**
 * Subscriptions of every scope with a transition due at `now` (a start, a trial end, a period end,
 * a cancellation), locked for the caller's transaction; rows another worker holds are skipped.
 */
export async function dueAt(db: Db, now: Date, limit: number, reach: Fragment): Promise<SubscriptionRow[]> {
  const rows = await db`SELECT * FROM subscriptions
    WHERE subscription_status NOT IN ('cancelled', 'draft') AND status = 'published' AND ${reach}
      AND (current_period_end <= ${now} OR cancel_at <= ${now} OR end_date <= ${now}
           OR (subscription_status = 'not_started' AND start_date <= ${now})
           OR (subscription_status = 'trialing' AND trial_end <= ${now}))
    ORDER BY current_period_end, id
    LIMIT ${limit}
    FOR UPDATE SKIP LOCKED`
  return rows.map((row) => decodeRow<SubscriptionRow>(SUBSCRIPTIONS, row))
}

/** Keeps a phase's line items on the phase's dates, or deletes them with it. */
export async function setPhaseLines(
  db: Db,
  scope: Scope,
  phaseId: string,
  change: { start_date: Date; end_date: Date | null } | { status: 'deleted' },
  audit: { by: string; at: Date },
): Promise<void> {
  await db`UPDATE subscription_line_items SET ${db(change as never)}, version = version + 1, updated_at = ${audit.at}, updated_by = ${audit.by}
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND subscription_phase_id = ${phaseId} AND status = 'published'`
}

/** Published subscriptions of every scope in id order after `afterId` (the billing run walks them in pages). */
export async function pageAcrossScopes(db: Db, afterId: string, limit: number, reach: Fragment): Promise<SubscriptionRow[]> {
  // Drafts bill nothing until activated.
  const rows = await db`SELECT * FROM subscriptions WHERE status = 'published' AND subscription_status <> 'draft' AND id > ${afterId} AND ${reach} ORDER BY id LIMIT ${limit}`
  return rows.map((row) => decodeRow<SubscriptionRow>(SUBSCRIPTIONS, row))
}

/** Line items and addons that began with a draft subscription begin at its new start. */
export async function moveStart(db: Db, scope: Scope, subscriptionId: string, from: Date, to: Date, audit: { by: string; at: Date }): Promise<void> {
  for (const table of [LINE_ITEMS, ADDON_ASSOCIATIONS]) {
    await db`UPDATE ${db(table.name)} SET start_date = ${to}, version = version + 1, updated_at = ${audit.at}, updated_by = ${audit.by}
      WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND subscription_id = ${subscriptionId}
        AND start_date = ${from} AND status = 'published'`
  }
}
