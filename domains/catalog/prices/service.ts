// Prices: the terms a plan or addon charges. The rules live in core/price-rules.ts; this service checks
// the meter of usage prices through the meter service and keeps a price's billing terms fixed once
// created (subscriptions bill from them): only its names, lookup key and metadata change.
import { invalidOperation, notFound, validationError } from '../../../core/errors.ts'
import { D, displayAmount } from '../../../core/money.ts'
import { priceTerms, type PriceInput, type PriceTerms } from '../../../core/price-rules.ts'
import { displayUnitAmount } from '../../../core/price-units.ts'
import type { Tier } from '../../../core/pricing/tiered.ts'
import type { PriceWindow } from '../../../core/billing/price-window.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Db, Tx } from '../../../infra/postgres.ts'
import { deleteRecord, filterConditions, findPublishedBy, findRecords, insertRecords, listRecords, publishedIn, requireRecord, updateRecord, type Audit } from '../../../infra/records.ts'
import { requireMeter } from '../features/service.ts'
import { groupsByIds, requireGroup } from '../groups/service.ts'
import { metersByIds } from '../meters/service.ts'
import { findPriceUnit, priceUnitDeletion, priceUnitsByIds, type PriceUnitRow } from '../price-units/service.ts'
import { type ListRequest, type Page, page } from '../../../core/list.ts'
import type { EntityType } from '../entitlements/store.ts'
import { priceOwnerOf, requirePriceOwner, type PriceOwnerInput, type PriceOwnerRef } from './owners.ts'
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

/** Flexprice's way to set a CUSTOM price: the unit's code and the amount (or tiers) in that unit. */
interface PriceUnitConfig {
  price_unit: string
  amount?: string
  price_unit_tiers?: Tier[]
}

/** A CUSTOM price names its unit by price_unit_id, or by code (price_unit, or price_unit_config's). */
interface UnitChoice {
  price_unit_id?: string
  price_unit_config?: PriceUnitConfig
}

export type NewPrice = PriceInput & PriceDetails & UnitChoice
export type CreatePriceInput = NewPrice & PriceOwnerInput
export interface UpdatePriceInput extends PriceDetails {
  version?: number
}

/** A price checked and ready to store. */
export interface PreparedPrice {
  terms: PriceTerms
  details: PriceDetails
  price_unit_id: string | null
}

/**
 * A CUSTOM price's unit: the catalog unit it names (by id, or by code when the catalog has that code) gives the
 * code and the rate, and the price's currency must be the unit's base currency. A code the catalog does not have
 * is a unit of the price's own, with the conversion_rate the price gives.
 */
async function unitOf(db: Db, scope: Scope, given: PriceInput & UnitChoice): Promise<{ rules: PriceInput; unit: PriceUnitRow | undefined }> {
  const { price_unit_id, price_unit_config: config, ...rules } = given
  if (config) {
    for (const f of ['price_unit', 'price_unit_amount', 'price_unit_tiers'] as const) if (rules[f] !== undefined) throw validationError(f, 'give price_unit_config or the price_unit fields, not both')
    Object.assign(rules, { price_unit: config.price_unit, price_unit_amount: config.amount, price_unit_tiers: config.price_unit_tiers })
  }
  if (price_unit_id !== undefined && rules.price_unit_type !== 'CUSTOM') throw validationError('price_unit_id', 'is only allowed with price_unit_type CUSTOM')
  if (rules.price_unit_type !== 'CUSTOM') return { rules, unit: undefined }
  const unit = price_unit_id !== undefined ? await referenced('price_unit_id', findPriceUnit(db, scope, { id: price_unit_id })) : await findPriceUnit(db, scope, { code: rules.price_unit })
  if (!unit) return { rules, unit }
  if (rules.price_unit && rules.price_unit.toUpperCase() !== unit.code) throw validationError('price_unit', `is ${rules.price_unit}, but price unit ${unit.id} is ${unit.code}`)
  if (rules.conversion_rate !== undefined && !new D(rules.conversion_rate).eq(unit.conversion_rate)) {
    throw validationError('conversion_rate', `is price unit ${unit.code}'s, ${unit.conversion_rate.toFixed()}: leave it out`)
  }
  if (rules.currency.toUpperCase() !== unit.base_currency) throw validationError('currency', `must be price unit ${unit.code}'s base currency, ${unit.base_currency}`)
  return { rules: { ...rules, price_unit: unit.code, conversion_rate: unit.conversion_rate.toFixed() }, unit }
}

