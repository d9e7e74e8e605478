// Finalizing a draft: computed again (a subscription draft counts late usage), prepaid credits applied,
// then a zero invoice that asks for no payment is SKIPPED and any other takes the next gap-free number.
import { formatNumber, numberScope } from '../../../core/billing/numbering.ts'
import { AppError, invalidOperation } from '../../../core/errors.ts'
import { type Decimal } from '../../../core/money.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Tx } from '../../../infra/postgres.ts'
import { updateRecords, type Audit } from '../../../infra/records.ts'
import { auditOf, transaction } from '../../records/service.ts'
import { requireSubscription, type SubscriptionRow } from '../../subscriptions/read.ts'
import type { BillingPoint } from '../../../core/billing/cycle.ts'
import { amountsOf, assemble, inputsOf, specOf, writeComputedMany, type Assembled, type InvoiceSpec } from './assemble.ts'
import { loadContext, pointBySequence, pointSpec, thresholdPoint, type BillingContext } from './billing.ts'
import type { UsageReader } from './usage-batch.ts'
import { preparePrepaid, prepaidCredits, takePrepaidCredits } from './prepaid.ts'
import { withCarried, type Carried } from '../adjustments/next-invoice.ts'
import * as store from './store.ts'
import { announceInvoice, lockInvoice, requireInvoice } from './read.ts'

const RECOMPUTED = ['SUBSCRIPTION_CREATE', 'SUBSCRIPTION_CYCLE', 'SUBSCRIPTION_TRIAL_START', 'SUBSCRIPTION_TRIAL_END', 'PRORATION', 'AUTO_INVOICE_THRESHOLD']

/** Whether finalization computes the draft again: a subscription draft of a billing point or a threshold cut. */
export const computedAgain = (invoice: store.InvoiceRow): boolean => !!invoice.subscription_id && invoice.invoice_type === 'SUBSCRIPTION' && RECOMPUTED.includes(invoice.billing_reason)

/** The billing point a subscription draft bills (computedAgain). */
export function draftPoint(sub: SubscriptionRow, invoice: store.InvoiceRow): BillingPoint {
  if (invoice.billing_reason !== 'AUTO_INVOICE_THRESHOLD') return pointBySequence(sub, invoice.billing_sequence!)
  return thresholdPoint(invoice.period_start!, invoice.period_end!, pointBySequence(sub, 1).period)
}

/** What freshSpec reads, when the caller read it for many drafts at once (finalize-many.ts). */
export interface FreshInputs {
  sub: SubscriptionRow
  ctx: BillingContext
  usage: UsageReader
  point: BillingPoint
  /** The usage adjustments the batch's drafts carry, by draft. */
  carried: Map<string, Carried>
}

/**
 * What a draft is computed from at finalization: a subscription draft is computed again (late usage
 * inside the grace period counts); a one-off draft keeps its lines.
 */
export async function freshSpec(deps: Deps, scope: Scope, invoice: store.InvoiceRow, inputs?: FreshInputs): Promise<InvoiceSpec | undefined> {
  if (!computedAgain(invoice)) return undefined
  const sub = inputs?.sub ?? (await requireSubscription(deps.sql, scope, invoice.subscription_id!))
  const ctx = inputs?.ctx ?? (await loadContext(deps, scope, sub))
  const point = inputs?.point ?? draftPoint(sub, invoice)
  const usage = inputs?.usage
  if (invoice.billing_reason === 'AUTO_INVOICE_THRESHOLD') return pointSpec(deps, scope, ctx, point, { usageFrom: invoice.period_start!, usageOnly: true, exceptInvoiceId: invoice.id, usage })
  return withCarried(deps.sql, scope, invoice.id, await pointSpec(deps, scope, ctx, point, { exceptInvoiceId: invoice.id, usage }), inputs?.carried)
}

const isTrialStart = (i: Pick<store.InvoiceRow, 'billing_reason'>) => i.billing_reason === 'SUBSCRIPTION_TRIAL_START'

