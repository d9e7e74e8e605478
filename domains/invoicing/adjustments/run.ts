// The usage-adjustments job (docs/invoicing.md "Late usage and corrections settle themselves"): finalized usage lines
// whose stored usage now differs from what they settled (the invoice's quantity, then each adjustment's) are priced
// again by core/adjustments.ts with the line's own price, allowance and tax rates. More usage is by default scheduled as
// a line of the subscription's next invoice (adjustments/next-invoice.ts: the billing run carries it), or, per
// environment or when no next invoice comes soon enough, a USAGE_ADJUSTMENT invoice of its own; less is a credit note
// on the original invoice. Each adjustment is claimed under its key before its document is made under the same key,
// so whatever stops a run, the next finishes it and nothing is issued twice.
import { adjustmentKey, usageAdjustment, type SettledLine, type UsageAdjustment } from '../../../core/adjustments.ts'
import type { TaxRate } from '../../../core/billing/taxes.ts'
import { D, type Decimal } from '../../../core/money.ts'
import type { PriceInput } from '../../../core/pricing/index.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Fragment } from '../../../infra/records.ts'
import type { Progress } from '../../../infra/scheduler.ts'
import { inReach } from '../../customers/reach.ts'
import { metersByIds } from '../../catalog/meters/service.ts'
import { nextPoint } from '../../../core/billing/cycle.ts'
import { lateEvents } from '../../usage/analytics/reconciliation.ts'
import { auditOf, systemActor } from '../../records/service.ts'
import { requireSubscription } from '../../subscriptions/read.ts'
import { createCreditNote, creditableOf } from '../creditnotes/service.ts'
import { allowanceOf, billedThroughParent, cycleOf, loadContexts, type BillingContext } from '../invoices/billing.ts'
import { finalizeDraft } from '../invoices/finalize.ts'
import { createInvoice } from '../invoices/service.ts'
import { prefetchUsage, type UsageReader, type UsageRequest } from '../invoices/usage-batch.ts'
import { NAMED, namesOf, periodName } from './names.ts'
import * as store from './store.ts'

const PAGE = 200
const DAY_MS = 86_400_000

export interface AdjustmentSummary {
  lines: number
  charged: number
  credited: number
  /** Scheduled as lines of their subscription's next invoice (the billing run issues them). */
  scheduled: number
  /** Scheduled earlier, but no next invoice carried them in time: issued on invoices of their own. */
  fallen_back: number
  /** Below their environment's minimum: carried to the next run. */
  deferred: number
  /** Finished from an earlier run that stopped between claiming and issuing. */
  resumed: number
  failed: number
  errors: { invoice_line_item_id: string; error: string }[]
}

const scopeOf = (r: { tenant_id: string; environment_id: string }): Scope => ({ tenantId: r.tenant_id, environmentId: r.environment_id })
const scopeKey = (r: { tenant_id: string; environment_id: string }): string => `${r.tenant_id}|${r.environment_id}`
const documentKey = (key: string) => `usage-adjustment-${key}`

/** The invoice's percentage rates as they were applied to it (fixed rates are charged once per invoice, not per unit). */
async function invoiceRates(deps: Deps, scope: Scope, invoiceId: string): Promise<TaxRate[]> {
  const rows = await deps.sql<{ tax_rate: TaxRate }[]>`SELECT tax_rate FROM taxes_applied
    WHERE tenant_id = ${scope.tenantId} AND environment_id = ${scope.environmentId} AND entity_type = 'invoice' AND entity_id = ${invoiceId} AND status = 'published'`
  return rows.map((r) => r.tax_rate).filter((r) => r.tax_rate_type === 'percentage')
}

/** The line as it stood: its subscription line's price and the allowance its plan gave at the period's start. */
async function settledLine(deps: Deps, scope: Scope, line: store.CandidateRow, contexts: Map<string, BillingContext>): Promise<SettledLine | undefined> {
  if (!contexts.has(line.subscription_id)) {
    const sub = await requireSubscription(deps.sql, scope, line.subscription_id)
    contexts.set(line.subscription_id, (await loadContexts(deps, scope, [sub], { usagePricing: true })).get(sub.id)!)
  }
  const ctx = contexts.get(line.subscription_id)!
  const row = ctx.members.flatMap((m) => m.lines).find((l) => l.id === line.subscription_line_item_id)
  if (!row) return undefined
  return {
    price: row.price as unknown as PriceInput,
    allowance: allowanceOf(ctx, row, line.usage_start)?.allowance ?? null,
    taxRates: line.untaxed ? [] : await invoiceRates(deps, scope, line.invoice_id),
    settledUsage: new D(line.adjusted_usage ?? line.quantity),
  }
}

