// Cost sheets (Flexprice's costsheet, /v1/costs): what serving usage costs you. A sheet is a named record; its unit
// costs are prices with entity_type COSTSHEET, made through the price routes (this domain plugs the check of their
// owner into the catalog's prices). The active sheet of an environment is its newest published one, as Flexprice
// answers GET /v1/costs/active; cost analytics prices usage with it (analytics.ts).
import { validationError } from '../../core/errors.ts'
import { type ListRequest, type Page, page } from '../../core/list.ts'
import type { Actor, Scope } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import { deleteRecord, filterConditions, insertRecord, listRecords, requireRecord, updateRecord } from '../../infra/records.ts'
import { deletePrice, expandedPrices, pricesOf } from '../catalog/prices/service.ts'
import { useCostsheetOwner } from '../catalog/prices/owners.ts'
import { auditOf, inTransaction, referenced, transaction, uniquely, type UniqueKey } from '../records/service.ts'
import * as store from './store.ts'

export type { CostsheetRow } from './store.ts'
export const FILTERS = store.FILTERS

export interface CostsheetInput {
  name?: string
  lookup_key?: string
  description?: string
  metadata?: Record<string, string>
}

const keys = (input: CostsheetInput): UniqueKey[] => [
  { index: store.NAME_INDEX, field: 'name', value: input.name },
  { index: store.LOOKUP_KEY_INDEX, field: 'lookup_key', value: input.lookup_key },
]

export const createCostsheet = (deps: Deps, actor: Actor, input: CostsheetInput & { name: string }): Promise<store.CostsheetRow> =>
  uniquely('costsheet', keys(input), () =>
    transaction(deps, (tx) => insertRecord<store.CostsheetRow>(tx, store.COSTSHEETS, actor, auditOf(deps, actor), { ...input, metadata: input.metadata ?? {} })),
  )

export const getCostsheet = (deps: Deps, actor: Actor, id: string): Promise<store.CostsheetRow> => requireRecord<store.CostsheetRow>(deps.sql, store.COSTSHEETS, actor, id)

export async function listCostsheets(deps: Deps, actor: Actor, { params, filters }: ListRequest): Promise<Page<store.CostsheetRow>> {
  const { rows, total } = await listRecords<store.CostsheetRow>(deps.sql, store.COSTSHEETS, actor, params, filterConditions(deps.sql, store.FILTERS, filters))
  return page(rows, total, params)
}

/** Only the fields given change (Flexprice's update: an empty field leaves the sheet's as it is). */
export const updateCostsheet = (deps: Deps, actor: Actor, id: string, input: CostsheetInput): Promise<store.CostsheetRow> =>
  uniquely('costsheet', keys(input), () => transaction(deps, (tx) => updateRecord<store.CostsheetRow>(tx, store.COSTSHEETS, actor, id, input, { audit: auditOf(deps, actor) })))

/** The sheet and its prices leave together: a deleted sheet's unit costs price nothing. */
export const deleteCostsheet = (deps: Deps, actor: Actor, id: string): Promise<store.CostsheetRow> =>
  transaction(deps, async (tx) => {
    const sheet = await deleteRecord<store.CostsheetRow>(tx, store.COSTSHEETS, actor, id, auditOf(deps, actor))
    const within = inTransaction(deps, tx)
    for (const price of await pricesOf(tx, actor, [id])) await deletePrice(within, actor, price.id)
    return sheet
  })


/** Sheets as answered, each with its prices (as the price routes answer them) when `withPrices`. */
export async function costsheetViews(deps: Deps, scope: Scope, sheets: store.CostsheetRow[], withPrices: boolean) {
  if (!withPrices) return sheets
  const prices = await expandedPrices(deps, scope, await pricesOf(deps.sql, scope, sheets.map((s) => s.id)))
  return sheets.map((s) => ({ ...s, prices: prices.filter((p) => p.entity_id === s.id) }))
}

/** The active sheet: the environment's newest published one; undefined when it has none. */
export async function activeCostsheet(deps: Deps, scope: Scope): Promise<store.CostsheetRow | undefined> {
  const { rows } = await listRecords<store.CostsheetRow>(deps.sql, store.COSTSHEETS, scope, { limit: 1, offset: 0, sort: 'created_at', order: 'desc', status: 'published', metadata: {} })
  return rows[0]
}

// A price naming a sheet: the sheet is published in the caller's environment, and the price says what a unit of a
// meter costs (a USAGE price); a fixed fee has no usage to price.
useCostsheetOwner(async (db, scope, costsheetId, terms) => {
  await referenced('entity_id', requireRecord(db, store.COSTSHEETS, scope, costsheetId, { published: true }))
  if (terms.type !== 'USAGE') throw validationError('type', "a cost sheet's price is a USAGE price: what a unit of its meter costs you")
})
