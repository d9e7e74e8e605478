// Customers and their integration mappings (the customer's id at a payment or accounting provider).
import type { Scope } from '../../core/scope.ts'
import type { Db } from '../../infra/postgres.ts'
import { type Audit, type FilterSpec, filterSpec, insertRecords, type RecordRow, type RecordTable } from '../../infra/records.ts'

export const CUSTOMERS: RecordTable = { name: 'customers', noun: 'customer', prefix: 'cus' }
export const MAPPINGS: RecordTable = { name: 'entity_integration_mappings', noun: 'integration', prefix: 'eim' }

export const EXTERNAL_ID_INDEX = 'customers_external_id'
export const PROVIDER_INDEX = 'entity_integration_mappings_provider'

export const FILTERS: FilterSpec = filterSpec({
  in: { customer_ids: 'id', external_ids: 'external_id' },
  eq: { external_id: 'external_id', email: 'email', address_country: 'address_country', test_clock_id: 'test_clock_id' },
  contains: { name: 'name' },
})

export interface CustomerRow extends RecordRow {
  external_id: string
  name: string
  email: string | null
  address_line1: string | null
  address_line2: string | null
  address_city: string | null
  address_state: string | null
  address_postal_code: string | null
  address_country: string | null
  /** The test clock the customer lives on (sandbox only), else null: the wall clock. */
  test_clock_id: string | null
}

export interface MappingRow extends RecordRow {
  entity_id: string
  entity_type: string
  provider_type: string
  provider_entity_id: string
}

export interface MappingInput {
  provider_type: string
  provider_entity_id: string
  metadata?: Record<string, string>
}

/** Whether the environment has this test clock (a clock of another environment is not found here). */
export async function hasTestClock(db: Db, scope: Scope, id: string): Promise<boolean> {
  const rows = await db`SELECT 1 FROM test_clocks WHERE id = ${id} AND tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND status = 'published'`
  return rows.length === 1
}

/** Ends the customer's live mappings: soft deleted, so their provider ids may be mapped again. */
export async function endMappings(db: Db, scope: Scope, audit: Audit, customerId: string): Promise<void> {
  await db`UPDATE entity_integration_mappings SET status = 'deleted', version = version + 1, updated_at = ${audit.at}, updated_by = ${audit.by}
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND entity_id = ${customerId} AND status = 'published'`
}

export const insertMappings = (db: Db, scope: Scope, audit: Audit, customerId: string, mappings: MappingInput[]): Promise<MappingRow[]> =>
  insertRecords<MappingRow>(
    db,
    MAPPINGS,
    scope,
    audit,
    mappings.map((m) => ({ entity_id: customerId, entity_type: 'customer', provider_type: m.provider_type, provider_entity_id: m.provider_entity_id, metadata: m.metadata ?? {} })),
  )
