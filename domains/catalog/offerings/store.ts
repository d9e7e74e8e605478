// Plans and addons: what a customer subscribes to or adds on. Both own prices and entitlements.
import { type FilterSpec, filterSpec, type RecordRow, type RecordTable } from '../../../infra/records.ts'

export const PLANS: RecordTable = { name: 'plans', noun: 'plan', prefix: 'plan' }
export const ADDONS: RecordTable = { name: 'addons', noun: 'addon', prefix: 'addon' }

export const PLAN_FILTERS: FilterSpec = filterSpec({
  in: { plan_ids: 'id' },
  eq: { lookup_key: 'lookup_key' },
  contains: { name: 'name' },
})

export const ADDON_FILTERS: FilterSpec = filterSpec({
  in: { addon_ids: 'id', lookup_keys: 'lookup_key' },
  eq: { lookup_key: 'lookup_key', addon_type: 'type' },
  contains: { name: 'name' },
})

export interface OfferingRow extends RecordRow {
  name: string
  lookup_key: string | null
  description: string | null
  /** Plans only. */
  display_order?: number
  /** Addons only: onetime or multiple_instance. */
  type?: 'onetime' | 'multiple_instance'
}
