// The finalized usage lines of a customer whose usage window meets a range: what the reconciliation report calls billed.
import type { Db } from '../../../infra/postgres.ts'
import type { Scope } from '../../../core/scope.ts'

export interface BilledLineRow {
  invoice_id: string
  line_item_id: string
  meter_id: string
  /** numeric text */
  quantity: string
  usage_start: Date
  usage_end: Date
  finalized_at: Date
  /** When the line's usage was last settled: its last usage adjustment (domains/invoicing/adjustments), else finalized_at. */
  settled_at: Date
}

export async function billedLines(db: Db, scope: Scope, customerId: string, start: Date, end: Date): Promise<BilledLineRow[]> {
  return db<BilledLineRow[]>`
    SELECT i.id AS invoice_id, li.id AS line_item_id, li.meter_id, li.quantity,
           (li.calculation->>'usage_start')::timestamptz AS usage_start, (li.calculation->>'usage_end')::timestamptz AS usage_end, i.finalized_at,
           COALESCE((SELECT max(a.created_at) FROM usage_adjustments a WHERE a.invoice_line_item_id = li.id AND a.status IN ('scheduled', 'issued')), i.finalized_at) AS settled_at
    FROM invoice_line_items li
    JOIN invoices i ON i.id = li.invoice_id AND i.tenant_id = li.tenant_id AND i.environment_id = li.environment_id
    WHERE li.tenant_id = ${scope.tenantId} AND li.environment_id = ${scope.environmentId} AND li.customer_id = ${customerId}
      AND li.price_type = 'USAGE' AND li.meter_id IS NOT NULL AND li.status = 'published'
      AND i.invoice_status = 'FINALIZED' AND i.status = 'published'
      AND (li.calculation->>'usage_start')::timestamptz < ${end} AND (li.calculation->>'usage_end')::timestamptz > ${start}
    ORDER BY li.meter_id, usage_start, i.id`
}
