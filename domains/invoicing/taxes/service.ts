// Taxes: rates (percentage or fixed, the amounts are core/billing/taxes.ts's) and their associations.
// An invoice takes the rates of the most specific level that has any (Flexprice's chain): the
// subscription's tax_rate_overrides or associations, else the customer's, else the tenant's.
import { moneyAmount, percentage } from '../../../core/billing/amounts.ts'
import type { TaxRate } from '../../../core/billing/taxes.ts'
import { AppError, validationError } from '../../../core/errors.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Db } from '../../../infra/postgres.ts'
import { deleteRecord, filterConditions, findRecords, insertRecord, listRecords, requireRecord, updateRecord } from '../../../infra/records.ts'
import { findCustomerByExternalId, requireCustomer } from '../../customers/service.ts'
import { type ListRequest, type Page, page } from '../../../core/list.ts'
import { auditOf, referenced, transaction, uniquely } from '../../records/service.ts'
import { toWire } from '../../records/wire.ts'
import { requireSubscription } from '../../subscriptions/read.ts'
import { subscriptionReferences } from '../../subscriptions/service.ts'
import { recordService } from '../../records/crud.ts'
import * as store from './store.ts'


export const FILTERS = store.FILTERS
export const ASSOCIATION_FILTERS = store.ASSOCIATION_FILTERS

export interface CreateTaxRateInput {
  name: string
  code: string
  description?: string
  tax_rate_type: 'percentage' | 'fixed'
  percentage_value?: string
  fixed_value?: string
  scope?: 'INTERNAL' | 'EXTERNAL' | 'ONETIME'
  metadata?: Record<string, string>
}

export interface UpdateTaxRateInput {
  name?: string
  description?: string | null
  tax_rate_status?: 'ACTIVE' | 'INACTIVE'
  metadata?: Record<string, string>
  version?: number
}

/** A rate as an invoice applies it (and snapshots it in prepared_tax_rates), with the association it came from. */
export interface ResolvedRate extends TaxRate {
  code: string
  name: string
  tax_association_id?: string
}

export const resolved = (row: store.TaxRateRow, associationId?: string): ResolvedRate => ({
  ...(toWire({ id: row.id, code: row.code, name: row.name, tax_rate_type: row.tax_rate_type, percentage_value: row.percentage_value, fixed_value: row.fixed_value }) as unknown as ResolvedRate),
  ...(associationId && { tax_association_id: associationId }),
})

/**
 * percentage needs percentage_value in 0–100; fixed needs fixed_value, a non-negative amount (it is
 * checked against each invoice's currency when applied, e.g. "5.00" cannot tax a JPY invoice).
 */
function checked(input: CreateTaxRateInput) {
  const pct = input.tax_rate_type === 'percentage'
  const [need, other] = pct ? (['percentage_value', 'fixed_value'] as const) : (['fixed_value', 'percentage_value'] as const)
  if (input[need] === undefined) throw validationError(need, `is required for a ${input.tax_rate_type} tax rate`)
  if (input[other] !== undefined) throw validationError(other, `is not used by a ${input.tax_rate_type} tax rate`)
  return {
    ...input,
    percentage_value: pct ? percentage(input.percentage_value, 'percentage_value') : undefined,
    // Up to 3 places: the largest minor unit; each invoice checks its own currency again.
    fixed_value: pct ? undefined : moneyAmount(input.fixed_value!, 'KWD', 'fixed_value'),
    metadata: input.metadata ?? {},
  }
}

/** The code and the value are fixed once created: invoices name the rate they applied; create a new rate to change them. */
export const taxRates = recordService<store.TaxRateRow, CreateTaxRateInput, UpdateTaxRateInput>({
  table: store.RATES,
  filters: store.FILTERS,
  label: 'tax rate',
  unique: { index: store.CODE_INDEX, field: 'code' },
  checkCreate: (_deps, _actor, input) => checked(input),
})

export interface CreateAssociationInput {
  tax_rate_code: string
  entity_type?: 'tenant' | 'customer' | 'subscription'
  entity_id?: string
  /** Flexprice's way to name a customer association's customer. */
  external_customer_id?: string
  priority?: number
  auto_apply?: boolean
  currency?: string
  start_date?: string
  end_date?: string
  metadata?: Record<string, string>
}

