import { type FilterSpec, filterSpec, type RecordRow, type RecordTable } from '../../../infra/records.ts'

export const FEATURES: RecordTable = { name: 'features', noun: 'feature', prefix: 'feat' }
export const LOOKUP_KEY_INDEX = 'features_lookup_key'

export const FILTERS: FilterSpec = filterSpec({
  in: { feature_ids: 'id', meter_ids: 'meter_id', group_ids: 'group_id' },
  eq: { lookup_key: 'lookup_key', type: 'type' },
  contains: { name: 'name' },
})

export type FeatureType = 'metered' | 'boolean' | 'static'

interface AlertLevel {
  condition: 'above' | 'below'
  threshold: number
}

export interface AlertSettings {
  alert_enabled?: boolean
  critical?: AlertLevel
  warning?: AlertLevel
  info?: AlertLevel
}

export interface FeatureRow extends RecordRow {
  name: string
  description: string | null
  lookup_key: string | null
  type: FeatureType
  meter_id: string | null
  unit_singular: string | null
  unit_plural: string | null
  reporting_unit: { unit_singular?: string; unit_plural?: string; conversion_rate: number } | null
  alert_settings: AlertSettings | null
  group_id: string | null
}
