// Who a price belongs to: a plan or addon of the catalog, or a cost sheet (Flexprice's entity_type COSTSHEET:
// what a unit of a meter costs you). Cost sheets belong to the costs domain, above this one, so it plugs in the
// check of a sheet owner when it loads (useCostsheetOwner); with none plugged in, a COSTSHEET price is refused
// rather than stored without its sheet.
import { validationError } from '../../../core/errors.ts'
import type { PriceTerms } from '../../../core/price-rules.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Db } from '../../../infra/postgres.ts'
import { entityOf, requireOwner, type EntityInput, type EntityRef } from '../offerings/kinds.ts'
import type { PriceOwnerType } from './store.ts'

export interface PriceOwnerRef {
  entity_type: PriceOwnerType
  entity_id: string
}

export interface PriceOwnerInput extends Omit<EntityInput, 'entity_type'> {
  entity_type?: PriceOwnerType
}

/** Checks that a cost sheet may take a price with these terms (it exists, the terms fit); refuses by throwing. */
export type CostsheetOwner = (db: Db, scope: Scope, costsheetId: string, terms: PriceTerms) => Promise<void>

let costsheets: CostsheetOwner | undefined

export function useCostsheetOwner(check: CostsheetOwner): void {
  costsheets = check
}

/** The owner a price request names: plan_id, or entity_type with entity_id. */
export function priceOwnerOf(input: PriceOwnerInput): PriceOwnerRef {
  if (input.entity_type !== 'COSTSHEET') return entityOf(input as EntityInput)
  if (input.plan_id) throw validationError('plan_id', 'a COSTSHEET price names its sheet by entity_id, not plan_id')
  if (!input.entity_id) throw validationError('entity_id', 'is required with entity_type COSTSHEET')
  return { entity_type: 'COSTSHEET', entity_id: input.entity_id }
}

/** The published owner of a new price; missing, it is not_found naming the request's field. */
export async function requirePriceOwner(db: Db, scope: Scope, input: PriceOwnerInput, owner: PriceOwnerRef, terms: PriceTerms): Promise<void> {
  if (owner.entity_type !== 'COSTSHEET') {
    await requireOwner(db, scope, input as EntityInput, owner as EntityRef)
    return
  }
  if (!costsheets) throw new Error('no cost sheet owner is plugged into prices: load domains/costs/service.ts')
  await costsheets(db, scope, owner.entity_id, terms)
}
