// Subscription invoices computed for billing points: stored together (drafts, or finalized once their
// grace period is over), or previewed without writing anything.
import { formatNumber, numberScope } from '../../../core/billing/numbering.ts'
import { invalidOperation } from '../../../core/errors.ts'
import { D, formatMoney, sumMoney } from '../../../core/money.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Db, Tx } from '../../../infra/postgres.ts'
import { type Audit } from '../../../infra/records.ts'
import { customerViews } from '../../customers/service.ts'
import { referenced, transaction } from '../../records/service.ts'
import { recordEvents } from '../../../infra/outbox.ts'
import { newId } from '../../../core/ids.ts'
import { requireSubscription } from '../../subscriptions/read.ts'
import { amountsOf, assemble, computedRows, inputsOf, writeComputedMany } from './assemble.ts'
import { billedThroughParent, cycleOf, loadContext, pointSpec, subscriptionHeader, type PointInvoice } from './billing.ts'
import { nextPoint } from '../../../core/billing/cycle.ts'
import { prepaidCredits } from './prepaid.ts'
import * as store from './store.ts'
import { invoiceEvent } from './read.ts'
import { finalColumns, finalizeLocked, skipped } from './finalize.ts'
import { carrying, markCarried, scheduledAdjustments } from '../adjustments/next-invoice.ts'

// ---- subscription invoices ----------------------------------------------------------------------------

/**
 * Stores subscription invoices computed for billing points, in one transaction: drafts, or finalized at
 * once when their grace period is over (numbers taken together from the sequence, in the given order).
 * Points already invoiced are left out, and the unique key (subscription, period start, billing reason)
 * refuses any that slips in between, so reruns and concurrent runs never bill a period twice.
 */
export async function createSubscriptionInvoices(deps: Deps, scope: Scope, items: PointInvoice[]): Promise<store.InvoiceRow[]> {
  if (items.length === 0) return []
  return transaction(deps, (tx) => storeSubscriptionInvoices(deps, tx, scope, items))
}

/** createSubscriptionInvoices in the caller's transaction (a modification's update invoice). */
export async function storeSubscriptionInvoices(deps: Deps, tx: Tx, scope: Scope, items: PointInvoice[]): Promise<store.InvoiceRow[]> {
  const audit: Audit = { by: 'system', at: deps.clock.now() }
  const template = deps.config.invoicing.invoiceNumberTemplate
  const billed = await store.billedKeys(tx, scope, [...new Set(items.map((i) => i.subscription.id))])
  const todo = items.filter((i) => !billed.has(store.billedKey(i.subscription.id, i.header.period_start, i.header.billing_reason)))
  const rows = todo.map((i) => ({
    id: newId(store.INVOICES.prefix),
    invoice_status: 'DRAFT',
    payment_status: 'PENDING',
    ...i.header,
    ...amountsOf(i.assembled.computed),
    ...inputsOf(i.assembled.spec),
    amount_paid: new D(0),
    last_computed_at: audit.at,
    metadata: {},
  }))
  // Finalized at once unless prepaid credits apply: those go through finalizeLocked, one by one.
  const prepaid = await Promise.all(rows.map((r) => (r.finalize_after <= audit.at ? prepaidCredits(deps, tx, scope, r as never) : undefined)))
  const now = rows.filter((r, k) => r.finalize_after <= audit.at && !prepaid[k])
  const numbered = now.filter((r) => !skipped(r))
  const first = numbered.length > 0 ? await store.nextNumbers(tx, scope, numberScope(template, audit.at), numbered.length) : 0
  for (const r of now) {
    const k = numbered.indexOf(r)
    Object.assign(r, finalColumns(r, k < 0 ? null : formatNumber(template, first + k, audit.at), todo[rows.indexOf(r)].subscription.collection_method, audit.at))
  }
  let inserted = await store.insertMany<store.InvoiceRow>(tx, store.INVOICES, scope, audit, rows)
  const written = await writeComputedMany(tx, scope, audit, inserted.map((row, k) => ({ invoice: row, assembled: todo[k].assembled })))
  await markCarried(tx, scope, inserted.map((row, k) => ({ id: row.id, adjustments: todo[k].adjustments })), audit.at)
  // One after the other, oldest first: each takes the credits the one before left (in parallel they would
  // plan their debits on the same credits, and all but one would be refused).
  for (const [k, row] of inserted.entries()) if (prepaid[k]) inserted[k] = await finalizeLocked(deps, tx, scope, audit, row)
  await recordEvents(
    tx,
    scope,
    inserted.map((row, k) =>
      invoiceEvent(row.invoice_status === 'FINALIZED' ? 'invoice.update.finalized' : 'invoice.update', {
        ...row,
        line_items: written.lines[k],
        coupon_applications: written.applications.filter((a) => a.invoice_id === row.id),
        taxes: written.taxes.filter((t) => t.entity_id === row.id),
      }),
    ),
  )
  return inserted
}

