// The usage-adjustments job (docs/invoicing.md "Late usage and corrections settle themselves"): finalized usage lines
// whose stored usage now differs from what they settled (the invoice's quantity, then each adjustment's) are priced
// again by core/adjustments.ts with the line's own price, allowance and tax rates; more usage is a USAGE_ADJUSTMENT
// invoice, less a credit note on the original invoice. Each adjustment is claimed under its key before its document
// is made under the same key, so whatever stops a run, the next finishes it and nothing is issued twice.
import { adjustmentKey, usageAdjustment, type SettledLine, type UsageAdjustment } from '../../../core/adjustments.ts'
import type { TaxRate } from '../../../core/billing/taxes.ts'
import { D, type Decimal } from '../../../core/money.ts'
import type { PriceInput } from '../../../core/pricing/index.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Fragment } from '../../../infra/records.ts'
import type { Progress } from '../../../infra/scheduler.ts'
import { inReach } from '../../customers/reach.ts'
import { auditOf, systemActor } from '../../records/service.ts'
import { requireSubscription } from '../../subscriptions/read.ts'
import { createCreditNote, creditableOf } from '../creditnotes/service.ts'
import { allowanceOf, loadContexts, type BillingContext } from '../invoices/billing.ts'
import { finalizeDraft } from '../invoices/finalize.ts'
import { createInvoice } from '../invoices/service.ts'
import { prefetchUsage, type UsageReader, type UsageRequest } from '../invoices/usage-batch.ts'
import * as store from './store.ts'

const PAGE = 200
/** Corrections named on one document at most (metadata values stay short; the rest are in GET /v1/events/corrections). */
const NAMED_CORRECTIONS = 20

export interface AdjustmentSummary {
  lines: number
  charged: number
  credited: number
  /** Below their environment's minimum: carried to the next run. */
  deferred: number
  /** Finished from an earlier run that stopped between claiming and issuing. */
  resumed: number
  failed: number
  errors: { invoice_line_item_id: string; error: string }[]
}

const scopeOf = (r: { tenant_id: string; environment_id: string }): Scope => ({ tenantId: r.tenant_id, environmentId: r.environment_id })
const scopeKey = (r: { tenant_id: string; environment_id: string }): string => `${r.tenant_id}|${r.environment_id}`
const day = (d: Date) => d.toISOString().slice(0, 10)
const periodName = (l: store.CandidateRow) => `${day(l.usage_start)} – ${day(l.usage_end)}`
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
async function issueCharge(deps: Deps, actor: Actor, line: store.CandidateRow, a: store.AdjustmentRow, rates: TaxRate[], named: Record<string, string>): Promise<string> {
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
        display_name: `${line.display_name ? `${line.display_name}: ` : ''}usage adjustment for ${periodName(line)}`,
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
    metadata: { usage_adjustment: a.id, adjusted_invoice_id: line.invoice_id, adjusted_line_item_id: line.id, ...named },
  })
  if (invoice.invoice_status === 'DRAFT') await finalizeDraft(deps, actor, auditOf(deps, actor), invoice.id)
  return invoice.id
}

/** Less usage: a credit note on the original line (refund or adjustment by its payment state), capped at what is still creditable. */
async function issueCredit(deps: Deps, actor: Actor, line: store.CandidateRow, a: store.AdjustmentRow, named: Record<string, string>): Promise<string | null> {
  const creditable = await creditableOf(deps, actor, line.invoice_id)
  const onLine = creditable.lines.find((l) => l.invoice_line_item_id === line.id)?.amount ?? new D(0)
  const amount = D.min(new D(a.total).abs(), onLine, creditable.total)
  if (!amount.isPos()) return null
  const note = await createCreditNote(deps, actor, {
    invoice_id: line.invoice_id,
    reason: 'BILLING_ERROR',
    memo: `usage correction: usage adjustment for ${periodName(line)}`,
    line_items: [{ invoice_line_item_id: line.id, amount: amount.toFixed() }],
    idempotency_key: documentKey(a.adjustment_key),
    metadata: { reason: 'usage_correction', usage_adjustment: a.id, settled_usage: a.settled_usage, ...named },
    process_credit_note: true,
  })
  return note.id
}

async function issue(deps: Deps, scope: Scope, line: store.CandidateRow, a: store.AdjustmentRow, rates: TaxRate[]): Promise<void> {
  const actor = systemActor(scope)
  // The corrections it settles, by id; late events it counts (usage_delta) but does not list.
  const corrections = await store.correctionsSince(deps.sql, scope, line.id, NAMED_CORRECTIONS)
  const named: Record<string, string> = corrections.length > 0 ? { corrections: corrections.join(',') } : {}
  const id = a.kind === 'charge' ? await issueCharge(deps, actor, line, a, rates, named) : await issueCredit(deps, actor, line, a, named)
  await store.markIssued(deps.sql, a.id, id ? (a.kind === 'charge' ? 'invoice' : 'credit_note') : null, id, deps.clock.now())
}

/** The adjustment of one line, if its usage moved and the difference is worth issuing now. */
const usageRequest = (line: store.CandidateRow): UsageRequest => ({ meterId: line.meter_id, externalCustomerId: line.external_customer_id, start: line.usage_start, end: line.usage_end })

/** A page's usage, read a scope, meter and window at a time for all its customers (as a billing run reads it). */
async function pageUsage(deps: Deps, page: store.CandidateRow[]): Promise<Map<string, UsageReader>> {
  const byScope = new Map<string, store.CandidateRow[]>()
  for (const line of page) byScope.set(scopeKey(line), [...(byScope.get(scopeKey(line)) ?? []), line])
  const readers = new Map<string, UsageReader>()
  for (const [key, lines] of byScope) readers.set(key, await prefetchUsage(deps, scopeOf(lines[0]), lines.map(usageRequest)))
  return readers
}

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
  const claimed = await store.claim(deps.sql, scope, fieldsOf(line, current, adjustment), deps.clock.now())
  if (claimed.status === 'issued') return
  await issue(deps, scope, line, claimed, settled.taxRates ?? [])
  if (adjustment.kind === 'charge') summary.charged++
  else summary.credited++
}

const fieldsOf = (line: store.CandidateRow, current: Decimal, a: UsageAdjustment) => ({
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
})

/** Adjustments a stopped run claimed but did not issue: issued now with the amounts they were claimed with. */
async function resumePending(deps: Deps, summary: AdjustmentSummary, reach: Fragment): Promise<void> {
  for (const a of await store.pending(deps.sql, PAGE, reach)) {
    const scope = scopeOf(a)
    try {
      const line = await store.candidateById(deps.sql, scope, a.invoice_line_item_id)
      await issue(deps, scope, line, a, line.untaxed ? [] : await invoiceRates(deps, scope, a.invoice_id))
      summary.resumed++
    } catch (err) {
      summary.failed++
      summary.errors.push({ invoice_line_item_id: a.invoice_line_item_id, error: (err as Error).message })
    }
  }
}

export async function runUsageAdjustments(deps: Deps, progress: Progress = () => {}): Promise<AdjustmentSummary> {
  const summary: AdjustmentSummary = { lines: 0, charged: 0, credited: 0, deferred: 0, resumed: 0, failed: 0, errors: [] }
  const reach = inReach(deps.sql, deps, 'li.customer_id')
  await resumePending(deps, summary, reach)
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
