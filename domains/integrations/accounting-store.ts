// The accounting sync queue: one row per record (invoice, credit note, payment) and accounting-system
// connection (QuickBooks), where its push stands and the record's id there once known.
import type { Scope } from '../../core/scope.ts'
import type { Db } from '../../infra/postgres.ts'

type EntityType = 'invoice' | 'credit_note' | 'payment'
type SyncStatus = 'PENDING' | 'SYNCED' | 'FAILED' | 'SKIPPED'

export interface AccountingSyncRow {
  connection_id: string
  entity_type: EntityType
  entity_id: string
  invoice_id: string
  tenant_id: string
  environment_id: string
  provider_type: string
  sync_status: SyncStatus
  attempts: number
  next_attempt_at: Date
  last_attempt_at: Date | null
  last_error: string | null
  external_id: string | null
  synced_at: Date | null
  created_at: Date
  updated_at: Date
}

/**
 * Queues what the live QuickBooks connections have not queued yet: invoices finalized since the
 * connection was made (history is not pushed on connecting), then the finalized credit notes and
 * succeeded payments of the invoices queued. Each statement sees the rows the one before added.
 */
export async function enqueueAccounting(db: Db, now: Date): Promise<number> {
  const invoices = await db`INSERT INTO accounting_syncs (connection_id, entity_type, entity_id, invoice_id, tenant_id, environment_id, provider_type, sync_status, next_attempt_at, created_at, updated_at)
    SELECT c.id, 'invoice', i.id, i.id, i.tenant_id, i.environment_id, c.provider_type, 'PENDING', ${now}, ${now}, ${now}
    FROM connections c
    JOIN invoices i ON i.tenant_id = c.tenant_id AND i.environment_id = c.environment_id
      AND i.invoice_status = 'FINALIZED' AND i.finalized_at >= c.created_at AND i.status <> 'deleted' AND i.total > 0
    WHERE c.status = 'published' AND c.provider_type = 'quickbooks' AND COALESCE((c.sync_config #>> '{invoice,outbound}')::boolean, true)
      AND NOT EXISTS (SELECT 1 FROM accounting_syncs s WHERE s.connection_id = c.id AND s.entity_type = 'invoice' AND s.entity_id = i.id)
    ON CONFLICT DO NOTHING RETURNING entity_id`
  const notes = await db`INSERT INTO accounting_syncs (connection_id, entity_type, entity_id, invoice_id, tenant_id, environment_id, provider_type, sync_status, next_attempt_at, created_at, updated_at)
    SELECT s.connection_id, 'credit_note', n.id, s.invoice_id, s.tenant_id, s.environment_id, s.provider_type, 'PENDING', ${now}, ${now}, ${now}
    FROM accounting_syncs s
    JOIN credit_notes n ON n.invoice_id = s.invoice_id AND n.credit_note_status = 'FINALIZED' AND n.status <> 'deleted'
    WHERE s.entity_type = 'invoice'
    ON CONFLICT DO NOTHING RETURNING entity_id`
  const payments = await db`INSERT INTO accounting_syncs (connection_id, entity_type, entity_id, invoice_id, tenant_id, environment_id, provider_type, sync_status, next_attempt_at, created_at, updated_at)
    SELECT s.connection_id, 'payment', p.id, s.invoice_id, s.tenant_id, s.environment_id, s.provider_type, 'PENDING', ${now}, ${now}, ${now}
    FROM accounting_syncs s
    JOIN payments p ON p.destination_id = s.invoice_id AND p.payment_status = 'SUCCEEDED' AND p.amount > 0 AND p.status = 'published'
      -- A payment QuickBooks reported (its webhooks) is there already: pushed back, it would be paid twice.
      AND p.payment_gateway IS DISTINCT FROM 'quickbooks'
    WHERE s.entity_type = 'invoice'
    ON CONFLICT DO NOTHING RETURNING entity_id`
  return invoices.length + notes.length + payments.length
}

