// Prices: the terms a plan or addon charges. The rules live in core/price-rules.ts; this service checks
// the meter of usage prices through the meter service and keeps a price's billing terms fixed once
// created (subscriptions bill from them): only its names, lookup key and metadata change.
import { notFound } from '../../../core/errors.ts'
import { displayAmount } from '../../../core/money.ts'
import { priceTerms, type PriceInput, type PriceTerms } from '../../../core/price-rules.ts'
import type { PriceWindow } from '../../../core/billing/price-window.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Db, Tx } from '../../../infra/postgres.ts'
import { deleteRecord, filterConditions, findPublishedBy, findRecords, insertRecords, listRecords, publishedIn, requireRecord, updateRecord, type Audit } from '../../../infra/records.ts'
import { requireMeter } from '../features/service.ts'
import { requireGroup } from '../groups/service.ts'
import { type ListRequest, type Page, page } from '../../../core/list.ts'
import { entityOf, requireOwner, type EntityRef, type EntityInput } from '../offerings/kinds.ts'
import { auditOf, referenced, transaction, uniquely, within, type UniqueKey } from '../../records/service.ts'
import * as store from './store.ts'

export type { PriceRow } from './store.ts'
export const FILTERS = store.FILTERS

export interface PriceDetails {
  lookup_key?: string | null
  description?: string | null
  display_name?: string | null
  group_id?: string | null
  metadata?: Record<string, string>
}

export type NewPrice = PriceInput & PriceDetails
export type CreatePriceInput = NewPrice & EntityInput
export interface UpdatePriceInput extends PriceDetails {
  version?: number
}

/** A price checked and ready to store. */
export interface PreparedPrice {
  terms: PriceTerms
  details: PriceDetails
}

/**
 * Checks prices before the transaction that stores them: the rules, and each usage price's meter
 * through the meter service (outside the transaction, which holds the embedded engine's one connection).
 */
export async function preparePrices(deps: Deps, scope: Scope, inputs: NewPrice[], field: string | null = 'prices'): Promise<PreparedPrice[]> {
  const prepared: PreparedPrice[] = []
  for (const [i, input] of inputs.entries()) {
    const { lookup_key, description, display_name, group_id, metadata, ...rules } = input
    const check = async () => {
      const t = priceTerms(rules)
      if (t.meter_id) await requireMeter(deps, scope, t.meter_id)
      if (group_id) await requireGroup(deps.sql, scope, group_id, 'price')
      return t
    }
    const terms = await (field === null ? check() : within(`${field}[${i}]`, check))
    prepared.push({ terms, details: { lookup_key, description, display_name, group_id, metadata } })
  }
  return prepared
}

export const priceKeys = (prices: { details: PriceDetails }[]): UniqueKey[] =>
  prices.map((p) => ({ index: store.LOOKUP_KEY_INDEX, field: 'lookup_key', value: p.details.lookup_key }))

export const insertPrices = (tx: Tx, scope: Scope, audit: Audit, entity: EntityRef, prices: PreparedPrice[]): Promise<store.PriceRow[]> =>
  insertRecords<store.PriceRow>(
    tx,
    store.PRICES,
    scope,
    audit,
    prices.map((p) => ({ ...p.terms, ...p.details, metadata: p.details.metadata ?? {}, ...entity })),
  )

export async function createPrice(deps: Deps, actor: Actor, input: CreatePriceInput): Promise<store.PriceRow> {
  const { plan_id, entity_type, entity_id, ...price } = input
  const entity = entityOf({ plan_id, entity_type, entity_id })
  // Reported without the list prefix: this request is one price.
  const [prepared] = await preparePrices(deps, actor, [price], null)
  return uniquely('price', priceKeys([prepared]), () =>
    transaction(deps, async (tx) => {
      await requireOwner(tx, actor, { plan_id, entity_type, entity_id }, entity)
      const [row] = await insertPrices(tx, actor, auditOf(deps, actor), entity, [prepared])
      return row
    }),
  )
}

/** Several prices, each of its own plan or addon, in one transaction: all are made or none (errors name items[i]). */
export async function createPricesBulk(deps: Deps, actor: Actor, items: CreatePriceInput[]): Promise<store.PriceRow[]> {
  const entities: EntityRef[] = []
  for (const [i, { plan_id, entity_type, entity_id }] of items.entries()) entities.push(await within(`items[${i}]`, () => entityOf({ plan_id, entity_type, entity_id })))
  const prepared = await preparePrices(deps, actor, items.map(({ plan_id: _p, entity_type: _t, entity_id: _e, ...price }) => price), 'items')
  return uniquely('price', priceKeys(prepared), () =>
    transaction(deps, async (tx) => {
      const rows: store.PriceRow[] = []
      for (const [i, entity] of entities.entries()) {
        const { plan_id, entity_type, entity_id } = items[i]
        await within(`items[${i}]`, () => requireOwner(tx, actor, { plan_id, entity_type, entity_id }, entity))
        rows.push(...(await insertPrices(tx, actor, auditOf(deps, actor), entity, [prepared[i]])))
      }
      return rows
    }),
  )
}

