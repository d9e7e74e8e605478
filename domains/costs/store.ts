import { type FilterSpec, filterSpec, type RecordRow, type RecordTable } from '../../infra/records.ts'

export const COSTSHEETS: RecordTable = { name: 'costsheets', noun: 'costsheet', prefix: 'costsheet' }
export const NAME_INDEX = 'costsheets_name'
export const LOOKUP_KEY_INDEX = 'costsheets_lookup_key'

export const FILTERS: FilterSpec = filterSpec({
  in: { costsheet_ids: 'id' },
  eq: { lookup_key: 'lookup_key', name: 'name' },
  gte: { start_time: 'created_at' },
  lt: { end_time: 'created_at' },
})

export interface CostsheetRow extends RecordRow {
  name: string
  lookup_key: string | null
  description: string | null
}
