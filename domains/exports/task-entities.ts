// The entity types a scheduled task takes, as the export engine's: Flexprice's (invoice, credit_topups,
// credit_usage) and the engine's own names.
import type { ExportEntity } from './write.ts'

export const TASK_ENTITIES: Record<string, { entity: ExportEntity; filters?: Record<string, string[]> }> = {
  events: { entity: 'events' },
  invoice: { entity: 'invoices' },
  credit_topups: { entity: 'wallet_transactions', filters: { types: ['credit'] } },
  credit_usage: { entity: 'wallet_transactions', filters: { types: ['debit'] } },
  usage: { entity: 'usage' },
  invoices: { entity: 'invoices' },
  credit_notes: { entity: 'credit_notes' },
  wallet_transactions: { entity: 'wallet_transactions' },
  analytics: { entity: 'analytics' },
}