/** Copies of prices for another plan or addon (a clone): the same terms, without their lookup keys (those stay unique). */
export function copyPrices(tx: Tx, scope: Scope, audit: Audit, entity: EntityRef, prices: (store.PriceRow | PriceView)[]): Promise<store.PriceRow[]> {
  // A view's display fields are derived, not columns.
  const copies = prices.map(({ id: _id, tenant_id: _t, environment_id: _e, created_at: _ca, created_by: _cb, updated_at: _ua, updated_by: _ub, version: _v, status: _s, display_amount: _d, pricing_unit: _p, ...terms }: Partial<PriceView>) => ({
    ...terms,
    lookup_key: null,
    ...entity,
  }))
  return insertRecords<store.PriceRow>(tx, store.PRICES, scope, audit, copies)
}

export const getPrice = (deps: Deps, actor: Actor, id: string): Promise<store.PriceRow> =>
  requireRecord<store.PriceRow>(deps.sql, store.PRICES, actor, id)

/** A published price a new record (a subscription line item) may take. */
export const requirePrice = (db: Db, scope: Scope, id: string): Promise<store.PriceRow> =>
  referenced('price_id', requireRecord<store.PriceRow>(db, store.PRICES, scope, id, { published: true }))

export async function getPriceByLookupKey(deps: Deps, actor: Actor, lookupKey: string): Promise<store.PriceRow> {
  const row = await findPublishedBy<store.PriceRow>(deps.sql, store.PRICES, actor, 'lookup_key', lookupKey)
  if (!row) throw notFound('price with lookup_key', lookupKey)
  return row
}

export async function listPrices(deps: Deps, actor: Actor, { params, filters }: ListRequest): Promise<Page<store.PriceRow>> {
  const { rows, total } = await listRecords<store.PriceRow>(deps.sql, store.PRICES, actor, params, filterConditions(deps.sql, store.FILTERS, filters))
  return page(rows, total, params)
}

/** The published prices of plans or addons, oldest first. */
export function pricesOf(db: Db, scope: Scope, entityIds: string[]): Promise<store.PriceRow[]> {
  return publishedIn<store.PriceRow>(db, store.PRICES, scope, 'entity_id', entityIds)
}

/**
 * A price as answered: its amount as people read it (display_amount, "$12.00") and, for a custom price unit,
 * that unit as Flexprice's pricing_unit object (code, base currency, conversion rate); null for fiat prices.
 */
export type PriceView = ReturnType<typeof priceView>

export function priceView(row: store.PriceRow) {
  const custom = row.price_unit_type === 'CUSTOM' && row.price_unit
  return {
    ...row,
    display_amount: displayAmount(row.amount, row.currency),
    pricing_unit: custom ? { code: row.price_unit, base_currency: row.currency, conversion_rate: row.conversion_rate } : null,
  }
}

/** When each price is in force, by id (deleted prices included: lines keep billing from them). */
export async function priceWindows(db: Db, scope: Scope, ids: string[]): Promise<Map<string, PriceWindow>> {
  const rows = ids.length === 0 ? [] : await findRecords<store.PriceRow>(db, store.PRICES, scope, [...new Set(ids)])
  return new Map(rows.map((r) => [r.id, { start_date: r.start_date, end_date: r.end_date }]))
}

export async function updatePrice(deps: Deps, actor: Actor, id: string, input: UpdatePriceInput): Promise<store.PriceRow> {
  const { version, ...details } = input
  if (details.group_id) await requireGroup(deps.sql, actor, details.group_id, 'price')
  return uniquely('price', [{ index: store.LOOKUP_KEY_INDEX, field: 'lookup_key', value: details.lookup_key }], () =>
    transaction(deps, (tx) => updateRecord<store.PriceRow>(tx, store.PRICES, actor, id, details, { version, audit: auditOf(deps, actor) })),
  )
}

/** Existing subscriptions keep billing a deleted price from their line items' snapshots. */
export const deletePrice = (deps: Deps, actor: Actor, id: string): Promise<store.PriceRow> =>
  transaction(deps, (tx) => deleteRecord<store.PriceRow>(tx, store.PRICES, actor, id, auditOf(deps, actor)))
