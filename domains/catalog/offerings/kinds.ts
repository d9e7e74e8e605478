// Plans and addons, the two kinds of offering, and how a price or entitlement names its owner and
// finds it. Prices and entitlements need this while plans are made of them, so it stands apart from
// the offerings' service (which imports both).
import { validationError } from '../../../core/errors.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Db } from '../../../infra/postgres.ts'
import { findRecords, requireRecord, type FilterSpec, type RecordTable } from '../../../infra/records.ts'
import type { EntityType } from '../entitlements/store.ts'
import { referenced } from '../../records/service.ts'
import * as store from './store.ts'

export interface OfferingKind {
  table: RecordTable
  entityType: EntityType
  lookupIndex: string
  filters: FilterSpec
}

export const PLAN: OfferingKind = { table: store.PLANS, entityType: 'PLAN', lookupIndex: 'plans_lookup_key', filters: store.PLAN_FILTERS }
export const ADDON: OfferingKind = { table: store.ADDONS, entityType: 'ADDON', lookupIndex: 'addons_lookup_key', filters: store.ADDON_FILTERS }
const KINDS: Record<EntityType, OfferingKind> = { PLAN, ADDON }

export interface EntityRef {
  entity_type: EntityType
  entity_id: string
}

/** How a price or entitlement request names its owner: plan_id, or entity_type with entity_id. */
export interface EntityInput {
  plan_id?: string
  entity_type?: EntityType
  entity_id?: string
}

export function entityOf({ plan_id, entity_type, entity_id }: EntityInput): EntityRef {
  if (plan_id) {
    if ((entity_type ?? 'PLAN') !== 'PLAN') throw validationError('entity_type', 'must be PLAN when plan_id is given')
    if (entity_id && entity_id !== plan_id) throw validationError('entity_id', 'differs from plan_id')
    return { entity_type: 'PLAN', entity_id: plan_id }
  }
  if (!entity_type || !entity_id) throw validationError('plan_id', 'plan_id, or entity_type with entity_id, is required')
  return { entity_type, entity_id }
}

/** A plan or addon of the scope; published unless `anyStatus` (reading what a deleted plan granted). */
export function requireOffering(db: Db, scope: Scope, entityType: EntityType, id: string, options: { anyStatus?: boolean } = {}): Promise<store.OfferingRow> {
  return requireRecord<store.OfferingRow>(db, KINDS[entityType].table, scope, id, { published: !options.anyStatus })
}

/** The published plan or addon a price or entitlement request names; missing, it is not_found naming the request's field. */
export function requireOwner(db: Db, scope: Scope, input: EntityInput, entity: EntityRef): Promise<store.OfferingRow> {
  return referenced(input.plan_id ? 'plan_id' : 'entity_id', requireOffering(db, scope, entity.entity_type, entity.entity_id))
}

/** Plans or addons by id in any status, without their prices, for embedding in subscriptions. */
export function findOfferings(db: Db, scope: Scope, entityType: EntityType, ids: string[]): Promise<store.OfferingRow[]> {
  return findRecords<store.OfferingRow>(db, KINDS[entityType].table, scope, ids)
}
