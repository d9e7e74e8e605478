// Tax rates, their associations to the tenant, customers and subscriptions.
import type { Decimal } from '../../../core/money.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Db } from '../../../infra/postgres.ts'
import { decodeRow, filterSpec, type FilterSpec, type RecordRow, type RecordTable } from '../../../infra/records.ts'

export const RATES: RecordTable = { name: 'tax_rates', noun: 'tax_rate', prefix: 'txr', decimals: ['percentage_value', 'fixed_value'] }
export const ASSOCIATIONS: RecordTable = { name: 'tax_associations', noun: 'tax_association', prefix: 'txa' }
export const CODE_INDEX = 'tax_rates_code'
export const ASSOCIATION_INDEX = 'tax_associations_once'

// taxrate_ids, taxrate_codes: Flexprice's names for the same filters.
export const FILTERS: FilterSpec = filterSpec({
  in: { tax_rate_ids: 'id', codes: 'code', taxrate_ids: 'id', taxrate_codes: 'code' },
  eq: { tax_rate_type: 'tax_rate_type', tax_rate_status: 'tax_rate_status', scope: 'scope' },
})
export const ASSOCIATION_FILTERS: FilterSpec = filterSpec({ eq: { entity_type: 'entity_type', entity_id: 'entity_id', tax_rate_id: 'tax_rate_id' } })

export interface TaxRateRow extends RecordRow {
  name: string
  code: string
  description: string | null
  tax_rate_type: 'percentage' | 'fixed'
  percentage_value: Decimal | null
  fixed_value: Decimal | null
  scope: string
  tax_rate_status: 'ACTIVE' | 'INACTIVE'
}

export interface AssociationRow extends RecordRow {
  tax_rate_id: string
  entity_type: 'tenant' | 'customer' | 'subscription'
  entity_id: string
  priority: number
  auto_apply: boolean
  currency: string | null
  start_date: Date | null
  end_date: Date | null
}

/** The automatic (auto_apply) associations of the given entities, by priority. */
export async function automaticOf(db: Db, scope: Scope, entities: { type: string; id: string }[]): Promise<AssociationRow[]> {
  if (entities.length === 0) return []
  const keys = [...new Set(entities.map((e) => `${e.type}:${e.id}`))]
  const rows = await db`SELECT * FROM tax_associations
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND status = 'published' AND auto_apply
      AND entity_type || ':' || entity_id = ANY(${keys}::text[])
    ORDER BY priority, created_at, id`
  return rows.map((r) => decodeRow<AssociationRow>(ASSOCIATIONS, r))
}

/** Published, active rates by code. */
export async function ratesByCode(db: Db, scope: Scope, codes: string[]): Promise<TaxRateRow[]> {
  if (codes.length === 0) return []
  const rows = await db`SELECT * FROM tax_rates WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}
    AND code = ANY(${codes}::text[]) AND status = 'published'`
  return rows.map((r) => decodeRow<TaxRateRow>(RATES, r))
}
