// Price units: a catalog of custom units (credits, tokens) prices may be set in, each with its base currency
// and the rate one unit is worth in it. The code, base currency and rate are fixed once created (prices copy
// them and bill from them); only the name and metadata change. A unit prices still use is not deleted.
import { validationError, notFound } from '../../../core/errors.ts'
import { minorUnits } from '../../../core/money.ts'
import { conversionRate } from '../../../core/price-units.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Db } from '../../../infra/postgres.ts'
import { findPublishedBy, findRecords, requireRecord } from '../../../infra/records.ts'
import { recordService } from '../../records/crud.ts'
import { guards } from '../../records/guards.ts'
import * as store from './store.ts'

export type { PriceUnitRow } from './store.ts'
export const FILTERS = store.FILTERS

export interface CreatePriceUnitInput {
  name: string
  code: string
  symbol: string
  base_currency: string
  conversion_rate: string
  metadata?: Record<string, string>
}

export interface UpdatePriceUnitInput {
  name?: string
  metadata?: Record<string, string>
  version?: number
}

/** Checks run before a unit is deleted; prices register theirs (a unit in use stays). */
export const priceUnitDeletion = guards()

function checkCreate(_deps: Deps, _actor: Actor, input: CreatePriceUnitInput): Record<string, unknown> {
  try {
    minorUnits(input.base_currency)
  } catch (err) {
    throw validationError('base_currency', (err as Error).message)
  }
  let rate
  try {
    rate = conversionRate(input.conversion_rate)
  } catch (err) {
    throw validationError('conversion_rate', (err as Error).message.replace(/^conversion_rate: /, ''))
  }
  return { ...input, code: input.code.toUpperCase(), base_currency: input.base_currency.toUpperCase(), conversion_rate: rate, metadata: input.metadata ?? {} }
}

export const priceUnits = recordService<store.PriceUnitRow, CreatePriceUnitInput, UpdatePriceUnitInput>({
  table: store.PRICE_UNITS,
  filters: store.FILTERS,
  label: 'price unit',
  unique: { index: store.CODE_INDEX, field: 'code' },
  checkCreate,
  deletion: priceUnitDeletion,
})

/** GET /v1/prices/units/code/{code}: the published unit with this code (any case). */
export async function getPriceUnitByCode(deps: Deps, actor: Actor, code: string): Promise<store.PriceUnitRow> {
  const row = await findPublishedBy<store.PriceUnitRow>(deps.sql, store.PRICE_UNITS, actor, 'code', code.toUpperCase())
  if (!row) throw notFound('price unit with code', code)
  return row
}

/** The published unit a new price names, by id or by code; undefined when no unit of the catalog has that code. */
export async function findPriceUnit(db: Db, scope: Scope, ref: { id?: string; code?: string }): Promise<store.PriceUnitRow | undefined> {
  if (ref.id) return requireRecord<store.PriceUnitRow>(db, store.PRICE_UNITS, scope, ref.id, { published: true })
  return ref.code ? findPublishedBy<store.PriceUnitRow>(db, store.PRICE_UNITS, scope, 'code', ref.code.toUpperCase()) : undefined
}

/** Units by id in any status (a price keeps showing the unit it was made in), for embedding. */
export async function priceUnitsByIds(db: Db, scope: Scope, ids: string[]): Promise<Map<string, store.PriceUnitRow>> {
  return new Map((await findRecords<store.PriceUnitRow>(db, store.PRICE_UNITS, scope, ids)).map((u) => [u.id, u]))
}
