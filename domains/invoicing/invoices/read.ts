// Invoices as the API shows them (with their customer, subscription, lines, coupon applications and
// taxes), their locks, and the invoice.update* events every change writes to the outbox in its transaction.
import { notFound } from '../../../core/errors.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Db, Tx } from '../../../infra/postgres.ts'
import { filterConditions, finalizedOrVoidedBetween, listRecords, requireRecord } from '../../../infra/records.ts'
import { customerViews, getCustomer, type CustomerView } from '../../customers/service.ts'
import { D } from '../../../core/money.ts'
import { type ListRequest, type Page, page } from '../../../core/list.ts'
import { toWire } from '../../records/wire.ts'
import { recordEvents } from '../../../infra/outbox.ts'
import { requireSubscription, type SubscriptionRow } from '../../subscriptions/read.ts'
import * as store from './store.ts'

export type { InvoiceRow } from './store.ts'
export const FILTERS = store.FILTERS

export interface InvoiceView extends store.InvoiceRow {
  customer: CustomerView | null
  subscription: SubscriptionRow | null
  line_items: (store.LineItemRow & { usage_analytics?: unknown[]; usage_breakdown?: unknown[] })[]
  coupon_applications: store.CouponApplicationRow[]
  taxes: store.TaxAppliedRow[]
}

async function views(db: Db, scope: Scope, rows: store.InvoiceRow[]): Promise<InvoiceView[]> {
  const ids = rows.map((r) => r.id)
  const [customers, children, subs] = await Promise.all([
    customerViews(db, scope, rows.map((r) => r.customer_id)),
    store.childrenOf(db, scope, ids),
    Promise.all([...new Set(rows.flatMap((r) => (r.subscription_id ? [r.subscription_id] : [])))].map((id) => requireSubscription(db, scope, id))),
  ])
  return rows.map((row) => ({
    ...row,
    invoice_pdf_url: row.invoice_pdf_url ?? `/v1/invoices/${row.id}/pdf`,
    customer: customers.find((c) => c.id === row.customer_id) ?? null,
    subscription: subs.find((s) => s.id === row.subscription_id) ?? null,
    ...childrenOfRow(row, children),
  }))
}

const childrenOfRow = (row: store.InvoiceRow, children: store.Children) => ({
  line_items: children.lines.filter((l) => l.invoice_id === row.id),
  coupon_applications: children.applications.filter((a) => a.invoice_id === row.id),
  taxes: children.taxes.filter((t) => t.entity_id === row.id),
})

export const viewOf = async (db: Db, scope: Scope, row: store.InvoiceRow): Promise<InvoiceView> => (await views(db, scope, [row]))[0]

export const requireInvoice = (db: Db, scope: Scope, id: string): Promise<store.InvoiceRow> => requireRecord<store.InvoiceRow>(db, store.INVOICES, scope, id)

export async function getInvoice(deps: Deps, actor: Actor, id: string): Promise<InvoiceView> {
  return viewOf(deps.sql, actor, await requireInvoice(deps.sql, actor, id))
}

export async function listInvoices(deps: Deps, actor: Actor, { params, filters }: ListRequest): Promise<Page<InvoiceView>> {
  const { rows, total } = await listRecords<store.InvoiceRow>(deps.sql, store.INVOICES, actor, params, filterConditions(deps.sql, store.FILTERS, filters))
  return page(await views(deps.sql, actor, rows), total, params)
}

/** GET /v1/customers/{id}/invoices/summary: the customer's finalized invoices summed per currency (Flexprice's summary). */
export async function customerInvoiceSummary(deps: Deps, actor: Actor, customerId: string) {
  const customer = await getCustomer(deps, actor, customerId)
  const rows = await store.customerSummaries(deps.sql, actor, customer.id, deps.clock.now())
  const amount = (s: string) => new D(s).toFixed()
  const latest = rows.reduce<store.CustomerSummaryRow | undefined>((a, r) => (!a || r.last_at > a.last_at ? r : a), undefined)
  return {
    customer_id: customer.id,
    default_currency: latest?.currency ?? null,
    summaries: rows.map((r) => ({
      customer_id: customer.id,
      currency: r.currency,
      total_invoice_count: Number(r.total_invoice_count),
      total_revenue_amount: amount(r.total_revenue_amount),
      unpaid_invoice_count: Number(r.unpaid_invoice_count),
      total_unpaid_amount: amount(r.total_unpaid_amount),
      overdue_invoice_count: Number(r.overdue_invoice_count),
      total_overdue_amount: amount(r.total_overdue_amount),
      unpaid_usage_charges: amount(r.unpaid_usage_charges),
      unpaid_fixed_charges: amount(r.unpaid_fixed_charges),
    })),
  }
}

/** Locks an invoice of the scope for the transaction; another scope's invoice is not_found. */
/** Invoices finalized or voided in [start, end), each with its lines (the accounting journal's invoices). */
export async function journalInvoices(db: Db, scope: Scope, start: Date, end: Date): Promise<(store.InvoiceRow & { lines: store.LineItemRow[] })[]> {
  const rows = await finalizedOrVoidedBetween<store.InvoiceRow>(db, store.INVOICES, scope, start, end)
  const { lines } = await store.childrenOf(db, scope, rows.map((r) => r.id))
  return rows.map((r) => ({ ...r, lines: lines.filter((l) => l.invoice_id === r.id) }))
}

/** The newest invoice of each subscription (its header: lines are read with GET /v1/invoices/{id}). */
export const latestInvoices = (db: Db, scope: Scope, subscriptionIds: string[]): Promise<Map<string, store.InvoiceRow>> => store.latestOf(db, scope, subscriptionIds)

export async function lockInvoice(tx: Tx, scope: Scope, id: string): Promise<store.InvoiceRow> {
  const row = await store.lockInvoice(tx, scope, id)
  if (!row || row.status === 'deleted') throw notFound('invoice', id)
  return row
}

/** What invoice events carry: the invoice with its lines, coupon applications and taxes (customer and subscription by id). */
type InvoiceEvent = store.InvoiceRow & Pick<InvoiceView, 'line_items' | 'coupon_applications' | 'taxes'>

export const invoiceEvent = (eventType: string, invoice: InvoiceEvent) => ({ eventType, entityType: 'invoice', entityId: invoice.id, payload: { invoice: toWire(invoice) } })

export async function announceInvoice(tx: Tx, scope: Scope, eventType: string, row: store.InvoiceRow): Promise<InvoiceView> {
  const view = await viewOf(tx, scope, row)
  const { customer: _c, subscription: _s, ...event } = view
  await recordEvents(tx, scope, [invoiceEvent(eventType, event)])
  return view
}

/**
 * announceInvoice for many invoices of one scope in three reads and one write (a job's page): each event is the one
 * announceInvoice records, without building the customer and subscription views it leaves out of the event. `known`:
 * the invoices' children as the caller just wrote them all, not read again.
 */
export async function announceInvoices(tx: Tx, scope: Scope, changes: { eventType: string; row: store.InvoiceRow }[], known?: store.Children): Promise<void> {
  if (changes.length === 0) return
  const children = known ?? (await store.childrenOf(tx, scope, changes.map((c) => c.row.id)))
  const events = changes.map(({ eventType, row }) => invoiceEvent(eventType, { ...row, invoice_pdf_url: row.invoice_pdf_url ?? `/v1/invoices/${row.id}/pdf`, ...childrenOfRow(row, children) }))
  await recordEvents(tx, scope, events)
}
