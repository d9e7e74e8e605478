// Customers: external_id unique per environment, e-mail and ISO 3166-1 alpha-2 country checked,
// integration mappings kept with the customer. Every change writes customer.* to the outbox.
import { countryCode } from '../../core/countries.ts'
import { AppError, notFound, validationError } from '../../core/errors.ts'
import type { Actor, Scope } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import type { Db } from '../../infra/postgres.ts'
import { deleteRecord, filterConditions, findPublishedBy, findRecords, insertRecord, listRecords, publishedIn, requireRecord, updateRecord } from '../../infra/records.ts'
import { type ListRequest, type Page, page } from '../../core/list.ts'
import { announce, auditOf, referenced, transaction, uniquely, type UniqueKey } from '../records/service.ts'
import { guards } from '../records/guards.ts'
import * as store from './store.ts'

export type { CustomerRow } from './store.ts'
export const FILTERS = store.FILTERS

export interface CustomerView extends store.CustomerRow {
  integrations: store.MappingRow[]
}

interface CustomerFields {
  external_id?: string
  name?: string
  email?: string | null
  address_line1?: string | null
  address_line2?: string | null
  address_city?: string | null
  address_state?: string | null
  address_postal_code?: string | null
  address_country?: string | null
  metadata?: Record<string, string>
}

export interface CreateCustomerInput extends CustomerFields {
  external_id: string
  integrations?: store.MappingInput[]
  test_clock_id?: string
}

export interface UpdateCustomerInput extends CustomerFields {
  integrations?: store.MappingInput[]
  version?: number
}

/** Upper-cases a valid country and refuses anything that is not an assigned alpha-2 code. */
function checked<T extends CustomerFields>(input: T): T {
  if (input.address_country == null) return input
  const code = countryCode(input.address_country)
  if (!code) throw validationError('address_country', 'must be an ISO 3166-1 alpha-2 country code, e.g. "US" or "DE"')
  return { ...input, address_country: code }
}

function uniqueKeys(input: { external_id?: string; integrations?: store.MappingInput[] }): UniqueKey[] {
  const keys: UniqueKey[] = [{ index: store.EXTERNAL_ID_INDEX, field: 'external_id', value: input.external_id }]
  for (const m of input.integrations ?? []) keys.push({ index: store.PROVIDER_INDEX, field: 'integrations', value: `${m.provider_type}:${m.provider_entity_id}` })
  return keys
}

async function withMappings(db: Db, scope: Scope, rows: store.CustomerRow[]): Promise<CustomerView[]> {
  const mappings = await publishedIn<store.MappingRow>(db, store.MAPPINGS, scope, 'entity_id', rows.map((r) => r.id))
  return rows.map((row) => ({ ...row, integrations: mappings.filter((m) => m.entity_id === row.id) }))
}

const viewOf = async (db: Db, scope: Scope, row: store.CustomerRow): Promise<CustomerView> => (await withMappings(db, scope, [row]))[0]

export async function createCustomer(deps: Deps, actor: Actor, input: CreateCustomerInput): Promise<CustomerView> {
  const { integrations = [], ...fields } = checked(input)
  const audit = auditOf(deps, actor)
  return uniquely('customer', uniqueKeys(input), () =>
    transaction(deps, async (tx) => {
      // Test clocks exist in sandbox environments only, so a production key finds none either.
      if (fields.test_clock_id !== undefined && !(await store.hasTestClock(tx, actor, fields.test_clock_id))) {
        throw new AppError('not_found', `test_clock_id: no test clock ${fields.test_clock_id} in this environment (test clocks exist in sandbox environments only)`, { test_clock_id: fields.test_clock_id })
      }
      const row = await insertRecord<store.CustomerRow>(tx, store.CUSTOMERS, actor, audit, fields)
      const view = { ...row, integrations: await store.insertMappings(tx, actor, audit, row.id, integrations) }
      await announce(tx, actor, 'customer.created', store.CUSTOMERS, view)
      return view
    }),
  )
}

export async function getCustomer(deps: Deps, actor: Actor, id: string): Promise<CustomerView> {
  return viewOf(deps.sql, actor, await requireRecord<store.CustomerRow>(deps.sql, store.CUSTOMERS, actor, id))
}

/** A published customer, for records that refer to one (subscriptions, invoices): others are not_found. */
export const requireCustomer = (deps: Deps, scope: Scope, id: string): Promise<store.CustomerRow> =>
  requireRecord<store.CustomerRow>(deps.sql, store.CUSTOMERS, scope, id, { published: true })