/** What is due, invoices first: a credit note or payment needs its invoice (and customer) at QuickBooks. */
export async function dueAccounting(db: Db, now: Date, limit: number): Promise<AccountingSyncRow[]> {
  return (await db`SELECT * FROM accounting_syncs WHERE sync_status = 'PENDING' AND next_attempt_at <= ${now}
    ORDER BY entity_type <> 'invoice', next_attempt_at, entity_id LIMIT ${limit}`) as unknown as AccountingSyncRow[]
}

/** The push of a record's invoice to the same connection. */
export async function invoiceSyncOf(db: Db, row: AccountingSyncRow): Promise<AccountingSyncRow | undefined> {
  const [found] = await db`SELECT * FROM accounting_syncs WHERE connection_id = ${row.connection_id} AND entity_type = 'invoice' AND entity_id = ${row.invoice_id}`
  return found as AccountingSyncRow | undefined
}

const key = (db: Db, row: AccountingSyncRow) => db`connection_id = ${row.connection_id} AND entity_type = ${row.entity_type} AND entity_id = ${row.entity_id}`

export async function markSynced(db: Db, row: AccountingSyncRow, externalId: string, now: Date): Promise<void> {
  await db`UPDATE accounting_syncs SET sync_status = 'SYNCED', attempts = attempts + 1, last_attempt_at = ${now}, synced_at = ${now}, updated_at = ${now},
    last_error = NULL, external_id = ${externalId} WHERE ${key(db, row)}`
}

/** A failed attempt: PENDING again at `next`, or FAILED when `next` is null (attempts spent). */
export async function markFailed(db: Db, row: AccountingSyncRow, error: string, now: Date, next: Date | null): Promise<void> {
  await db`UPDATE accounting_syncs SET sync_status = ${next ? 'PENDING' : 'FAILED'}, attempts = attempts + 1, last_attempt_at = ${now},
    next_attempt_at = ${next ?? row.next_attempt_at}, last_error = ${error}, updated_at = ${now} WHERE ${key(db, row)}`
}

/** Not tried: it waits for its invoice's push; no attempt spent. */
export async function markWaiting(db: Db, row: AccountingSyncRow, reason: string, now: Date, next: Date): Promise<void> {
  await db`UPDATE accounting_syncs SET next_attempt_at = ${next}, last_error = ${reason}, updated_at = ${now} WHERE ${key(db, row)}`
}

export async function markSkipped(db: Db, row: AccountingSyncRow, reason: string, now: Date): Promise<void> {
  await db`UPDATE accounting_syncs SET sync_status = 'SKIPPED', last_error = ${reason}, updated_at = ${now} WHERE ${key(db, row)}`
}

/** An invoice's pushes to accounting systems: itself, its credit notes and its payments. */
export async function accountingSyncsOf(db: Db, scope: Scope, invoiceId: string): Promise<AccountingSyncRow[]> {
  return (await db`SELECT * FROM accounting_syncs WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}
    AND invoice_id = ${invoiceId} ORDER BY entity_type <> 'invoice', created_at, entity_id`) as unknown as AccountingSyncRow[]
}

/** Puts an invoice's failed or waiting accounting pushes back to be tried now, with fresh attempts. */
export async function retryAccounting(db: Db, scope: Scope, invoiceId: string, now: Date): Promise<void> {
  await db`UPDATE accounting_syncs SET sync_status = 'PENDING', attempts = 0, next_attempt_at = ${now}, updated_at = ${now}
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND invoice_id = ${invoiceId}
      AND sync_status IN ('PENDING', 'FAILED')`
}

/** Our record that a connection's accounting record (an invoice, a payment we pushed) is, by its QuickBooks id. */
export async function recordOfExternal(db: Db, connectionId: string, entityType: 'invoice' | 'payment', externalId: string): Promise<string | undefined> {
  const [row] = await db`SELECT entity_id FROM accounting_syncs WHERE connection_id = ${connectionId} AND entity_type = ${entityType} AND external_id = ${externalId}`
  return row?.entity_id as string | undefined
}
