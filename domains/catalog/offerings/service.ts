// Plans and addons share one shape: a record with prices and entitlements, created together in one
// transaction and read back with both expanded (plans also with their credit grants).
import { validationError } from '../../../core/errors.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Db } from '../../../infra/postgres.ts'
import { deleteRecord, filterConditions, findRecords, insertRecord, listRecords, requireRecord, updateRecord, type FilterSpec, type RecordTable } from '../../../infra/records.ts'
import { createEntitlementsIn, entitlementsOf, uniqueEntitlements, type EntitlementInput, type EntitlementView, type EntityType } from '../entitlements/service.ts'
import { type ListRequest, type Page, page } from '../../../core/list.ts'
import { insertPrices, preparePrices, priceKeys, pricesOf, type NewPrice, type PriceRow } from '../prices/service.ts'
import { auditOf, transaction, uniquely } from '../../records/service.ts'
import * as store from './store.ts'
// credits/service imports this module too; the cycle is safe: neither uses the other while loading.
import { planCreditGrants } from '../../credits/grants/service.ts'

export type { OfferingRow } from './store.ts'

export interface OfferingKind {
  table: RecordTable
  entityType: EntityType
  lookupIndex: string
  filters: FilterSpec
}

export const PLAN: OfferingKind = { table: store.PLANS, entityType: 'PLAN', lookupIndex: 'plans_lookup_key', filters: store.PLAN_FILTERS }
export const ADDON: OfferingKind = { table: store.ADDONS, entityType: 'ADDON', lookupIndex: 'addons_lookup_key', filters: store.ADDON_FILTERS }
const KINDS: Record<EntityType, OfferingKind> = { PLAN, ADDON }

export interface OfferingView extends store.OfferingRow {
  prices: PriceRow[]
  entitlements: EntitlementView[]
  /** Plans only; credit grants are another domain's and not attached yet. */
  credit_grants?: unknown[]
}

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

interface OfferingFields {
  name?: string
  lookup_key?: string | null
  description?: string | null
  display_order?: number
  metadata?: Record<string, string>
}

export interface CreateOfferingInput extends OfferingFields {
  name: string
  prices?: NewPrice[]
  entitlements?: EntitlementInput[]
}

export interface UpdateOfferingInput extends OfferingFields {
  version?: number
}

/** A plan or addon of the scope; published unless `anyStatus` (reading what a deleted plan granted). */
export function requireOffering(db: Db, scope: Scope, entityType: EntityType, id: string, options: { anyStatus?: boolean } = {}): Promise<store.OfferingRow> {
  return requireRecord<store.OfferingRow>(db, KINDS[entityType].table, scope, id, { published: !options.anyStatus })
}

/** Plans or addons by id in any status, without their prices, for embedding in subscriptions. */
export function findOfferings(db: Db, scope: Scope, entityType: EntityType, ids: string[]): Promise<store.OfferingRow[]> {
  return findRecords<store.OfferingRow>(db, KINDS[entityType].table, scope, ids)
}

async function expand(db: Db, scope: Scope, kind: OfferingKind, rows: store.OfferingRow[]): Promise<OfferingView[]> {
  const ids = rows.map((r) => r.id)
  const [prices, entitlements] = [await pricesOf(db, scope, ids), await entitlementsOf(db, scope, ids)]
  const grants = kind.entityType === 'PLAN' ? await planCreditGrants(db, scope, ids) : undefined
  return rows.map((row) => ({
    ...row,
    prices: prices.filter((p) => p.entity_id === row.id),
    entitlements: entitlements.filter((e) => e.entity_id === row.id),
    ...(grants ? { credit_grants: grants.filter((g) => g.plan_id === row.id) } : {}),
  }))
}

const lookupKey = (kind: OfferingKind, value: unknown) => ({ index: kind.lookupIndex, field: 'lookup_key', value })

export async function createOffering(deps: Deps, actor: Actor, kind: OfferingKind, input: CreateOfferingInput): Promise<OfferingView> {
  const { prices = [], entitlements = [], ...fields } = input
  const prepared = await preparePrices(deps, actor, prices)
  const audit = auditOf(deps, actor)
  const keys = [lookupKey(kind, fields.lookup_key), ...priceKeys(prepared)]
  return uniquely(kind.table.noun, keys, () =>
    uniqueEntitlements(entitlements, () =>
      transaction(deps, async (tx) => {
        const row = await insertRecord<store.OfferingRow>(tx, kind.table, actor, audit, fields)
        const owner = { entity_type: kind.entityType, entity_id: row.id }
        await insertPrices(tx, actor, audit, owner, prepared)
        await createEntitlementsIn(tx, actor, audit, owner, entitlements, 'entitlements')
        return (await expand(tx, actor, kind, [row]))[0]
      }),
    ),
  )
}

export async function getOffering(deps: Deps, actor: Actor, kind: OfferingKind, id: string): Promise<OfferingView> {
  const row = await requireRecord<store.OfferingRow>(deps.sql, kind.table, actor, id)
  return (await expand(deps.sql, actor, kind, [row]))[0]
}

export async function listOfferings(deps: Deps, actor: Actor, kind: OfferingKind, { params, filters }: ListRequest): Promise<Page<OfferingView>> {
  const { rows, total } = await listRecords<store.OfferingRow>(deps.sql, kind.table, actor, params, filterConditions(deps.sql, kind.filters, filters))
  return page(await expand(deps.sql, actor, kind, rows), total, params)
}

export async function updateOffering(deps: Deps, actor: Actor, kind: OfferingKind, id: string, input: UpdateOfferingInput): Promise<OfferingView> {
  const { version, ...fields } = input
  return uniquely(kind.table.noun, [lookupKey(kind, fields.lookup_key)], () =>
    transaction(deps, async (tx) => {
      const row = await updateRecord<store.OfferingRow>(tx, kind.table, actor, id, fields, { version, audit: auditOf(deps, actor) })
      return (await expand(tx, actor, kind, [row]))[0]
    }),
  )
}

/** Subscriptions already made keep their line items (snapshots); new ones cannot use a deleted plan. */
export async function deleteOffering(deps: Deps, actor: Actor, kind: OfferingKind, id: string): Promise<OfferingView> {
  return transaction(deps, async (tx) => {
    const row = await deleteRecord<store.OfferingRow>(tx, kind.table, actor, id, auditOf(deps, actor))
    return (await expand(tx, actor, kind, [row]))[0]
  })
}