/** Customers with their mappings, for embedding in the records that refer to them. */
export async function customerViews(db: Db, scope: Scope, ids: string[]): Promise<CustomerView[]> {
  return withMappings(db, scope, await findRecords<store.CustomerRow>(db, store.CUSTOMERS, scope, ids))
}

export async function findCustomerByExternalId(deps: Deps, scope: Scope, externalId: string): Promise<store.CustomerRow> {
  const row = await findPublishedBy<store.CustomerRow>(deps.sql, store.CUSTOMERS, scope, 'external_id', externalId)
  if (!row) throw notFound('customer with external_id', externalId)
  return row
}

/** The customer one of `id` or `external_customer_id` names (Flexprice's query form); naming none or both is refused. */
export async function resolveCustomerId(deps: Deps, scope: Scope, by: { id?: string; external_customer_id?: string }): Promise<string> {
  if (by.id && by.external_customer_id) throw validationError('id', 'give id or external_customer_id, not both')
  if (by.id) return by.id
  if (by.external_customer_id) return (await findCustomerByExternalId(deps, scope, by.external_customer_id)).id
  throw validationError('id', 'id or external_customer_id is required')
}

export async function getCustomerByExternalId(deps: Deps, actor: Actor, externalId: string): Promise<CustomerView> {
  return viewOf(deps.sql, actor, await findCustomerByExternalId(deps, actor, externalId))
}

export async function listCustomers(deps: Deps, actor: Actor, { params, filters }: ListRequest): Promise<Page<CustomerView>> {
  const { rows, total } = await listRecords<store.CustomerRow>(deps.sql, store.CUSTOMERS, actor, params, filterConditions(deps.sql, store.FILTERS, filters))
  return page(await withMappings(deps.sql, actor, rows), total, params)
}

export async function updateCustomer(deps: Deps, actor: Actor, id: string, input: UpdateCustomerInput): Promise<CustomerView> {
  const { integrations, version, ...fields } = checked(input)
  const audit = auditOf(deps, actor)
  return uniquely('customer', uniqueKeys(input), () =>
    transaction(deps, async (tx) => {
      const row = await updateRecord<store.CustomerRow>(tx, store.CUSTOMERS, actor, id, fields, { version, audit })
      if (integrations) {
        await store.endMappings(tx, actor, audit, id)
        await store.insertMappings(tx, actor, audit, id, integrations)
      }
      const view = await viewOf(tx, actor, row)
      await announce(tx, actor, 'customer.updated', store.CUSTOMERS, view)
      return view
    }),
  )
}

/** Checks run before a customer is deleted; subscriptions register theirs (a live subscription keeps its customer). */
export const customerDeletion = guards()

export interface MappingCreateInput extends store.MappingInput {
  entity_id: string
  entity_type: 'customer'
}

/** One more provider id for a customer (Flexprice's entity integration mapping); the customer is announced as updated. */
export async function addMapping(deps: Deps, actor: Actor, input: MappingCreateInput): Promise<store.MappingRow> {
  const audit = auditOf(deps, actor)
  const key = { index: store.PROVIDER_INDEX, field: 'provider_entity_id', value: `${input.provider_type}:${input.provider_entity_id}` }
  return uniquely('integration mapping', [key], () =>
    transaction(deps, async (tx) => {
      const customer = await referenced('entity_id', requireRecord<store.CustomerRow>(tx, store.CUSTOMERS, actor, input.entity_id, { published: true }))
      const [mapping] = await store.insertMappings(tx, actor, audit, customer.id, [input])
      await announce(tx, actor, 'customer.updated', store.CUSTOMERS, await viewOf(tx, actor, customer))
      return mapping
    }),
  )
}

/** Ends one mapping (soft: its provider id may be mapped again); its customer is announced as updated. */
export async function removeMapping(deps: Deps, actor: Actor, id: string): Promise<store.MappingRow> {
  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    const mapping = await deleteRecord<store.MappingRow>(tx, store.MAPPINGS, actor, id, audit)
    const customer = await requireRecord<store.CustomerRow>(tx, store.CUSTOMERS, actor, mapping.entity_id)
    await announce(tx, actor, 'customer.updated', store.CUSTOMERS, await viewOf(tx, actor, customer))
    return mapping
  })
}

export async function deleteCustomer(deps: Deps, actor: Actor, id: string): Promise<CustomerView> {
  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    await customerDeletion.check(tx, actor, id)
    const row = await deleteRecord<store.CustomerRow>(tx, store.CUSTOMERS, actor, id, audit)
    await store.endMappings(tx, actor, audit, id)
    const view = { ...row, integrations: [] }
    await announce(tx, actor, 'customer.deleted', store.CUSTOMERS, view)
    return view
  })
}
