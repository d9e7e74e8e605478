// Plans and addons share one shape: a record with prices and entitlements, created together in one
// transaction and read back with both expanded. A plan's credit grants belong to the credits domain,
// which attaches them to the plan's view (withCreditGrants in credits/grants/service.ts).
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Db, Tx } from '../../../infra/postgres.ts'
import type { Audit } from '../../../infra/records.ts'
import { notFound } from '../../../core/errors.ts'
import { deleteRecord, filterConditions, findPublishedBy, insertRecord, listRecords, requireRecord, updateRecord } from '../../../infra/records.ts'
import { createEntitlementsIn, entitlementsOf, uniqueEntitlements, type EntitlementInput, type EntitlementView } from '../entitlements/service.ts'
import { type ListRequest, type Page, page } from '../../../core/list.ts'
import { copyPrices, insertPrices, preparePrices, priceKeys, pricesOf, priceViews, type NewPrice, type PriceView } from '../prices/service.ts'
import { auditOf, transaction, uniquely } from '../../records/service.ts'
import * as store from './store.ts'
import type { OfferingKind } from './kinds.ts'

export type { OfferingRow } from './store.ts'

export interface OfferingView extends store.OfferingRow {
  prices: PriceView[]
  entitlements: EntitlementView[]
}

interface OfferingFields {
  name?: string
  lookup_key?: string | null
  description?: string | null
  display_order?: number
  metadata?: Record<string, string>
}

/** An addon's type (addons only): onetime or multiple_instance. */
type AddonType = 'onetime' | 'multiple_instance'

export interface CreateOfferingInput extends OfferingFields {
  name: string
  type?: AddonType
  prices?: NewPrice[]
  entitlements?: EntitlementInput[]
}

export interface UpdateOfferingInput extends OfferingFields {
  version?: number
}

async function expand(db: Db, scope: Scope, kind: OfferingKind, rows: store.OfferingRow[]): Promise<OfferingView[]> {
  const ids = rows.map((r) => r.id)
  const [prices, entitlements] = [await priceViews(db, scope, await pricesOf(db, scope, ids)), await entitlementsOf(db, scope, ids)]
  return rows.map((row) => ({
    ...row,
    prices: prices.filter((p) => p.entity_id === row.id),
    entitlements: entitlements.filter((e) => e.entity_id === row.id),
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

/** The published plan or addon with this lookup_key. */
export async function getOfferingByLookupKey(deps: Deps, actor: Actor, kind: OfferingKind, lookupKey: string): Promise<OfferingView> {
  const row = await findPublishedBy<store.OfferingRow>(deps.sql, kind.table, actor, 'lookup_key', lookupKey)
  if (!row) throw notFound(`${kind.table.noun} with lookup_key`, lookupKey)
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

export interface CloneOfferingInput {
  name?: string
  lookup_key?: string | null
  description?: string | null
  display_order?: number
  metadata?: Record<string, string>
}

/** Work a higher domain does when an offering is cloned, in the clone's transaction (the credits domain copies a plan's credit grants). */
type Copier = (tx: Tx, actor: Actor, audit: Audit, kind: OfferingKind, fromId: string, toId: string) => Promise<void>
const copiers: Copier[] = []
export const copyWithOfferings = (copier: Copier): void => void copiers.push(copier)

/**
 * A new plan or addon made from a published one: its fields (overridden by the request; the lookup key is
 * the request's or none), copies of its prices (without lookup keys) and entitlements, in one transaction.
 */
export async function cloneOffering(deps: Deps, actor: Actor, kind: OfferingKind, id: string, input: CloneOfferingInput): Promise<OfferingView> {
  const source = (await expand(deps.sql, actor, kind, [await requireRecord<store.OfferingRow>(deps.sql, kind.table, actor, id, { published: true })]))[0]
  const { id: _id, tenant_id: _t, environment_id: _e, created_at: _ca, created_by: _cb, updated_at: _ua, updated_by: _ub, version: _v, status: _s, prices, entitlements, ...kept } = source
  const fields = { ...kept, name: `${source.name} (copy)`, lookup_key: null, ...input }
  const audit = auditOf(deps, actor)
  return uniquely(kind.table.noun, [lookupKey(kind, fields.lookup_key)], () =>
    transaction(deps, async (tx) => {
      const row = await insertRecord<store.OfferingRow>(tx, kind.table, actor, audit, fields)
      const owner = { entity_type: kind.entityType, entity_id: row.id }
      await copyPrices(tx, actor, audit, owner, prices)
      const terms = entitlements.map(({ feature_id, is_enabled, usage_limit, usage_reset_period, is_soft_limit, static_value, display_order, metadata }) => ({
        feature_id,
        is_enabled,
        usage_limit,
        usage_reset_period,
        is_soft_limit,
        static_value,
        display_order,
        metadata,
      }))
      await createEntitlementsIn(tx, actor, audit, owner, terms, 'entitlements')
      for (const copy of copiers) await copy(tx, actor, audit, kind, source.id, row.id)
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