/** More usage: a one-off invoice of the difference, taxed at the original invoice's rates, finalized. */
async function issueCharge(deps: Deps, actor: Actor, line: store.CandidateRow, a: store.AdjustmentRow, rates: TaxRate[]): Promise<string> {
  const invoice = await createInvoice(deps, actor, {
    customer_id: line.invoice_customer_id,
    subscription_id: line.invoice_subscription_id,
    currency: line.currency,
    invoice_type: 'ONE_OFF',
    billing_reason: 'USAGE_ADJUSTMENT',
    idempotency_key: documentKey(a.adjustment_key),
    // The period is on the line only: a subscription has one invoice per (period start, billing reason), and a period
    // may be adjusted more than once (more late usage, a correction undoing some).
    subtotal: a.amount,
    total: a.total,
    amount_due: a.total,
    description: `Usage adjustment of invoice ${line.invoice_id}`,
    line_items: [
      {
        display_name: `${line.display_name ? `${line.display_name}: ` : ''}usage adjustment for ${periodName(line.usage_start, line.usage_end)}`,
        amount: a.amount,
        quantity: new D(a.usage_delta).abs().toFixed(),
        price_type: 'USAGE',
        meter_id: line.meter_id,
        period_start: line.usage_start.toISOString(),
        period_end: line.usage_end.toISOString(),
        metadata: { adjusted_invoice_id: line.invoice_id, adjusted_line_item_id: line.id, settled_usage: a.settled_usage },
      },
    ],
    // The original rates, and only those (no rates named would mean the customer's automatic rates of today).
    prepared_tax_rates: rates.map((r) => ({ id: r.id, tax_rate_type: 'percentage' as const, percentage_value: String(r.percentage_value) })),
    tax_rate_overrides: [],
    metadata: { usage_adjustment: a.id, adjusted_invoice_id: line.invoice_id, adjusted_line_item_id: line.id, ...namesOf(a) },
  })
  if (invoice.invoice_status === 'DRAFT') await finalizeDraft(deps, actor, auditOf(deps, actor), invoice.id)
  return invoice.id
}

/** Less usage: a credit note on the original line (refund or adjustment by its payment state), capped at what is still creditable. */
async function issueCredit(deps: Deps, actor: Actor, line: store.CandidateRow, a: store.AdjustmentRow): Promise<string | null> {
  const creditable = await creditableOf(deps, actor, line.invoice_id)
  const onLine = creditable.lines.find((l) => l.invoice_line_item_id === line.id)?.amount ?? new D(0)
  const amount = D.min(new D(a.total).abs(), onLine, creditable.total)
  if (!amount.isPos()) return null
  const note = await createCreditNote(deps, actor, {
    invoice_id: line.invoice_id,
    reason: 'BILLING_ERROR',
    memo: `usage correction: usage adjustment for ${periodName(line.usage_start, line.usage_end)}`,
    line_items: [{ invoice_line_item_id: line.id, amount: amount.toFixed() }],
    idempotency_key: documentKey(a.adjustment_key),
    metadata: { reason: 'usage_correction', usage_adjustment: a.id, settled_usage: a.settled_usage, ...namesOf(a) },
    process_credit_note: true,
  })
  return note.id
}

/** A claimed adjustment's document: its own invoice (a charge) or a credit note, at the rates it was priced with. */
async function issue(deps: Deps, scope: Scope, line: store.CandidateRow, a: store.AdjustmentRow): Promise<void> {
  const actor = systemActor(scope)
  // Rows claimed before 0900 kept no rates: the original invoice's are read again.
  const rates = a.tax_rates.length > 0 || new D(a.tax).isZero() ? a.tax_rates : await invoiceRates(deps, scope, a.invoice_id)
  const id = a.kind === 'charge' ? await issueCharge(deps, actor, line, a, rates) : await issueCredit(deps, actor, line, a)
  await store.markIssued(deps.sql, a.id, id ? (a.kind === 'charge' ? 'invoice' : 'credit_note') : null, id, deps.clock.now())
}