/**
 * Checks prices before the transaction that stores them: the rules, and each usage price's meter
 * through the meter service (outside the transaction, which holds the embedded engine's one connection).
 */
export async function preparePrices(deps: Deps, scope: Scope, inputs: NewPrice[], field: string | null = 'prices'): Promise<PreparedPrice[]> {
  const prepared: PreparedPrice[] = []
  for (const [i, input] of inputs.entries()) {
    const { lookup_key, description, display_name, group_id, metadata, ...given } = input
    const check = async () => {
      const { rules, unit } = await unitOf(deps.sql, scope, given)
      const terms = priceTerms(rules)
      if (terms.meter_id) await requireMeter(deps, scope, terms.meter_id)
      if (group_id) await requireGroup(deps.sql, scope, group_id, 'price')
      return { terms, price_unit_id: unit?.id ?? null }
    }
    const { terms, price_unit_id } = await (field === null ? check() : within(`${field}[${i}]`, check))
    prepared.push({ terms, details: { lookup_key, description, display_name, group_id, metadata }, price_unit_id })
  }
  return prepared
}

export const priceKeys = (prices: { details: PriceDetails }[]): UniqueKey[] =>
  prices.map((p) => ({ index: store.LOOKUP_KEY_INDEX, field: 'lookup_key', value: p.details.lookup_key }))

export const insertPrices = (tx: Tx, scope: Scope, audit: Audit, entity: PriceOwnerRef, prices: PreparedPrice[]): Promise<store.PriceRow[]> =>
  insertRecords<store.PriceRow>(
    tx,
    store.PRICES,
    scope,
    audit,
    prices.map((p) => ({ ...p.terms, ...p.details, metadata: p.details.metadata ?? {}, price_unit_id: p.price_unit_id, ...entity })),
  )

export async function createPrice(deps: Deps, actor: Actor, input: CreatePriceInput): Promise<store.PriceRow> {
  const { plan_id, entity_type, entity_id, ...price } = input
  const entity = priceOwnerOf({ plan_id, entity_type, entity_id })
  // Reported without the list prefix: this request is one price.
  const [prepared] = await preparePrices(deps, actor, [price], null)
  return uniquely('price', priceKeys([prepared]), () =>
    transaction(deps, async (tx) => {
      await requirePriceOwner(tx, actor, { plan_id, entity_type, entity_id }, entity, prepared.terms)
      const [row] = await insertPrices(tx, actor, auditOf(deps, actor), entity, [prepared])
      return row
    }),
  )
}

/** Several prices, each of its own plan or addon, in one transaction: all are made or none (errors name items[i]). */
export async function createPricesBulk(deps: Deps, actor: Actor, items: CreatePriceInput[]): Promise<store.PriceRow[]> {
  const entities: PriceOwnerRef[] = []
  for (const [i, { plan_id, entity_type, entity_id }] of items.entries()) entities.push(await within(`items[${i}]`, () => priceOwnerOf({ plan_id, entity_type, entity_id })))
  const prepared = await preparePrices(deps, actor, items.map(({ plan_id: _p, entity_type: _t, entity_id: _e, ...price }) => price), 'items')
  return uniquely('price', priceKeys(prepared), () =>
    transaction(deps, async (tx) => {
      const rows: store.PriceRow[] = []
      for (const [i, entity] of entities.entries()) {
        const { plan_id, entity_type, entity_id } = items[i]
        await within(`items[${i}]`, () => requirePriceOwner(tx, actor, { plan_id, entity_type, entity_id }, entity, prepared[i].terms))
        rows.push(...(await insertPrices(tx, actor, auditOf(deps, actor), entity, [prepared[i]])))
      }
      return rows
    }),
  )
}

