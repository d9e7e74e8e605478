// The billing run (worker job `billing-run`): every subscription's billing points that are due get
// their invoice, oldest first (catch-up after a start in the past or downtime); subscriptions with an
// auto-invoice threshold get a mid-period invoice once their usage charges reach it (rule 5); drafts
// whose grace period ended are finalized. Invoices are stored and finalized a batch per transaction, and the unique
// key (subscription, period start, billing reason) makes a rerun or a concurrent run bill nothing twice.
// The `invoice-overdue` job announces finalized invoices past their due date, once each.
import { duePoints, nextPoint, type BillingPoint } from '../../../core/billing/cycle.ts'
import { inParallel, timeSlicer, yieldToLoop } from '../../../core/concurrency.ts'
import { sumMoney } from '../../../core/money.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Audit } from '../../../infra/records.ts'
import type { Progress } from '../../../infra/scheduler.ts'
import { redeemSubscriptionCoupons } from '../coupons/service.ts'
import { carrying, scheduledAdjustments, type Carried } from '../adjustments/next-invoice.ts'
import { transaction } from '../../records/service.ts'
import { inReach } from '../../customers/reach.ts'
import { subscriptionsAfter, type SubscriptionRow } from '../../subscriptions/read.ts'
import { assemble } from './assemble.ts'
import { billedThroughParent, cycleOf, loadContexts, pointSpec, subscriptionHeader, thresholdPoint, usageRequests, type BillingContext } from './billing.ts'
import { prefetchUsage, type UsageReader } from './usage-batch.ts'
import { createSubscriptionInvoices } from './subscription-invoices.ts'
import { finalizeDrafts } from './finalize-many.ts'
import { announceInvoices } from './read.ts'
import { type PointInvoice } from './billing.ts'
import * as store from './store.ts'

const PAGE = 500
/** Subscriptions computed at once: usage reads of one overlap the writes of another. */
const CONCURRENCY = 8
/**
 * Subscriptions whose invoices are stored in one transaction: a smaller batch isolates a failure sooner, a
 * larger one commits less often. On embedded PGlite every request's query waits for the open transaction on
 * its one connection, so batches there are small: a health probe waits for 25 subscriptions, not 250.
 */
const batchSize = (deps: Deps): number => (deps.engines.postgres === 'pglite' ? 25 : 250)

export interface RunSummary {
  subscriptions: number
  invoices_created: number
  threshold_invoices: number
  finalized: number
  skipped: number
  failed: number
  errors: { subscription_id?: string; invoice_id?: string; error: string }[]
}

const scopeOf = (s: { tenant_id: string; environment_id: string }): Scope => ({ tenantId: s.tenant_id, environmentId: s.environment_id })

/** Rows grouped by their scope, each group in the rows' order. */
function groupByScope<R extends { tenant_id: string; environment_id: string }>(rows: R[]): Map<string, { scope: Scope; items: R[] }> {
  const groups = new Map<string, { scope: Scope; items: R[] }>()
  for (const r of rows) {
    const key = `${r.tenant_id}/${r.environment_id}`
    const g = groups.get(key) ?? { scope: scopeOf(r), items: [] }
    g.items.push(r)
    groups.set(key, g)
  }
  return groups
}

/** The invoices of one subscription's due points, computed in order (a coupon's periods count across them). */
async function pointInvoices(deps: Deps, scope: Scope, ctx: BillingContext, points: BillingPoint[], usage: UsageReader, scheduled?: Carried): Promise<PointInvoice[]> {
  const redeemed = new Map<string, number>()
  const items: PointInvoice[] = []
  for (const point of points) {
    // Usage adjustments waiting for the subscription's next invoice ride on the first one of the run.
    const carried = items.length === 0 ? scheduled : undefined
    const assembled = assemble(carrying(await pointSpec(deps, scope, ctx, point, { redeemed, usage }), carried))
    for (const a of assembled.computed.coupon_applications) if (a.coupon_association_id && a.discounted_amount.gt(0)) redeemed.set(a.coupon_association_id, (redeemed.get(a.coupon_association_id) ?? 0) + 1)
    items.push({ header: subscriptionHeader(ctx.sub, point, deps.config.invoicing.graceMs), assembled, subscription: ctx.sub, adjustments: carried?.ids })
  }
  return items
}

