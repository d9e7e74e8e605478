import type { Decimal } from '../../../core/money.ts'
import { type FilterSpec, filterSpec, type RecordRow, type RecordTable } from '../../../infra/records.ts'

export const PRICE_UNITS: RecordTable = { name: 'price_units', noun: 'price_unit', prefix: 'price_unit', decimals: ['conversion_rate'] }
export const CODE_INDEX = 'price_units_code'

export const FILTERS: FilterSpec = filterSpec({
  in: { price_unit_ids: 'id', codes: 'code' },
  eq: { code: 'code', base_currency: 'base_currency' },
  contains: { name: 'name' },
})

export interface PriceUnitRow extends RecordRow {
  name: string
  code: string
  symbol: string
  base_currency: string
  /** What one unit is worth in base_currency: amount in the unit × conversion_rate = amount in base_currency. */
  conversion_rate: Decimal
}
