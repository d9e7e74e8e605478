// An invoice's place in dunning, kept on the invoice so every read shows it: dunning_status, the next step's index
// and when it falls. The schedule is run by domains/dunning (above); a payment in full or a void, here, ends it at
// once and lifts the entitlement suspension it caused, in the same transaction.
import type { Scope } from '../../../core/scope.ts'
import type { Tx } from '../../../infra/postgres.ts'
import { updateRecord, type Audit } from '../../../infra/records.ts'
import { recordEvent } from '../../../infra/outbox.ts'
import { toWire } from '../../records/wire.ts'
import { liftSuspensions } from '../../subscriptions/suspension.ts'
import { INVOICES, type DunningStatus, type InvoiceRow } from './store.ts'

export interface DunningState {
  dunning_status: DunningStatus | null
  dunning_next_step: number | null
  dunning_next_step_at: Date | null
}

/** Moves a locked invoice in its schedule (domains/dunning). */
export const setDunningState = (tx: Tx, scope: Scope, audit: Audit, id: string, state: DunningState): Promise<InvoiceRow> =>
  updateRecord<InvoiceRow>(tx, INVOICES, scope, id, state, { audit })

/**
 * A locked invoice paid in full (or voided) while in dunning: resolved, no next step, its suspended subscriptions
 * entitled again; announced as invoice.dunning.resolved. An invoice never in dunning is returned as it is.
 */
export async function resolveDunning(tx: Tx, scope: Scope, audit: Audit, row: InvoiceRow): Promise<InvoiceRow> {
  if (row.dunning_status === null || row.dunning_status === 'resolved') return row
  const resolved = await setDunningState(tx, scope, audit, row.id, { dunning_status: 'resolved', dunning_next_step: null, dunning_next_step_at: null })
  const lifted = await liftSuspensions(tx, scope, row.id, audit.at)
  await recordEvent(tx, scope, { eventType: 'invoice.dunning.resolved', entityType: 'invoice', entityId: row.id, payload: { invoice: toWire(resolved), previous_status: row.dunning_status, entitlements_restored: lifted } })
  return resolved
}