function count(rows: { invoice_status: string }[], summary: RunSummary, field: 'invoices_created' | 'threshold_invoices'): void {
  summary[field] += rows.length
  summary.finalized += rows.filter((r) => r.invoice_status === 'FINALIZED').length
  summary.skipped += rows.filter((r) => r.invoice_status === 'SKIPPED').length
}

/** Rule 5: the running period's usage charges since the last cut reached the threshold: bill them now. */
async function billThreshold(deps: Deps, scope: Scope, ctx: BillingContext, now: Date, summary: RunSummary): Promise<void> {
  const next = nextPoint(cycleOf(ctx.sub), now)
  if (!next?.arrear || next.arrear.start > now) return
  const from = (await store.lastThresholdCut(deps.sql, scope, ctx.sub.id, next.arrear.start, now)) ?? next.arrear.start
  if (from >= now) return
  const point = thresholdPoint(from, now, next.arrear.full)
  const assembled = assemble(await pointSpec(deps, scope, ctx, point, { usageFrom: from, usageOnly: true }))
  const charges = sumMoney(assembled.computed.line_items.map((l) => l.amount))
  if (charges.isZero() || charges.lt(ctx.sub.auto_invoice_threshold!)) return
  const header = { ...subscriptionHeader(ctx.sub, { ...point, sequence: null }, deps.config.invoicing.graceMs) }
  count(await createSubscriptionInvoices(deps, scope, [{ header, assembled, subscription: ctx.sub }]), summary, 'threshold_invoices')
}

const failure = (summary: RunSummary, subscriptionId: string, err: unknown, deps: Deps) => {
  summary.failed++
  summary.errors.push({ subscription_id: subscriptionId, error: (err as Error).message })
  deps.logger.error({ err, subscription_id: subscriptionId }, 'billing run: subscription failed')
}

async function billScope(deps: Deps, scope: Scope, subs: SubscriptionRow[], now: Date, summary: RunSummary): Promise<void> {
  const owners = subs.filter((s) => !billedThroughParent(s))
  const last = await store.lastSequences(deps.sql, scope, owners.map((s) => s.id))
  const threshold = (s: SubscriptionRow) => s.auto_invoice_threshold !== null && s.subscription_status !== 'cancelled'
  // The run shares the process with HTTP requests: its pure steps pause every few milliseconds to let them in.
  const pause = timeSlicer()
  // Computed once per subscription: period arithmetic in a time zone is the run's costliest pure step.
  const points = new Map<string, BillingPoint[]>()
  for (const s of owners) {
    points.set(s.id, duePoints(cycleOf(s), now, last.get(s.id) ?? 0))
    await pause()
  }
  const due = owners.filter((s) => points.get(s.id)!.length > 0 || threshold(s))
  if (due.length === 0) return
  await redeemSubscriptionCoupons(deps, scope, due)
  const contexts = await loadContexts(deps, scope, due)
  const scheduled = await scheduledAdjustments(deps.sql, scope, due.map((s) => s.id))
  // Usage of every due point, a meter and window at a time (threshold cuts are read as they come).
  const requests = due.filter((s) => !threshold(s)).flatMap((s) => points.get(s.id)!.flatMap((p) => usageRequests(contexts.get(s.id)!, p)))
  const usage = await prefetchUsage(deps, scope, requests)
  const computed = new Map<string, PointInvoice[]>()
  await inParallel(due, CONCURRENCY, async (sub) => {
    try {
      computed.set(sub.id, await pointInvoices(deps, scope, contexts.get(sub.id)!, points.get(sub.id)!, usage, scheduled.get(sub.id)))
    } catch (err) {
      failure(summary, sub.id, err, deps)
    }
    await pause()
  })
  const stored = due.filter((s) => computed.has(s.id))
  const size = batchSize(deps)
  for (let i = 0; i < stored.length; i += size) {
    const batch = stored.slice(i, i + size)
    await yieldToLoop()
    try {
      count(await createSubscriptionInvoices(deps, scope, batch.flatMap((s) => computed.get(s.id)!)), summary, 'invoices_created')
    } catch {
      // One subscription's invoice failed the batch: store them one subscription at a time to isolate it.
      for (const sub of batch) {
        await createSubscriptionInvoices(deps, scope, computed.get(sub.id)!).then((rows) => count(rows, summary, 'invoices_created'), (err) => failure(summary, sub.id, err, deps))
      }
    }
  }
  for (const sub of due.filter(threshold)) await billThreshold(deps, scope, contexts.get(sub.id)!, now, summary).catch((err) => failure(summary, sub.id, err, deps))
}