// ---- preview ------------------------------------------------------------------------------------------

/**
 * The upcoming invoice of a subscription: the next billing point computed as the billing run will
 * compute it (usage so far), written nowhere. A parent's shows its grouped children's lines (rule 8).
 */
export async function previewInvoice(deps: Deps, actor: Actor, input: { subscription_id: string }) {
  const now = deps.clock.now()
  const sub = await referenced('subscription_id', requireSubscription(deps.sql, actor, input.subscription_id))
  if (billedThroughParent(sub)) throw invalidOperation(`subscription ${sub.id} is billed through its parent ${sub.parent_subscription_id}: preview the parent`, { parent_subscription_id: sub.parent_subscription_id })
  const point = nextPoint(cycleOf(sub), now)
  if (!point) throw invalidOperation(`subscription ${sub.id} has nothing left to bill`)
  // Usage adjustments waiting for this subscription's next invoice are on it, as the billing run will add them.
  const waiting = (await scheduledAdjustments(deps.sql, actor, [sub.id])).get(sub.id)
  const spec = carrying(await pointSpec(deps, actor, await loadContext(deps, actor, sub), point, { usageEnd: now }), waiting)
  return previewOf(deps.sql, actor, { header: subscriptionHeader(sub, point, deps.config.invoicing.graceMs), assembled: assemble(spec), subscription: sub }, now)
}

/**
 * POST /v1/subscriptions/usage (Flexprice's getSubscriptionUsage): the usage lines of the upcoming invoice,
 * so far — each meter's quantity and charge in the current period, priced as the billing run will price it.
 */
export async function subscriptionUsage(deps: Deps, actor: Actor, input: { subscription_id: string }) {
  const preview = await previewInvoice(deps, actor, input)
  const sub = preview.subscription
  // This period's usage only: a carried usage adjustment bills an earlier period's.
  const usage = preview.line_items.filter((l) => l.price_type === 'USAGE' && (l.calculation as { kind?: string } | null)?.kind !== 'usage_adjustment')
  const amount = sumMoney(usage.map((l) => l.amount))
  return {
    subscription_id: sub.id,
    start_time: sub.current_period_start,
    end_time: sub.current_period_end,
    currency: sub.currency,
    amount,
    display_amount: formatMoney(amount, sub.currency),
    charges: usage.map((l) => ({
      meter_id: l.meter_id,
      meter_display_name: l.meter_display_name ?? l.display_name,
      price_id: l.price_id,
      quantity: l.quantity,
      amount: l.amount,
      display_amount: formatMoney(l.amount, sub.currency),
      currency: sub.currency,
      period_start: l.period_start,
      period_end: l.period_end,
    })),
  }
}

/** A subscription invoice as it would be stored, with its customer and subscription, written nowhere. */
export async function previewOf(db: Db, scope: Scope, { header, assembled, subscription: sub }: PointInvoice, now: Date) {
  const rows = computedRows({ id: 'preview', currency: sub.currency, subscription_id: sub.id }, assembled, now)
  const [customer] = await customerViews(db, scope, [header.customer_id])
  return {
    ...header,
    invoice_status: 'DRAFT',
    payment_status: 'PENDING',
    ...amountsOf(assembled.computed),
    amount_paid: new D(0),
    customer,
    subscription: sub,
    line_items: rows.lines,
    coupon_applications: rows.applications,
    taxes: rows.taxes,
    preview: true,
  }
}
