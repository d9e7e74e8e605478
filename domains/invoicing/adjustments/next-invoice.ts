// Usage adjustments carried by the subscription's next invoice (method next_invoice, the default): the billing run
// takes a subscription's scheduled adjustments as lines of the first invoice it makes for it, taxed at the original
// invoice's rates, and marks them issued in that invoice's own transaction, so an adjustment is on one invoice or on
// none; a draft computed again at finalization gets back the lines it carries.
import { D } from '../../../core/money.ts'
import { invalidOperation } from '../../../core/errors.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Db, Tx } from '../../../infra/postgres.ts'
import type { InvoiceSpec, LineSpec } from '../invoices/assemble.ts'
import type { ResolvedRate } from '../taxes/service.ts'
import { namesOf, periodName } from './names.ts'
import * as store from './store.ts'

/** A subscription's scheduled adjustments, as lines of its next invoice. */
export interface Carried {
  ids: string[]
  lines: LineSpec[]
}

/** The line "<line>: usage adjustment for <period>", its amount as priced when it was scheduled. */
function lineOf(a: store.CarriedRow): LineSpec {
  const display = `${a.display_name ? `${a.display_name}: ` : ''}usage adjustment for ${periodName(a.usage_start, a.usage_end)}`
  const quantity = new D(a.usage_delta).abs()
  return {
    fields: {
      customer_id: a.customer_id,
      subscription_id: a.line_subscription_id,
      entity_id: a.entity_id,
      entity_type: a.entity_type,
      plan_id: a.plan_id,
      plan_display_name: a.plan_display_name,
      display_name: display,
      price_id: a.price_id,
      price_type: 'USAGE',
      meter_id: a.meter_id,
      meter_display_name: a.meter_display_name,
      period_start: a.usage_start,
      period_end: a.usage_end,
      metadata: { usage_adjustment: a.id, adjusted_invoice_id: a.invoice_id, adjusted_line_item_id: a.invoice_line_item_id, settled_usage: a.settled_usage, ...namesOf(a) },
      // Not kind "usage": the line bills an earlier period's difference, not this invoice's usage (reconciliation and the
      // adjustments job read usage lines by their kind and usage window).
      // Coupons do not discount it (as they do not an adjustment on its own invoice): it prices usage as it stood.
      calculation: { kind: 'usage_adjustment', usage_adjustment_id: a.id, adjusted_line_item_id: a.invoice_line_item_id, usage_delta: a.usage_delta, tax_rates: a.tax_rates, discountable: false },
    },
    input: { price_type: 'USAGE', price_id: a.price_id ?? undefined, display_name: display, quantity, amount: new D(a.amount), discountable: false },
    tax_rates: a.tax_rates as ResolvedRate[],
  }
}

const carriedOf = (rows: store.CarriedRow[]): Carried => ({ ids: rows.map((r) => r.id), lines: rows.map(lineOf) })

/** Rows grouped by a key, each group as lines. */
function carriedByKey<R extends store.CarriedRow>(rows: R[], key: (r: R) => string): Map<string, Carried> {
  const groups = new Map<string, R[]>()
  for (const r of rows) groups.set(key(r), [...(groups.get(key(r)) ?? []), r])
  return new Map([...groups].map(([id, rs]) => [id, carriedOf(rs)]))
}

/** The scheduled adjustments of the subscriptions a billing run bills, by subscription. */
export const scheduledAdjustments = async (db: Db, scope: Scope, subscriptionIds: string[]): Promise<Map<string, Carried>> =>
  carriedByKey(await store.scheduledFor(db, scope, subscriptionIds), (r) => r.subscription_id!)

/** The adjustments these invoices carry (drafts computed again), by invoice. */
export const carriedBy = async (db: Db, scope: Scope, invoiceIds: string[]): Promise<Map<string, Carried>> =>
  carriedByKey(await store.carriedBy(db, scope, invoiceIds), (r) => r.carrier_id)

/** The spec with the adjustments' lines after its own. */
export const carrying = (spec: InvoiceSpec, carried: Carried | undefined): InvoiceSpec => (carried ? { ...spec, lines: [...spec.lines, ...carried.lines] } : spec)

/**
 * In the transaction that stores the invoices: marks each one's adjustments issued with it. One no longer scheduled
 * (issued on its own invoice meanwhile) fails the transaction, so no adjustment is billed twice; the next run computes
 * the invoice without it.
 */
export async function markCarried(tx: Tx, scope: Scope, invoices: { id: string; adjustments?: string[] }[], at: Date): Promise<void> {
  for (const invoice of invoices) {
    const ids = invoice.adjustments ?? []
    if (ids.length === 0) continue
    const marked = await store.markCarried(tx, scope, ids, invoice.id, at)
    if (marked !== ids.length) throw invalidOperation(`usage adjustments ${ids.join(', ')} are no longer waiting for invoice ${invoice.id}: computed again without them on the next run`)
  }
}

/** The spec of a draft computed again (finalization, recalculation) with the adjustment lines it carries (`known`: read for its batch). */
export async function withCarried(db: Db, scope: Scope, invoiceId: string, spec: InvoiceSpec, known?: Map<string, Carried>): Promise<InvoiceSpec> {
  return carrying(spec, (known ?? (await carriedBy(db, scope, [invoiceId]))).get(invoiceId))
}