/** Finalizes drafts whose grace period ended, a batch per transaction; one that fails stays a draft and is reported. */
async function finalizeDue(deps: Deps, now: Date, summary: RunSummary, progress: Progress): Promise<void> {
  const audit: Audit = { by: 'system', at: now }
  const failed: string[] = []
  for (;;) {
    const drafts = await store.draftsToFinalize(deps.sql, now, PAGE, inReach(deps.sql, deps, 'invoices.customer_id'), failed)
    if (drafts.length === 0) return
    let done = 0
    for (const { scope, items } of groupByScope(drafts).values()) {
      for (const [id, outcome] of await finalizeDrafts(deps, scope, audit, items, batchSize(deps))) {
        if (outcome instanceof Error) {
          failed.push(id)
          summary.failed++
          summary.errors.push({ invoice_id: id, error: outcome.message })
        } else if (outcome.invoice_status === 'FINALIZED') summary.finalized++
        else summary.skipped++
      }
      progress((done += items.length), drafts.length, 'finalizing drafts')
    }
  }
}

export async function runBilling(deps: Deps, progress: Progress = () => {}, now: Date = deps.clock.now()): Promise<RunSummary> {
  const summary: RunSummary = { subscriptions: 0, invoices_created: 0, threshold_invoices: 0, finalized: 0, skipped: 0, failed: 0, errors: [] }
  for (let after = ''; ; ) {
    const page = await subscriptionsAfter(deps, after, PAGE)
    if (page.length === 0) break
    after = page[page.length - 1].id
    for (const { scope, items } of groupByScope(page).values()) await billScope(deps, scope, items, now, summary)
    summary.subscriptions += page.length
    progress(summary.subscriptions, 0, 'subscriptions')
  }
  await finalizeDue(deps, now, summary, progress)
  deps.metrics.billingInvoices.inc(summary.invoices_created + summary.threshold_invoices)
  deps.metrics.billingFailures.inc(summary.failed)
  summary.errors = summary.errors.slice(0, 100)
  return summary
}

/**
 * invoice.payment.overdue, once per invoice, for finalized invoices still owing after their due date: a batch of a
 * scope's invoices marked and announced per transaction (the mark skips any a concurrent run marked first).
 */
export async function markOverdue(deps: Deps, now: Date = deps.clock.now()): Promise<{ overdue: number }> {
  let overdue = 0
  const size = batchSize(deps)
  for (;;) {
    const rows = await store.overdue(deps.sql, now, PAGE, inReach(deps.sql, deps, 'invoices.customer_id'))
    if (rows.length === 0) return { overdue }
    for (const { scope, items } of groupByScope(rows).values()) {
      for (let i = 0; i < items.length; i += size) {
        const ids = items.slice(i, i + size).map((r) => r.id)
        await transaction(deps, async (tx) => {
          const marked = await store.markOverdue(tx, scope, ids, now)
          // In the page's order (due date): the update returns its rows in no particular order.
          marked.sort((a, b) => ids.indexOf(a.id) - ids.indexOf(b.id))
          await announceInvoices(tx, scope, marked.map((row) => ({ eventType: 'invoice.payment.overdue', row })))
          overdue += marked.length
        })
      }
    }
  }
}
