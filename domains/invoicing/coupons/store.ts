// Coupons and their associations to subscriptions.
import type { CouponRules } from '../../../core/billing/coupon-rules.ts'
import type { Decimal } from '../../../core/money.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Db } from '../../../infra/postgres.ts'
import { decodeRow, filterSpec, type FilterSpec, type RecordRow, type RecordTable } from '../../../infra/records.ts'

export const COUPONS: RecordTable = { name: 'coupons', noun: 'coupon', prefix: 'coupon', decimals: ['amount_off', 'percentage_off'] }
export const ASSOCIATIONS: RecordTable = { name: 'coupon_associations', noun: 'coupon_association', prefix: 'cassoc' }
export const ONCE_INDEX = 'coupon_associations_once'

export const FILTERS: FilterSpec = filterSpec({ in: { coupon_ids: 'id' }, eq: { type: 'type', cadence: 'cadence', currency: 'currency' }, contains: { name: 'name' } })
export const ASSOCIATION_FILTERS: FilterSpec = filterSpec({ eq: { subscription_id: 'subscription_id', coupon_id: 'coupon_id' } })

export interface CouponRow extends RecordRow {
  name: string
  type: 'fixed' | 'percentage'
  cadence: 'once' | 'repeated' | 'forever'
  amount_off: Decimal | null
  percentage_off: Decimal | null
  currency: string | null
  duration_in_periods: number | null
  max_redemptions: number | null
  total_redemptions: number
  redeem_after: Date | null
  redeem_before: Date | null
  rules: CouponRules
}

export interface AssociationRow extends RecordRow {
  coupon_id: string
  subscription_id: string
  subscription_line_item_id: string | null
  subscription_phase_id: string | null
  start_date: Date
  end_date: Date | null
}

/** Counts a redemption under the coupon's row lock, so two redemptions cannot both take the last one. */
export async function lockCoupon(db: Db, scope: Scope, id: string): Promise<CouponRow | undefined> {
  const [row] = await db`SELECT * FROM coupons WHERE id = ${id} AND tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} FOR UPDATE`
  return row ? decodeRow<CouponRow>(COUPONS, row) : undefined
}

export async function countRedemption(db: Db, scope: Scope, id: string): Promise<void> {
  await db`UPDATE coupons SET total_redemptions = total_redemptions + 1 WHERE id = ${id} AND tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}`
}
