// Connections, the invoice sync queue (one row per invoice and connection) and the provider
// notifications received.
import type { Scope } from '../../core/scope.ts'
import { newId } from '../../core/ids.ts'
import type { Db } from '../../infra/postgres.ts'
import { decodeRow, filterSpec, type FilterSpec, type RecordRow, type RecordTable } from '../../infra/records.ts'
import { PAYMENT_PROVIDER_TYPES, type ProviderType, type PushResult } from './provider.ts'

export const CONNECTIONS: RecordTable = { name: 'connections', noun: 'connection', prefix: 'conn' }
export const PROVIDER_INDEX = 'connections_provider'

export const FILTERS: FilterSpec = filterSpec({ eq: { provider_type: 'provider_type' }, in: { connection_ids: 'id' }, contains: { name: 'name' } })

export type SyncConfig = Record<string, { inbound?: boolean; outbound?: boolean }>

export interface ConnectionRow extends RecordRow {
  name: string
  provider_type: ProviderType
  encrypted_secret_data: string
  api_base_url: string | null
  sync_config: SyncConfig
}

type SyncStatus = 'PENDING' | 'SYNCED' | 'FAILED' | 'SKIPPED'

export interface SyncRow {
  invoice_id: string
  connection_id: string
  tenant_id: string
  environment_id: string
  provider_type: ProviderType
  sync_status: SyncStatus
  attempts: number
  next_attempt_at: Date
  last_attempt_at: Date | null
  last_error: string | null
  provider_invoice_id: string | null
  provider_customer_id: string | null
  provider_status: string | null
  collection_method: string | null
  checkout_url: string | null
  synced_at: Date | null
  created_at: Date
  updated_at: Date
}

/** The live connection of a provider in an environment. */
export async function connectionAt(db: Db, scope: Scope, providerType: string): Promise<ConnectionRow | undefined> {
  const [row] = await db`SELECT * FROM connections WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}
    AND provider_type = ${providerType} AND status = 'published'`
  return row ? decodeRow<ConnectionRow>(CONNECTIONS, row) : undefined
}

/**
 * Queues every finalized invoice still owing (or waiting for a card: a trial charged automatically) that a
 * live payment provider connection pushes and has not queued yet:
 * those finalized since the connection was made (history is not pushed on connecting).
 */
export async function enqueueSyncs(db: Db, now: Date): Promise<number> {
  const rows = await db`INSERT INTO invoice_syncs (invoice_id, connection_id, tenant_id, environment_id, provider_type, sync_status, next_attempt_at, created_at, updated_at)
    SELECT i.id, c.id, i.tenant_id, i.environment_id, c.provider_type, 'PENDING', ${now}, ${now}, ${now}
    FROM connections c
    JOIN invoices i ON i.tenant_id = c.tenant_id AND i.environment_id = c.environment_id
      AND i.invoice_status = 'FINALIZED' AND i.finalized_at >= c.created_at AND i.status <> 'deleted'
      AND (i.amount_remaining > 0 OR i.metadata->>'checkout_status' = 'awaiting_payment_method')
    WHERE c.status = 'published' AND c.provider_type = ANY(${[...PAYMENT_PROVIDER_TYPES]}) AND COALESCE((c.sync_config #>> '{invoice,outbound}')::boolean, true)
      AND NOT EXISTS (SELECT 1 FROM invoice_syncs s WHERE s.invoice_id = i.id AND s.connection_id = c.id)
    ON CONFLICT (invoice_id, connection_id) DO NOTHING
    RETURNING invoice_id`
  return rows.length
}

export async function dueSyncs(db: Db, now: Date, limit: number): Promise<SyncRow[]> {
  return (await db`SELECT * FROM invoice_syncs WHERE sync_status = 'PENDING' AND next_attempt_at <= ${now}
    ORDER BY next_attempt_at, invoice_id LIMIT ${limit}`) as unknown as SyncRow[]
}

const key = (db: Db, row: Pick<SyncRow, 'invoice_id' | 'connection_id'>) => db`invoice_id = ${row.invoice_id} AND connection_id = ${row.connection_id}`