const usageRequest = (line: store.CandidateRow): UsageRequest => ({ meterId: line.meter_id, externalCustomerId: line.external_customer_id, start: line.usage_start, end: line.usage_end })

/** A page's usage, read a scope, meter and window at a time for all its customers (as a billing run reads it). */
async function pageUsage(deps: Deps, page: store.CandidateRow[]): Promise<Map<string, UsageReader>> {
  const byScope = new Map<string, store.CandidateRow[]>()
  for (const line of page) byScope.set(scopeKey(line), [...(byScope.get(scopeKey(line)) ?? []), line])
  const readers = new Map<string, UsageReader>()
  for (const [key, lines] of byScope) readers.set(key, await prefetchUsage(deps, scopeOf(lines[0]), lines.map(usageRequest)))
  return readers
}

/**
 * When the subscription's next invoice comes, if it can carry a charge: the subscription bills again (not cancelled or
 * ended before its next billing point) within one of the adjusted line's periods from now. Otherwise none: the charge
 * is issued on an invoice of its own.
 */
async function carryBy(deps: Deps, scope: Scope, line: store.CandidateRow, now: Date): Promise<Date | null> {
  const sub = await requireSubscription(deps.sql, scope, line.invoice_subscription_id)
  if (billedThroughParent(sub)) return null
  const next = nextPoint(cycleOf(sub), now)
  const horizon = now.getTime() + (line.usage_end.getTime() - line.usage_start.getTime())
  return next && next.at.getTime() <= horizon ? next.at : null
}

/** What the adjustment settles since the line was last settled: its corrections and late events, by id and counted. */
async function settles(deps: Deps, scope: Scope, line: store.CandidateRow, now: Date) {
  const [meter] = await metersByIds(deps, scope, [line.meter_id])
  const late = await lateEvents(deps.ch, {
    scope,
    externalCustomerId: line.external_customer_id,
    meter: { meterId: meter.id, revision: meter.ready_revision, eventName: meter.event_name },
    start: line.usage_start,
    end: line.usage_end,
    after: line.settled_at,
    until: now,
    limit: NAMED,
  })
  const corrections = await store.correctionsSince(deps.sql, scope, line, NAMED)
  return { correction_ids: corrections.ids, corrections: corrections.count, late_event_ids: late.ids, late_events: late.count }
}

/** The adjustment of one line, if its usage moved and the difference is worth issuing now. */
async function adjustLine(deps: Deps, line: store.CandidateRow, read: UsageReader, contexts: Map<string, BillingContext>, summary: AdjustmentSummary): Promise<void> {
  const scope = scopeOf(line)
  const current = await read(usageRequest(line))
  const settledUsage = new D(line.adjusted_usage ?? line.quantity)
  if (current.eq(settledUsage)) return
  const settled = await settledLine(deps, scope, line, contexts)
  if (!settled) return
  const adjustment: UsageAdjustment = usageAdjustment(settled, current, line.currency, new D(line.minimum_amount))
  if (adjustment.kind === 'none') return
  if (adjustment.deferred) {
    summary.deferred++
    return
  }
  const now = deps.clock.now()
  const carry = adjustment.kind === 'charge' && line.method === 'next_invoice' ? await carryBy(deps, scope, line, now) : null
  const claimed = await store.claim(deps.sql, scope, { ...fieldsOf(line, current, adjustment, settled.taxRates ?? [], carry), ...(await settles(deps, scope, line, now)) }, now)
  if (claimed.status === 'scheduled') summary.scheduled++
  if (claimed.status !== 'pending') return
  await issue(deps, scope, line, claimed)
  if (adjustment.kind === 'charge') summary.charged++
  else summary.credited++
}