export async function createAssociation(deps: Deps, actor: Actor, input: CreateAssociationInput): Promise<store.AssociationRow> {
  const [rate] = await store.ratesByCode(deps.sql, actor, [input.tax_rate_code])
  if (!rate) throw new AppError('not_found', `tax_rate_code: no tax rate ${input.tax_rate_code}`, { tax_rate_code: input.tax_rate_code })
  if (input.external_customer_id !== undefined) {
    if (input.entity_id !== undefined) throw validationError('external_customer_id', 'give entity_id or external_customer_id, not both')
    if ((input.entity_type ?? 'customer') !== 'customer') throw validationError('external_customer_id', 'names a customer: entity_type must be customer')
    input = { ...input, entity_type: 'customer', entity_id: (await referenced('external_customer_id', findCustomerByExternalId(deps, actor, input.external_customer_id))).id }
  }
  if (!input.entity_type) throw validationError('entity_type', 'is required (or external_customer_id)')
  let entityId = input.entity_id
  if (input.entity_type === 'tenant') entityId = actor.tenantId
  else if (!entityId) throw validationError('entity_id', `is required for entity_type ${input.entity_type}`)
  else if (input.entity_type === 'customer') await referenced('entity_id', requireCustomer(deps, actor, entityId))
  else await referenced('entity_id', requireSubscription(deps.sql, actor, entityId))
  if (input.start_date && input.end_date && input.end_date <= input.start_date) throw validationError('end_date', 'must be after start_date')
  const fields = {
    tax_rate_id: rate.id,
    entity_type: input.entity_type,
    entity_id: entityId,
    priority: input.priority ?? 0,
    auto_apply: input.auto_apply ?? true,
    currency: input.currency?.toUpperCase() ?? null,
    start_date: input.start_date ? new Date(input.start_date) : null,
    end_date: input.end_date ? new Date(input.end_date) : null,
    metadata: input.metadata ?? {},
  }
  return uniquely('tax association', [{ index: store.ASSOCIATION_INDEX, field: 'tax_rate_code', value: input.tax_rate_code }], () =>
    transaction(deps, (tx) => insertRecord<store.AssociationRow>(tx, store.ASSOCIATIONS, actor, auditOf(deps, actor), fields)),
  )
}

export const getAssociation = (deps: Deps, actor: Actor, id: string): Promise<store.AssociationRow> =>
  requireRecord<store.AssociationRow>(deps.sql, store.ASSOCIATIONS, actor, id)

export async function listAssociations(deps: Deps, actor: Actor, { params, filters }: ListRequest): Promise<Page<store.AssociationRow>> {
  const { rows, total } = await listRecords<store.AssociationRow>(deps.sql, store.ASSOCIATIONS, actor, params, filterConditions(deps.sql, store.ASSOCIATION_FILTERS, filters))
  return page(rows, total, params)
}

export interface UpdateAssociationInput {
  priority?: number
  auto_apply?: boolean
  metadata?: Record<string, string>
  version?: number
}

/** Priority, auto_apply and metadata change; the rate, the entity, the currency and the dates are what the association is. */
export const updateAssociation = (deps: Deps, actor: Actor, id: string, { version, ...fields }: UpdateAssociationInput): Promise<store.AssociationRow> =>
  transaction(deps, (tx) => updateRecord<store.AssociationRow>(tx, store.ASSOCIATIONS, actor, id, fields, { version, audit: auditOf(deps, actor) }))

export const deleteAssociation = (deps: Deps, actor: Actor, id: string): Promise<store.AssociationRow> =>
  transaction(deps, (tx) => deleteRecord<store.AssociationRow>(tx, store.ASSOCIATIONS, actor, id, auditOf(deps, actor)))

/**
 * The published rates a request names by code (`fieldOf(i)` names the i-th): a code the environment has
 * no rate for is not_found; with `active`, an inactive rate is a validation_error.
 */