export async function markSynced(db: Db, row: SyncRow, result: PushResult, now: Date): Promise<void> {
  await db`UPDATE invoice_syncs SET sync_status = 'SYNCED', attempts = attempts + 1, last_attempt_at = ${now}, synced_at = ${now}, updated_at = ${now},
    last_error = ${result.payment_error}, provider_invoice_id = ${result.provider_invoice_id}, provider_customer_id = ${result.provider_customer_id},
    provider_status = ${result.provider_status}, collection_method = ${result.collection_method}, checkout_url = ${result.checkout_url}
    WHERE ${key(db, row)}`
}

/** A failed attempt: PENDING again at `next`, or FAILED when `next` is null (attempts spent). */
export async function markFailed(db: Db, row: SyncRow, error: string, now: Date, next: Date | null): Promise<void> {
  await db`UPDATE invoice_syncs SET sync_status = ${next ? 'PENDING' : 'FAILED'}, attempts = attempts + 1, last_attempt_at = ${now},
    next_attempt_at = ${next ?? row.next_attempt_at}, last_error = ${error}, updated_at = ${now} WHERE ${key(db, row)}`
}

export async function markSkipped(db: Db, row: SyncRow, reason: string, now: Date): Promise<void> {
  await db`UPDATE invoice_syncs SET sync_status = 'SKIPPED', last_error = ${reason}, updated_at = ${now} WHERE ${key(db, row)}`
}

export async function syncsOf(db: Db, scope: Scope, invoiceId: string): Promise<SyncRow[]> {
  return (await db`SELECT * FROM invoice_syncs WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId}
    AND invoice_id = ${invoiceId} ORDER BY created_at, connection_id`) as unknown as SyncRow[]
}

/** Puts an invoice's failed or waiting pushes back to be tried now, with fresh attempts. */
export async function retrySyncs(db: Db, scope: Scope, invoiceId: string, now: Date): Promise<number> {
  const rows = await db`UPDATE invoice_syncs SET sync_status = 'PENDING', attempts = 0, next_attempt_at = ${now}, updated_at = ${now}
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND invoice_id = ${invoiceId}
      AND sync_status IN ('PENDING', 'FAILED') RETURNING invoice_id`
  return rows.length
}

/** The invoice a provider invoice was pushed from. */
export async function invoiceOfProviderInvoice(db: Db, connectionId: string, providerInvoiceId: string): Promise<string | undefined> {
  const [row] = await db`SELECT invoice_id FROM invoice_syncs WHERE connection_id = ${connectionId} AND provider_invoice_id = ${providerInvoiceId}`
  return row?.invoice_id as string | undefined
}

/** Notes a notification; undefined when this connection already received it (the provider resent it). */
export async function receiveEvent(db: Db, scope: Scope, connectionId: string, event: { id: string; type: string }, now: Date): Promise<string | undefined> {
  const [row] = await db`INSERT INTO provider_events (id, tenant_id, environment_id, connection_id, provider_event_id, event_type, outcome, received_at)
    VALUES (${newId('pevt')}, ${scope.tenantId}, ${scope.environmentId}, ${connectionId}, ${event.id}, ${event.type}, 'received', ${now})
    ON CONFLICT (connection_id, provider_event_id) DO NOTHING RETURNING id`
  return row?.id as string | undefined
}

export async function settleEvent(db: Db, id: string, outcome: string, invoiceId: string | null, paymentReference: string | null): Promise<void> {
  await db`UPDATE provider_events SET outcome = ${outcome}, invoice_id = ${invoiceId}, payment_reference = ${paymentReference} WHERE id = ${id}`
}

export async function paymentRecorded(db: Db, connectionId: string, reference: string): Promise<boolean> {
  const rows = await db`SELECT 1 FROM provider_events WHERE connection_id = ${connectionId} AND payment_reference = ${reference}`
  return rows.length > 0
}

/** Stores a connection's secrets as they changed at the provider (QuickBooks rotates its refresh token): not an edit, so the version stays. */
export async function saveSecrets(db: Db, connectionId: string, sealed: string): Promise<void> {
  await db`UPDATE connections SET encrypted_secret_data = ${sealed} WHERE id = ${connectionId}`
}
