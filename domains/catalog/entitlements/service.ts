// Entitlements: what a plan or an addon grants of a feature. Boolean features are on or off, metered
// ones carry a usage limit (null: unlimited) with its reset period, static ones carry a value.
import { entitlementTerms } from '../../../core/entitlements.ts'
import { invalidOperation, validationError } from '../../../core/errors.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Db, Tx } from '../../../infra/postgres.ts'
import { deleteRecord, filterConditions, findRecords, insertRecord, listRecords, publishedIn, requireRecord, updateRecord, type Audit } from '../../../infra/records.ts'
import { FEATURES, featureDeletion, requireFeature, type FeatureRow } from '../features/service.ts'
import { type ListRequest, type Page, page } from '../../../core/list.ts'
import { entityOf, requireOffering, requireOwner, type EntityInput, type EntityRef } from '../offerings/kinds.ts'
import { announce, auditOf, referenced, transaction, uniquely, within, type UniqueKey } from '../../records/service.ts'
import * as store from './store.ts'

export type { EntityType } from './store.ts'
export const FILTERS = store.FILTERS

export interface EntitlementView extends store.EntitlementRow {
  feature: FeatureRow
  /** The plan granting it (entity_id of a PLAN entitlement); null for an addon's. */
  plan_id: string | null
}

export interface EntitlementInput {
  feature_id: string
  /** Optional (Flexprice's clients always send it): must be the feature's type. */
  feature_type?: FeatureRow['type']
  is_enabled?: boolean
  usage_limit?: number | null
  usage_reset_period?: store.ResetPeriod | null
  is_soft_limit?: boolean
  static_value?: string | null
  display_order?: number
  parent_entitlement_id?: string | null
  start_date?: string | null
  end_date?: string | null
  metadata?: Record<string, string>
}

export type CreateEntitlementInput = EntitlementInput & EntityInput

export interface UpdateEntitlementInput extends Omit<EntitlementInput, 'feature_id'> {
  version?: number
}

async function withFeatures(db: Db, scope: Scope, rows: store.EntitlementRow[]): Promise<EntitlementView[]> {
  const features = new Map((await findRecords<FeatureRow>(db, FEATURES, scope, rows.map((r) => r.feature_id))).map((f) => [f.id, f]))
  return rows.map((row) => viewOf(row, features.get(row.feature_id)!))
}

const viewOf = (row: store.EntitlementRow, feature: FeatureRow): EntitlementView => ({ ...row, feature, plan_id: row.entity_type === 'PLAN' ? row.entity_id : null })

const dateOf = (value: string | null | undefined): Date | null | undefined => (value === undefined ? undefined : value === null ? null : new Date(value))

/**
 * The window and parent of an entitlement as it will be (`id`: the one being changed): end after start; the parent an
 * entitlement of this environment that grants the same feature, not the entitlement itself.
 */
async function placement(db: Db, scope: Scope, featureId: string, given: Pick<EntitlementInput, 'parent_entitlement_id' | 'start_date' | 'end_date'>, current?: store.EntitlementRow) {
  const start = dateOf(given.start_date)
  const end = dateOf(given.end_date)
  const [from, until] = [start === undefined ? (current?.start_date ?? null) : start, end === undefined ? (current?.end_date ?? null) : end]
  if (from && until && until <= from) throw validationError('end_date', 'must be after start_date')
  const parentId = given.parent_entitlement_id
  if (parentId) {
    if (parentId === current?.id) throw validationError('parent_entitlement_id', 'must be another entitlement')
    const parent = await referenced('parent_entitlement_id', requireRecord<store.EntitlementRow>(db, store.ENTITLEMENTS, scope, parentId, { published: true }))
    if (parent.feature_id !== featureId) throw validationError('parent_entitlement_id', `entitlement ${parentId} grants feature ${parent.feature_id}, not ${featureId}`)
  }
  return { start_date: start, end_date: end, parent_entitlement_id: parentId }
}

/**
 * Creates entitlements of one plan or addon in the caller's transaction (a plan created with its
 * entitlements); with `field`, errors name the list element ("entitlements[1].static_value").
 */
export async function createEntitlementsIn(
  tx: Tx,
  actor: Actor,
  audit: Audit,
  entity: EntityRef,
  inputs: EntitlementInput[],
  field?: string,
): Promise<EntitlementView[]> {
  const views: EntitlementView[] = []
  for (const [i, input] of inputs.entries()) {
    const create = async () => {
      const feature = await requireFeature(tx, actor, input.feature_id)
      const row = await insertRecord<store.EntitlementRow>(tx, store.ENTITLEMENTS, actor, audit, {
        ...entity,
        feature_id: feature.id,
        ...entitlementTerms(feature.type, input),
        ...(await placement(tx, actor, feature.id, input)),
        display_order: input.display_order ?? 0,
        metadata: input.metadata ?? {},
      })
      return viewOf(row, feature)
    }
    const view = field ? await within(`${field}[${i}]`, create) : await create()
    await announce(tx, actor, 'entitlement.created', store.ENTITLEMENTS, view)
    views.push(view)
  }
  return views
}

