// The usage adjustments of an environment as the API lists them (GET /v1/usage-adjustments): each with the line it
// adjusted, its amounts, how and on which document it was issued (or which subscription's next invoice it waits for),
// and the corrections and late events it settles.
import { D } from '../../../core/money.ts'
import { page, type Page } from '../../../core/list.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import * as store from './store.ts'

export interface ListAdjustmentsQuery extends store.ListFilters {
  limit: number
  offset: number
}

const view = (r: store.ListedRow) => ({
  id: r.id,
  customer_id: r.customer_id,
  subscription_id: r.subscription_id,
  invoice_id: r.invoice_id,
  invoice_line_item_id: r.invoice_line_item_id,
  kind: r.kind,
  method: r.method,
  status: r.status,
  settled_usage: new D(r.settled_usage),
  usage_delta: new D(r.usage_delta),
  amount: new D(r.amount),
  tax: new D(r.tax),
  total: new D(r.total),
  tax_rates: r.tax_rates,
  carry_by: r.carry_by,
  document_type: r.document_type,
  document_id: r.document_id,
  correction_ids: r.correction_ids,
  correction_count: r.corrections,
  late_event_ids: r.late_event_ids,
  late_event_count: r.late_events,
  created_at: r.created_at,
  issued_at: r.issued_at,
})

export async function listAdjustments(deps: Deps, scope: Scope, q: ListAdjustmentsQuery): Promise<Page<ReturnType<typeof view>>> {
  const { limit, offset, ...filters } = q
  const { rows, total } = await store.list(deps.sql, scope, filters, limit, offset)
  return page(rows.map(view), total, q)
}