const fieldsOf = (line: store.CandidateRow, current: Decimal, a: UsageAdjustment, rates: TaxRate[], carryBy: Date | null) => ({
  invoice_id: line.invoice_id,
  invoice_line_item_id: line.id,
  // The line's n-th adjustment to this usage: 100 → 120 → 119 → 120 is three adjustments, the third not the first again.
  adjustment_key: adjustmentKey(`${line.id}#${line.adjustments}`, current),
  settled_usage: current.toFixed(),
  usage_delta: a.usageDelta.toFixed(),
  amount: a.amount.toFixed(),
  tax: a.tax.toFixed(),
  total: a.total.toFixed(),
  kind: a.kind as 'charge' | 'credit',
  status: carryBy ? ('scheduled' as const) : ('pending' as const),
  method: a.kind === 'credit' ? ('credit_note' as const) : carryBy ? ('next_invoice' as const) : ('own_invoice' as const),
  subscription_id: line.invoice_subscription_id,
  carry_by: carryBy,
  tax_rates: rates,
})

/** Adjustments a stopped run claimed but did not issue: issued now with the amounts they were claimed with. */
async function resumePending(deps: Deps, summary: AdjustmentSummary, reach: Fragment): Promise<void> {
  for (const a of await store.pending(deps.sql, PAGE, reach)) {
    const scope = scopeOf(a)
    try {
      await issue(deps, scope, await store.candidateById(deps.sql, scope, a.invoice_line_item_id), a)
      summary.resumed++
    } catch (err) {
      summary.failed++
      summary.errors.push({ invoice_line_item_id: a.invoice_line_item_id, error: (err as Error).message })
    }
  }
}

/**
 * Scheduled adjustments no next invoice will carry: their subscription has no billing point at or after the one they
 * wait for any more (cancelled or ended since), or a day passed after it without the billing run carrying them. Taken
 * back from the billing run (a conditional update: if it carried one meanwhile, that one stays carried) and issued on
 * an invoice of their own.
 */
async function fallBack(deps: Deps, summary: AdjustmentSummary, reach: Fragment): Promise<void> {
  const now = deps.clock.now()
  for (let after = '0'; ; ) {
    const page = await store.scheduled(deps.sql, after, PAGE, reach)
    if (page.length === 0) return
    after = page[page.length - 1].seq
    for (const a of page) {
      const scope = scopeOf(a)
      try {
        const sub = await requireSubscription(deps.sql, scope, a.subscription_id!)
        const waiting = a.carry_by!.getTime() + DAY_MS > now.getTime() && nextPoint(cycleOf(sub), new Date(a.carry_by!.getTime() - 1)) !== undefined
        if (waiting || !(await store.unschedule(deps.sql, a.id))) continue
        await issue(deps, scope, await store.candidateById(deps.sql, scope, a.invoice_line_item_id), { ...a, status: 'pending', method: 'own_invoice' })
        summary.fallen_back++
      } catch (err) {
        summary.failed++
        summary.errors.push({ invoice_line_item_id: a.invoice_line_item_id, error: (err as Error).message })
      }
    }
  }
}

export async function runUsageAdjustments(deps: Deps, progress: Progress = () => {}): Promise<AdjustmentSummary> {
  const summary: AdjustmentSummary = { lines: 0, charged: 0, credited: 0, scheduled: 0, fallen_back: 0, deferred: 0, resumed: 0, failed: 0, errors: [] }
  const reach = inReach(deps.sql, deps, 'li.customer_id')
  await resumePending(deps, summary, reach)
  await fallBack(deps, summary, reach)
  const contexts = new Map<string, BillingContext>()
  for (let after = ''; ; ) {
    const page = await store.candidates(deps.sql, deps.clock.now(), after, PAGE, reach)
    if (page.length === 0) break
    after = page[page.length - 1].id
    const usage = await pageUsage(deps, page)
    for (const line of page) {
      try {
        await adjustLine(deps, line, usage.get(scopeKey(line))!, contexts, summary)
      } catch (err) {
        // One line that cannot be adjusted now is left for the next run instead of holding up the rest.
        summary.failed++
        summary.errors.push({ invoice_line_item_id: line.id, error: (err as Error).message })
      }
    }
    summary.lines += page.length
    progress(summary.lines, 0, 'usage lines')
  }
  summary.errors = summary.errors.slice(0, 100)
  return summary
}