/** Guards a batch of entitlements: a feature granted twice by the same plan or addon is already_exists. */
export function uniqueEntitlements<T>(inputs: { feature_id: string }[], work: () => Promise<T>): Promise<T> {
  const keys: UniqueKey[] = inputs.map((i) => ({ index: store.FEATURE_INDEX, field: 'feature_id', value: i.feature_id }))
  return uniquely('entitlement', keys, work)
}

export async function createEntitlement(deps: Deps, actor: Actor, input: CreateEntitlementInput): Promise<EntitlementView> {
  const { plan_id, entity_type, entity_id, ...fields } = input
  const entity = entityOf({ plan_id, entity_type, entity_id })
  const audit = auditOf(deps, actor)
  return uniqueEntitlements([fields], () =>
    transaction(deps, async (tx) => {
      await requireOwner(tx, actor, { plan_id, entity_type, entity_id }, entity)
      const [view] = await createEntitlementsIn(tx, actor, audit, entity, [fields])
      return view
    }),
  )
}

/** Several entitlements, each of its own plan or addon, in one transaction: all are made or none (errors name items[i]). */
export async function createEntitlementsBulk(deps: Deps, actor: Actor, items: CreateEntitlementInput[]): Promise<EntitlementView[]> {
  const audit = auditOf(deps, actor)
  return uniqueEntitlements(items, () =>
    transaction(deps, async (tx) => {
      const views: EntitlementView[] = []
      for (const [i, { plan_id, entity_type, entity_id, ...fields }] of items.entries()) {
        const entity = await within(`items[${i}]`, () => entityOf({ plan_id, entity_type, entity_id }))
        await within(`items[${i}]`, () => requireOwner(tx, actor, { plan_id, entity_type, entity_id }, entity))
        views.push(...(await within(`items[${i}]`, () => createEntitlementsIn(tx, actor, audit, entity, [fields]))))
      }
      return views
    }),
  )
}

export async function getEntitlement(deps: Deps, actor: Actor, id: string): Promise<EntitlementView> {
  const row = await requireRecord<store.EntitlementRow>(deps.sql, store.ENTITLEMENTS, actor, id)
  return (await withFeatures(deps.sql, actor, [row]))[0]
}

export async function listEntitlements(deps: Deps, actor: Actor, { params, filters }: ListRequest): Promise<Page<EntitlementView>> {
  const { rows, total } = await listRecords<store.EntitlementRow>(deps.sql, store.ENTITLEMENTS, actor, params, filterConditions(deps.sql, store.FILTERS, filters))
  return page(await withFeatures(deps.sql, actor, rows), total, params)
}

/** The published entitlements of plans or addons, in display order, with their features, for embedding. */
export async function entitlementsOf(db: Db, scope: Scope, entityIds: string[]): Promise<EntitlementView[]> {
  const rows = await publishedIn<store.EntitlementRow>(db, store.ENTITLEMENTS, scope, 'entity_id', entityIds, ['display_order', 'created_at'])
  return withFeatures(db, scope, rows)
}

/** GET /v1/plans/{id}/entitlements and the addon equivalent: not_found when the plan or addon is not the caller's. */
export async function listEntitlementsOf(deps: Deps, actor: Actor, entityType: store.EntityType, id: string): Promise<Page<EntitlementView>> {
  await requireOffering(deps.sql, actor, entityType, id, { anyStatus: true })
  const items = await entitlementsOf(deps.sql, actor, [id])
  return page(items, items.length, { limit: items.length, offset: 0 })
}

export async function updateEntitlement(deps: Deps, actor: Actor, id: string, input: UpdateEntitlementInput): Promise<EntitlementView> {
  const { version, ...patch } = input
  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    const current = (await withFeatures(tx, actor, [await requireRecord<store.EntitlementRow>(tx, store.ENTITLEMENTS, actor, id)]))[0]
    // The type rules apply to the record as it will be: the current values with the changes laid over.
    const merged = { ...current, ...patch }
    const row = await updateRecord<store.EntitlementRow>(
      tx,
      store.ENTITLEMENTS,
      actor,
      id,
      { ...entitlementTerms(current.feature.type, merged), ...(await placement(tx, actor, current.feature_id, patch, current)), display_order: merged.display_order, metadata: merged.metadata },
      { version, audit },
    )
    const view = viewOf(row, current.feature)
    await announce(tx, actor, 'entitlement.updated', store.ENTITLEMENTS, view)
    return view
  })
}

export async function deleteEntitlement(deps: Deps, actor: Actor, id: string): Promise<EntitlementView> {
  return transaction(deps, async (tx) => {
    const row = await deleteRecord<store.EntitlementRow>(tx, store.ENTITLEMENTS, actor, id, auditOf(deps, actor))
    const [view] = await withFeatures(tx, actor, [row])
    await announce(tx, actor, 'entitlement.deleted', store.ENTITLEMENTS, view)
    return view
  })
}

// A feature that plans or addons still grant stays: remove those entitlements first.
featureDeletion.register(async (db, scope, featureId) => {
  const used = await store.countOfFeature(db, scope, featureId)
  if (used > 0) throw invalidOperation(`the feature is granted by ${used} entitlement(s); delete them first`, { feature_id: featureId, entitlements: used })
})
