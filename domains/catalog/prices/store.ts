import type { PriceTerms } from '../../../core/price-rules.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Db } from '../../../infra/postgres.ts'
import type { EntityType } from '../entitlements/store.ts'
import { type FilterSpec, filterSpec, type RecordRow, type RecordTable } from '../../../infra/records.ts'

export const PRICES: RecordTable = {
  name: 'prices',
  noun: 'price',
  prefix: 'price',
  decimals: ['amount', 'min_quantity', 'price_unit_amount', 'conversion_rate'],
}
export const LOOKUP_KEY_INDEX = 'prices_lookup_key'

export const FILTERS: FilterSpec = filterSpec({
  in: { price_ids: 'id', plan_ids: 'entity_id', entity_ids: 'entity_id', meter_ids: 'meter_id', group_ids: 'group_id', price_unit_ids: 'price_unit_id' },
  eq: { entity_type: 'entity_type', currency: 'currency', type: 'type', billing_period: 'billing_period', lookup_key: 'lookup_key' },
  // Flexprice's price filter: false leaves out prices whose end_date has passed (absent: all prices).
  unexpired: { allow_expired_prices: 'end_date' },
})

/** A plan's or addon's price, or a cost sheet's (what a unit of a meter costs you). */
export type PriceOwnerType = EntityType | 'COSTSHEET'

export interface PriceRow extends RecordRow, PriceTerms {
  entity_type: PriceOwnerType
  entity_id: string
  lookup_key: string | null
  description: string | null
  display_name: string | null
  group_id: string | null
  parent_price_id: string | null
  /** The catalog price unit a CUSTOM price is set in; null for fiat prices and units of the price's own. */
  price_unit_id: string | null
  /** When the price is in force; null: from always, until always. */
  start_date: Date | null
  end_date: Date | null
}

export async function countWithUnit(db: Db, scope: Scope, priceUnitId: string): Promise<number> {
  const [{ n }] = await db<{ n: number }[]>`SELECT count(*)::int AS n FROM prices
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND price_unit_id = ${priceUnitId} AND status = 'published'`
  return n
}