/** Copies of prices for another plan or addon (a clone): the same terms, without their lookup keys (those stay unique). */
export function copyPrices(tx: Tx, scope: Scope, audit: Audit, entity: PriceOwnerRef, prices: (store.PriceRow | PriceView)[]): Promise<store.PriceRow[]> {
  // A view's display fields are derived, not columns.
  const copies = prices.map(({ id: _id, tenant_id: _t, environment_id: _e, created_at: _ca, created_by: _cb, updated_at: _ua, updated_by: _ub, version: _v, status: _s, display_amount: _d, pricing_unit: _p, display_price_unit_amount: _u, ...terms }: Partial<PriceView>) => ({
    ...terms,
    lookup_key: null,
    ...entity,
  }))
  return insertRecords<store.PriceRow>(tx, store.PRICES, scope, audit, copies)
}

export const getPrice = (deps: Deps, actor: Actor, id: string): Promise<store.PriceRow> =>
  requireRecord<store.PriceRow>(deps.sql, store.PRICES, actor, id)

/** A price of a plan or addon: what a customer is charged. */
export type OfferingPriceRow = store.PriceRow & { entity_type: EntityType }

/** A published price a new record (a subscription line item) may take; a cost sheet's is not one (it prices what usage costs you). */
export const requirePrice = (db: Db, scope: Scope, id: string): Promise<OfferingPriceRow> =>
  referenced(
    'price_id',
    requireRecord<store.PriceRow>(db, store.PRICES, scope, id, { published: true }).then((row) => {
      if (row.entity_type === 'COSTSHEET') throw notFound('price', id)
      return row as OfferingPriceRow
    }),
  )

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

/** A unit of the price's own (not in the catalog): its code, base currency and rate. */
interface OwnUnit {
  code: string
  base_currency: string
  conversion_rate: store.PriceRow['conversion_rate']
}

/**
 * A price as answered: its amount as people read it (display_amount, "$12.00") and, for a CUSTOM price, its unit as
 * Flexprice's pricing_unit (the catalog's record, or the code, base currency and rate of a unit of the price's own)
 * with the amount in that unit as people read it (display_price_unit_amount, "₵250"); both null for fiat prices.
 */
export type PriceView = store.PriceRow & { display_amount: string; display_price_unit_amount: string | null; pricing_unit: PriceUnitRow | OwnUnit | null }

function priceView(row: store.PriceRow, unit: PriceUnitRow | undefined): PriceView {
  const custom = row.price_unit_type === 'CUSTOM' && row.price_unit !== null
  const inUnit = custom && row.price_unit_amount !== null ? displayUnitAmount(row.price_unit_amount, unit?.symbol ?? null, row.price_unit!) : null
  return {
    ...row,
    display_amount: displayAmount(row.amount, row.currency),
    display_price_unit_amount: inUnit,
    pricing_unit: unit ?? (custom ? { code: row.price_unit!, base_currency: row.currency, conversion_rate: row.conversion_rate } : null),
  }
}

/** Prices as answered, their catalog units read at once (db: the caller's transaction when in one). */
export async function priceViews(db: Db, scope: Scope, rows: store.PriceRow[]): Promise<PriceView[]> {
  const units = await priceUnitsByIds(db, scope, rows.flatMap((r) => (r.price_unit_id ? [r.price_unit_id] : [])))
  return rows.map((r) => priceView(r, r.price_unit_id ? units.get(r.price_unit_id) : undefined))
}

/** Prices as the price routes answer them: views with their meter and group embedded (the spec's Price.meter, Price.group; null when none). */
export async function expandedPrices(deps: Deps, scope: Scope, rows: store.PriceRow[]) {
  const views = await priceViews(deps.sql, scope, rows)
  const meters = new Map((await metersByIds(deps, scope, [...new Set(rows.flatMap((r) => (r.meter_id ? [r.meter_id] : [])))])).map((m) => [m.id, m]))
  const groups = await groupsByIds(deps.sql, scope, rows.flatMap((r) => (r.group_id ? [r.group_id] : [])))
  return views.map((v) => ({ ...v, meter: (v.meter_id && meters.get(v.meter_id)) || null, group: (v.group_id && groups.get(v.group_id)) || null }))
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

// A unit that published prices are set in stays: they bill at its rate.
priceUnitDeletion.register(async (db, scope, unitId) => {
  const used = await store.countWithUnit(db, scope, unitId)
  if (used > 0) throw invalidOperation(`the price unit is used by ${used} price(s); delete them first`, { price_unit_id: unitId, prices: used })
})
