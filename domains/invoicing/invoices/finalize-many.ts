// Finalizing a page of drafts whose grace period ended (the billing run): each as finalizeDraft would, but a batch at
// a time: read together (subscriptions, billing contexts, usage a meter and window at a time for all), then written
// in one transaction. A batch that fails (a draft changed or deleted meanwhile, a wallet refusing a debit) rolls back
// whole and its drafts go through finalizeDraft one by one, which isolates the failure and answers as it always did.
import type { Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Audit } from '../../../infra/records.ts'
import { transaction } from '../../records/service.ts'
import type { BillingPoint } from '../../../core/billing/cycle.ts'
import { findSubscriptions, type SubscriptionRow } from '../../subscriptions/read.ts'
import { loadContexts, usageRequests } from './billing.ts'
import { computedAgain, draftPoint, finalizeDraft, finalizeLockedMany, freshSpec, type LockedDraft } from './finalize.ts'
import { announceInvoices } from './read.ts'
import { prefetchUsage } from './usage-batch.ts'
import { carriedBy } from '../adjustments/next-invoice.ts'
import * as store from './store.ts'

/** A draft's outcome: its finalized (or SKIPPED) invoice, or the error that left it a draft. */
type Outcome = store.InvoiceRow | Error

/**
 * The drafts' fresh specs, read together; a draft whose spec cannot be computed is left out, and all are when what
 * they share cannot be read (finalizeDraft then says why, draft by draft).
 */
async function freshSpecs(deps: Deps, scope: Scope, drafts: store.InvoiceRow[]): Promise<Map<string, LockedDraft['spec']>> {
  const specs = new Map<string, LockedDraft['spec']>()
  for (const d of drafts) if (!computedAgain(d)) specs.set(d.id, undefined)
  const again = drafts.filter(computedAgain)
  if (again.length > 0) await againSpecs(deps, scope, again, specs).catch(() => {})
  return specs
}

async function againSpecs(deps: Deps, scope: Scope, again: store.InvoiceRow[], specs: Map<string, LockedDraft['spec']>): Promise<void> {
  const subs = new Map((await findSubscriptions(deps.sql, scope, again.map((d) => d.subscription_id!))).map((s) => [s.id, s]))
  const contexts = await loadContexts(deps, scope, [...subs.values()])
  // A draft whose billing point cannot be found is left out: finalizeDraft reports it.
  const points = new Map(again.flatMap((d) => (subs.has(d.subscription_id!) ? pointOf(subs.get(d.subscription_id!)!, d) : [])))
  const ready = again.filter((d) => points.has(d.id))
  const usage = await prefetchUsage(deps, scope, ready.flatMap((d) => usageRequests(contexts.get(d.subscription_id!)!, points.get(d.id)!)))
  const carried = await carriedBy(deps.sql, scope, ready.map((d) => d.id))
  for (const d of ready) {
    const sub = subs.get(d.subscription_id!)!
    await freshSpec(deps, scope, d, { sub, ctx: contexts.get(sub.id)!, usage, point: points.get(d.id)!, carried }).then(
      (spec) => specs.set(d.id, spec),
      () => {},
    )
  }
}

/** The draft's billing point, as an entry by draft id; none when its subscription has no such point. */
function pointOf(sub: SubscriptionRow, draft: store.InvoiceRow): [string, BillingPoint][] {
  try {
    return [[draft.id, draftPoint(sub, draft)]]
  } catch {
    return []
  }
}

/** One batch in one transaction: every draft as it was read, else nothing is written. */
async function finalizeBatch(deps: Deps, scope: Scope, audit: Audit, batch: store.InvoiceRow[], specs: Map<string, LockedDraft['spec']>): Promise<store.InvoiceRow[]> {
  return transaction(deps, async (tx) => {
    const locked = await store.lockInvoices(tx, scope, batch.map((d) => d.id))
    const drafts = batch.map((before) => {
      const invoice = locked.get(before.id)
      if (!invoice || invoice.status === 'deleted' || invoice.version !== before.version) throw new Error(`invoice ${before.id} changed while it was being finalized`)
      return { invoice, spec: specs.get(before.id) }
    })
    const { rows, children } = await finalizeLockedMany(deps, tx, scope, audit, drafts)
    await announceInvoices(tx, scope, rows.map((row) => ({ eventType: row.invoice_status === 'FINALIZED' ? 'invoice.update.finalized' : 'invoice.update', row })), children)
    return rows
  })
}

/**
 * Batches of at most `size` drafts, in order, none holding two drafts of one subscription: a draft's spec is read
 * after the batch before it committed, so a later draft of a subscription counts what the earlier one's finalization
 * wrote (its coupon applications), as one by one.
 */
function batches(drafts: store.InvoiceRow[], size: number): store.InvoiceRow[][] {
  const out: store.InvoiceRow[][] = []
  let current: store.InvoiceRow[] = []
  const subs = new Set<string>()
  for (const d of drafts) {
    if (current.length >= size || (d.subscription_id && subs.has(d.subscription_id))) {
      out.push(current)
      current = []
      subs.clear()
    }
    current.push(d)
    if (d.subscription_id) subs.add(d.subscription_id)
  }
  if (current.length > 0) out.push(current)
  return out
}

/**
 * Finalizes drafts of one scope in their order, at most `size` per transaction: the outcome of each, its finalized
 * (or SKIPPED) invoice or the error that left it a draft.
 */
export async function finalizeDrafts(deps: Deps, scope: Scope, audit: Audit, drafts: store.InvoiceRow[], size: number): Promise<Map<string, Outcome>> {
  const outcomes = new Map<string, Outcome>()
  const one = (id: string) => finalizeDraft(deps, scope, audit, id).then((row) => outcomes.set(id, row), (err: Error) => outcomes.set(id, err))
  for (const batch of batches(drafts, size)) {
    const specs = await freshSpecs(deps, scope, batch)
    // In order: a draft whose spec could not be computed goes alone, the runs of drafts between such ones together.
    for (let i = 0; i < batch.length; ) {
      if (!specs.has(batch[i].id)) {
        await one(batch[i++].id)
        continue
      }
      const run: store.InvoiceRow[] = []
      while (i < batch.length && specs.has(batch[i].id)) run.push(batch[i++])
      const rows = await finalizeBatch(deps, scope, audit, run, specs).catch(() => undefined)
      if (rows) for (const row of rows) outcomes.set(row.id, row)
      else for (const d of run) await one(d.id)
    }
  }
  return outcomes
}
