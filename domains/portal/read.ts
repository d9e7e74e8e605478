// What a portal session reads: its one customer's profile, entitled features with their usage, subscriptions,
// invoices and credit notes (finalized or voided: a draft is still the biller's), the invoices' PDFs, wallets and
// their ledgers. Each read goes through the owning domain's service in the session's environment, then keeps
// only what belongs to the session's customer: a record of another customer is not_found, as one that does not
// exist, so ids cannot be probed.
import { notFound } from '../../core/errors.ts'
import type { ListParams, Page } from '../../core/list.ts'
import type { Deps } from '../../infra/deps.ts'
import { getCustomer, type CustomerView } from '../customers/service.ts'
import { getSubscription, listCustomerSubscriptions, type SubscriptionView } from '../subscriptions/read.ts'
import { customerUsageSummary } from '../usage/queries/summary.ts'
import { meterUsage } from '../usage/queries/service.ts'
import { getInvoice, listInvoices, type InvoiceView } from '../invoicing/invoices/read.ts'
import { invoicePdf } from '../invoicing/invoices/pdf.ts'
import { getCreditNote, listCreditNotes, type CreditNoteView } from '../invoicing/creditnotes/service.ts'
import { creditNotePdf } from '../invoicing/creditnotes/pdf.ts'
import { customerWallets, getWallet, listTransactions, type WalletView } from '../credits/wallets/service.ts'
import type { PortalActor } from './service.ts'

/** Invoices and credit notes a customer sees: a draft may still change, so it stays the biller's until finalized. */
const SHOWN_STATUSES = ['FINALIZED', 'VOIDED']

const customerOf = (actor: PortalActor): string => actor.portal.customerId

/** The record when it is the session's customer's, else not_found (never "forbidden": that would confirm the id). */
function owned<T extends { customer_id: string }>(actor: PortalActor, what: string, id: string, record: T): T {
  if (record.customer_id !== customerOf(actor)) throw notFound(what, id)
  return record
}

export const portalCustomer = (deps: Deps, actor: PortalActor): Promise<CustomerView> => getCustomer(deps, actor, customerOf(actor))

export const portalUsage = (deps: Deps, actor: PortalActor) => customerUsageSummary(deps, actor, { customer_id: customerOf(actor) })

/**
 * Each metered feature's usage per day of the current billing period, with its limit: what the page charts.
 * Values stay decimal strings; the browser draws them.
 */
export async function portalUsageHistory(deps: Deps, actor: PortalActor) {
  const summary = await portalUsage(deps, actor)
  const features = []
  for (const f of summary.features) {
    if (f.feature.type !== 'metered' || !f.feature.meter_id || !f.next_usage_reset_at) continue
    // Up to now: the rest of the period has no usage yet, and a flat line into the future would read as a forecast.
    const end = new Date(Math.min(f.next_usage_reset_at.getTime(), deps.clock.now().getTime()))
    const start = summary.period?.start_time ?? new Date(f.next_usage_reset_at.getTime() - 30 * 86_400_000)
    if (end <= start) continue
    const usage = await meterUsage(deps, actor, { meterId: f.feature.meter_id, customerId: customerOf(actor), start, end, windowSize: 'DAY' })
    features.push({
      feature_id: f.feature.id,
      feature_name: f.feature.name,
      unit_singular: f.feature.unit_singular,
      unit_plural: f.feature.unit_plural,
      aggregation_type: usage.type,
      usage_limit: f.total_limit,
      current_usage: f.current_usage,
      points: usage.results.map((w) => ({ start: w.start, value: w.value.toFixed() })),
    })
  }
  return { period: summary.period, features }
}

export const portalSubscriptions = (deps: Deps, actor: PortalActor, params: ListParams): Promise<Page<SubscriptionView>> =>
  listCustomerSubscriptions(deps, actor, customerOf(actor), { params, filters: {} })

export const portalSubscription = async (deps: Deps, actor: PortalActor, id: string): Promise<SubscriptionView> => owned(actor, 'subscription', id, await getSubscription(deps, actor, id))

export const portalInvoices = (deps: Deps, actor: PortalActor, params: ListParams): Promise<Page<InvoiceView>> =>
  listInvoices(deps, actor, { params, filters: { customer_id: customerOf(actor), invoice_status: SHOWN_STATUSES } })

export async function portalInvoice(deps: Deps, actor: PortalActor, id: string): Promise<InvoiceView> {
  const invoice = owned(actor, 'invoice', id, await getInvoice(deps, actor, id))
  if (!SHOWN_STATUSES.includes(invoice.invoice_status)) throw notFound('invoice', id)
  return invoice
}

export async function portalInvoicePdf(deps: Deps, actor: PortalActor, id: string): Promise<{ invoice: InvoiceView; pdf: Buffer }> {
  await portalInvoice(deps, actor, id)
  return invoicePdf(deps, actor, id)
}

export const portalCreditNotes = (deps: Deps, actor: PortalActor, params: ListParams): Promise<Page<CreditNoteView>> =>
  listCreditNotes(deps, actor, { params, filters: { customer_id: customerOf(actor), credit_note_status: SHOWN_STATUSES } })

export async function portalCreditNotePdf(deps: Deps, actor: PortalActor, id: string): Promise<{ note: CreditNoteView; pdf: Buffer }> {
  const note = owned(actor, 'credit note', id, await getCreditNote(deps, actor, id))
  if (!SHOWN_STATUSES.includes(note.credit_note_status)) throw notFound('credit note', id)
  return creditNotePdf(deps, actor, id)
}

export const portalWallets = (deps: Deps, actor: PortalActor): Promise<WalletView[]> => customerWallets(deps, actor, { id: customerOf(actor) })

export const portalWallet = async (deps: Deps, actor: PortalActor, id: string): Promise<WalletView> => owned(actor, 'wallet', id, await getWallet(deps, actor, id))

export async function portalWalletTransactions(deps: Deps, actor: PortalActor, id: string, params: ListParams) {
  await portalWallet(deps, actor, id)
  return listTransactions(deps, actor, id, { params, filters: {} })
}