/**
 * Finalizes a locked draft: computed again when `spec` is given, prepaid credits applied, then a
 * zero invoice that asks for no payment is SKIPPED (no number); any other takes the next number of the
 * sequence in this transaction and is FINALIZED. A trial's zero invoice (rule 6) is paid at once when
 * invoices are sent, or waits for a card when the card is charged.
 */
export async function finalizeLocked(deps: Deps, tx: Tx, scope: Scope, audit: Audit, invoice: store.InvoiceRow, spec?: InvoiceSpec): Promise<store.InvoiceRow> {
  return (await finalizeLockedMany(deps, tx, scope, audit, [{ invoice, spec }])).rows[0]
}

/** A draft locked by the caller's transaction, with what it is computed from again (freshSpec), if anything. */
export interface LockedDraft {
  invoice: store.InvoiceRow
  spec?: InvoiceSpec
}

/**
 * finalizeLocked for several drafts of one scope, in order. Each takes its prepaid credits and its number in turn, as
 * one by one: each takes the credits the one before left, and an auto top-up invoice that a debit makes is numbered
 * between them. Their computed rows and their columns are then written together, in a few statements for all.
 */
export async function finalizeLockedMany(deps: Deps, tx: Tx, scope: Scope, audit: Audit, drafts: LockedDraft[]): Promise<{ rows: store.InvoiceRow[]; children?: store.Children }> {
  const computed: { invoice: store.InvoiceRow; assembled: Assembled }[] = []
  const changes: { id: string; fields: Record<string, unknown> }[] = []
  // Numbers are taken together, in order. A debit that may start an auto top-up by invoice (numbered from the same
  // sequence) first takes those owed so far, so every document gets the number it would get one by one.
  const template = deps.config.invoicing.invoiceNumberTemplate
  const unnumbered: { fields: Record<string, unknown>; final: (number: string) => Record<string, unknown> }[] = []
  const takeNumbers = async () => {
    if (unnumbered.length === 0) return
    const first = await store.nextNumbers(tx, scope, numberScope(template, audit.at), unnumbered.length)
    unnumbered.forEach((u, k) => Object.assign(u.fields, u.final(formatNumber(template, first + k, audit.at))))
    unnumbered.length = 0
  }
  // The wallets of a batch locked and read at once; each serves its first invoice, a later one reads it again.
  const prepared = drafts.length > 1 ? await preparePrepaid(deps, tx, scope, drafts.map((d) => d.invoice)) : undefined
  for (const { invoice, spec } of drafts) {
    if (invoice.invoice_status !== 'DRAFT') throw invalidOperation(`invoice ${invoice.id} is ${invoice.invoice_status}, not a draft: it cannot be finalized`, { invoice_status: invoice.invoice_status })
    const fields: Record<string, unknown> = {}
    const prepaid = await prepaidCredits(deps, tx, scope, invoice, prepared)
    if (spec || prepaid) {
      const base = spec ?? specOf(invoice, (await store.childrenOf(tx, scope, [invoice.id])).lines)
      const assembled = assemble({ ...base, prepaid: prepaid && { available: prepaid.available, allowed_price_types: prepaid.allowed_price_types } })
      const applied = assembled.computed.total_prepaid_credits_applied
      if (prepaid && applied.gt(0)) {
        if (prepaid.mayInvoice) await takeNumbers()
        await takePrepaidCredits(deps, tx, scope, invoice, applied, prepaid)
      }
      computed.push({ invoice, assembled })
      Object.assign(fields, amountsOf(assembled.computed, invoice.amount_paid), inputsOf(assembled.spec), { last_computed_at: audit.at })
    }
    const amounts = { total: (fields.total as Decimal | undefined) ?? invoice.total, amount_due: (fields.amount_due as Decimal | undefined) ?? invoice.amount_due }
    const sub = isTrialStart(invoice) && invoice.subscription_id ? await requireSubscription(tx, scope, invoice.subscription_id) : null
    const final = (number: string | null) => finalColumns({ ...invoice, ...amounts }, number, sub?.collection_method ?? null, audit.at)
    if (!skipped({ ...invoice, ...amounts }) && !invoice.invoice_number) unnumbered.push({ fields, final })
    else Object.assign(fields, final(invoice.invoice_number))
    changes.push({ id: invoice.id, fields })
  }
  await takeNumbers()
  await store.deleteComputed(tx, scope, computed.map((c) => c.invoice.id))
  const written = await writeComputedMany(tx, scope, audit, computed)
  const rows = await updateRecords<store.InvoiceRow>(tx, store.INVOICES, scope, audit, changes)
  // Every draft computed again: its lines, applications and taxes are the ones just written (its events need them).
  return { rows, ...(computed.length === drafts.length && { children: { lines: written.lines.flat(), applications: written.applications, taxes: written.taxes } }) }
}