export async function ratesForCodes(db: Db, scope: Scope, codes: string[], fieldOf: (i: number) => string, options: { active: boolean }): Promise<store.TaxRateRow[]> {
  const rows = await store.ratesByCode(db, scope, codes)
  return codes.map((code, i) => {
    const row = rows.find((r) => r.code === code)
    if (!row) throw new AppError('not_found', `${fieldOf(i)}: no tax rate with code ${code}`, { id: code, [fieldOf(i)]: code })
    if (options.active && row.tax_rate_status !== 'ACTIVE') throw validationError(fieldOf(i), `tax rate ${code} is not active`)
    return row
  })
}

/** Active published rates by id: an id the environment has no published rate for is not_found on `field[i]`, an inactive rate a validation_error. */
export async function ratesForIds(db: Db, scope: Scope, ids: string[], field: string): Promise<store.TaxRateRow[]> {
  const rows = await findRecords<store.TaxRateRow>(db, store.RATES, scope, ids)
  return ids.map((id, i) => {
    const row = rows.find((r) => r.id === id && r.status === 'published')
    if (!row) throw new AppError('not_found', `${field}[${i}]: tax rate ${id} not found`, { id, [`${field}[${i}]`]: id })
    if (row.tax_rate_status !== 'ACTIVE') throw validationError(`${field}[${i}]`, `tax rate ${id} is not active`)
    return row
  })
}

// A subscription's tax_rate_overrides must name rates of its environment (applied or not, active or not yet).
subscriptionReferences.register(async (db, scope, input) => {
  const codes = (input.tax_rate_overrides ?? []).map((o) => String(o.tax_rate_code))
  await ratesForCodes(db, scope, codes, (i) => `tax_rate_overrides[${i}].tax_rate_code`, { active: false })
})

export interface TaxTarget {
  customerId: string
  subscriptionId?: string | null
  overrides?: { tax_rate_code: string; auto_apply?: boolean; currency?: string }[]
}

export type TaxResolver = (target: TaxTarget, currency: string, at: Date) => ResolvedRate[]

/**
 * The rates invoices take automatically, for many targets read at once: the first level with any
 * wins, the subscription (its tax_rate_overrides with auto_apply, else its associations), then the
 * customer, then the tenant; associations count in their currency and dates, by priority.
 */
export async function taxResolver(db: Db, scope: Scope, targets: TaxTarget[]): Promise<TaxResolver> {
  const levels = (t: TaxTarget) => [...(t.subscriptionId ? [{ type: 'subscription', id: t.subscriptionId }] : []), { type: 'customer', id: t.customerId }, { type: 'tenant', id: scope.tenantId }]
  const associations = await store.automaticOf(db, scope, targets.flatMap(levels))
  const codes = [...new Set(targets.flatMap((t) => (t.overrides ?? []).map((o) => o.tax_rate_code)))]
  const byCode = new Map((await store.ratesByCode(db, scope, codes)).filter((r) => r.tax_rate_status === 'ACTIVE').map((r) => [r.code, r]))
  const rates = new Map((await findRecords<store.TaxRateRow>(db, store.RATES, scope, associations.map((a) => a.tax_rate_id))).map((r) => [r.id, r]))
  return (target, currency, at) => {
    const cur = currency.toUpperCase()
    const overrides = (target.overrides ?? []).filter((o) => o.auto_apply !== false && (!o.currency || o.currency.toUpperCase() === cur))
    if (overrides.length > 0) {
      return overrides.map((o, i) => {
        const rate = byCode.get(o.tax_rate_code)
        if (!rate) throw validationError(`tax_rate_overrides[${i}]`, `no active tax rate with code ${o.tax_rate_code}`)
        return resolved(rate)
      })
    }
    const live = associations.filter((a) => (!a.currency || a.currency === cur) && (!a.start_date || a.start_date <= at) && (!a.end_date || a.end_date > at))
    const level = levels(target).find((l) => live.some((a) => a.entity_type === l.type && a.entity_id === l.id))
    return live.flatMap((a) => {
      const rate = rates.get(a.tax_rate_id)
      const applies = a.entity_type === level?.type && a.entity_id === level.id && rate?.status === 'published' && rate.tax_rate_status === 'ACTIVE'
      return applies ? [resolved(rate!, a.id)] : []
    })
  }
}

export async function automaticRates(db: Db, scope: Scope, target: TaxTarget, currency: string, at: Date): Promise<ResolvedRate[]> {
  return (await taxResolver(db, scope, [target]))(target, currency, at)
}