type Finalizing = Pick<store.InvoiceRow, 'id' | 'billing_reason' | 'metadata' | 'amount_paid' | 'total' | 'amount_due'>

/** A zero invoice that asks for no payment is SKIPPED; a trial's zero invoice is still issued (rule 6). */
export const skipped = (i: Pick<Finalizing, 'total' | 'billing_reason'>): boolean => i.total.isZero() && i.billing_reason !== 'SUBSCRIPTION_TRIAL_START'

/**
 * The columns that finalize an invoice: SKIPPED without a number, or FINALIZED with `number`; nothing
 * left to pay (a zero trial invoice sent to the customer, prepaid in full) is paid at once, while a
 * trial charged automatically waits for a card instead (checkout_status: awaiting_payment_method).
 */
export function finalColumns(i: Finalizing, number: string | null, collection: string | null, at: Date): Record<string, unknown> {
  if (skipped(i)) return { invoice_status: 'SKIPPED' }
  const checkout = i.billing_reason === 'SUBSCRIPTION_TRIAL_START' && collection === 'charge_automatically'
  const paid = i.amount_due.lte(i.amount_paid)
  return {
    invoice_status: 'FINALIZED',
    invoice_number: number,
    finalized_at: at,
    ...(paid && !checkout ? { payment_status: 'SUCCEEDED', paid_at: at } : i.amount_paid.gt(0) ? { payment_status: 'PENDING' } : {}),
    // No checkout_url yet: only a payment provider's setup page is an address a customer can use (domains/integrations).
    ...(checkout && { metadata: { ...i.metadata, checkout_status: 'awaiting_payment_method' } }),
  }
}

/** The next number of a template's gap-free sequence, taken in the caller's transaction (a rollback gives it back). */
export async function nextDocumentNumber(tx: Tx, scope: Scope, template: string, at: Date): Promise<string> {
  return formatNumber(template, await store.nextNumbers(tx, scope, numberScope(template, at)), at)
}

/** Finalizes one draft: reads (usage) first, then locks and writes in one transaction. */
export async function finalizeDraft(deps: Deps, scope: Scope, audit: Audit, id: string): Promise<store.InvoiceRow> {
  const before = await requireInvoice(deps.sql, scope, id)
  if (before.invoice_status !== 'DRAFT') throw invalidOperation(`invoice ${id} is ${before.invoice_status}, not a draft: it cannot be finalized`, { invoice_status: before.invoice_status })
  const spec = await freshSpec(deps, scope, before)
  return transaction(deps, async (tx) => {
    const invoice = await lockInvoice(tx, scope, id)
    if (invoice.invoice_status === 'DRAFT' && invoice.version !== before.version) throw new AppError('version_conflict', `invoice ${id} changed while it was being finalized; retry`, { id })
    const row = await finalizeLocked(deps, tx, scope, audit, invoice, spec)
    await announceInvoice(tx, scope, row.invoice_status === 'FINALIZED' ? 'invoice.update.finalized' : 'invoice.update', row)
    return row
  })
}

export async function finalizeInvoice(deps: Deps, actor: Actor, id: string): Promise<{ message: string }> {
  const row = await finalizeDraft(deps, actor, auditOf(deps, actor), id)
  return { message: row.invoice_status === 'SKIPPED' ? `invoice ${id} is zero and needs no payment: SKIPPED` : `invoice ${id} finalized as ${row.invoice_number}` }
}
