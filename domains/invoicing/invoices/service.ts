// Invoices: one-off creation (rule 11 idempotency), reads with their customer, subscription, lines,
// coupon applications and taxes, draft edits, finalization with a gap-free number, voiding, payments
// (core/billing/payments.ts) and recalculation. Every amount comes from core/billing through assemble.ts.
// Every change writes invoice.update* to the outbox in its transaction.
import { moneyAmount } from '../../../core/billing/amounts.ts'
import type { CouponUse } from '../../../core/billing/coupons.ts'
import { formatNumber, numberScope } from '../../../core/billing/numbering.ts'
import { applyPayment, assertTransition, setPaymentStatus, type PaymentState, type PaymentStatus } from '../../../core/billing/payments.ts'
import { AppError, invalidOperation, notFound, validationError } from '../../../core/errors.ts'
import { D, formatMoney, type Decimal } from '../../../core/money.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Db, Tx } from '../../../infra/postgres.ts'
import { filterConditions, insertRecord, listRecords, requireRecord, updateRecord, type Audit } from '../../../infra/records.ts'
import { engineCoupon, redeem } from '../coupons/service.ts'
import { customerViews, requireCustomer, type CustomerView } from '../../customers/service.ts'
import { type ListRequest, type Page, page } from '../../../core/list.ts'
import { auditOf, referenced, transaction } from '../../records/service.ts'
import { toWire } from '../../records/wire.ts'
import { recordEvents } from '../../../infra/outbox.ts'
import { newId } from '../../../core/ids.ts'
import { requireSubscription, subscriptionInvoicePaid, type SubscriptionRow } from '../../subscriptions/service.ts'
import { automaticRates, ratesForCodes, ratesForIds, resolved, type ResolvedRate } from '../taxes/service.ts'
import { amountsOf, assemble, computedRows, inputsOf, specOf, writeComputed, type Assembled, type InvoiceSpec, type LineSpec } from './assemble.ts'
import { billedThroughParent, cycleOf, loadContext, pointBySequence, pointSpec, subscriptionHeader, thresholdPoint, type PointInvoice } from './billing.ts'
import { nextPoint } from '../../../core/billing/cycle.ts'
import { prepaidCredits, purchasePaid, returnPrepaidCredits, takePrepaidCredits } from './prepaid.ts'
import * as store from './store.ts'

export type { InvoiceRow,  } from './store.ts'
export const FILTERS = store.FILTERS

export interface InvoiceView extends store.InvoiceRow {
  customer: CustomerView | null
  subscription: SubscriptionRow | null
  line_items: (store.LineItemRow & { usage_analytics?: unknown[]; usage_breakdown?: unknown[] })[]
  coupon_applications: store.CouponApplicationRow[]
  taxes: store.TaxAppliedRow[]
}

// ---- reading ------------------------------------------------------------------------------------------

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
    line_items: children.lines.filter((l) => l.invoice_id === row.id),
    coupon_applications: children.applications.filter((a) => a.invoice_id === row.id),
    taxes: children.taxes.filter((t) => t.entity_id === row.id),
  }))
}

export const viewOf = async (db: Db, scope: Scope, row: store.InvoiceRow): Promise<InvoiceView> => (await views(db, scope, [row]))[0]

export const requireInvoice = (db: Db, scope: Scope, id: string): Promise<store.InvoiceRow> => requireRecord<store.InvoiceRow>(db, store.INVOICES, scope, id)

export async function getInvoice(deps: Deps, actor: Actor, id: string): Promise<InvoiceView> {
  return viewOf(deps.sql, actor, await requireInvoice(deps.sql, actor, id))
}

export async function listInvoices(deps: Deps, actor: Actor, { params, filters }: ListRequest): Promise<Page<InvoiceView>> {
  const { rows, total } = await listRecords<store.InvoiceRow>(deps.sql, store.INVOICES, actor, params, filterConditions(deps.sql, store.FILTERS, filters))
  return page(await views(deps.sql, actor, rows), total, params)
}

/** Locks an invoice of the scope for the transaction; another scope's invoice is not_found. */
export async function lockInvoice(tx: Tx, scope: Scope, id: string): Promise<store.InvoiceRow> {
  const row = await store.lockInvoice(tx, scope, id)
  if (!row || row.status === 'deleted') throw notFound('invoice', id)
  return row
}

/** What invoice events carry: the invoice with its lines, coupon applications and taxes (customer and subscription by id). */
type InvoiceEvent = store.InvoiceRow & Pick<InvoiceView, 'line_items' | 'coupon_applications' | 'taxes'>

const invoiceEvent = (eventType: string, invoice: InvoiceEvent) => ({ eventType, entityType: 'invoice', entityId: invoice.id, payload: { invoice: toWire(invoice) } })

export async function announceInvoice(tx: Tx, scope: Scope, eventType: string, row: store.InvoiceRow): Promise<InvoiceView> {
  const view = await viewOf(tx, scope, row)
  const { customer: _c, subscription: _s, ...event } = view
  await recordEvents(tx, scope, [invoiceEvent(eventType, event)])
  return view
}

// ---- creating -----------------------------------------------------------------------------------------

interface LineItemInput {
  amount: string
  quantity: string
  display_name?: string
  price_id?: string
  price_type?: 'FIXED' | 'USAGE'
  plan_id?: string
  plan_display_name?: string
  entity_id?: string
  entity_type?: string
  meter_id?: string
  meter_display_name?: string
  price_unit?: string
  price_unit_amount?: string
  period_start?: string
  period_end?: string
  metadata?: Record<string, string>
  line_item_discount?: string
  invoice_level_discount?: string
  prepaid_credits_applied?: string
}

interface TaxRateOverride {
  tax_rate_code: string
  currency: string
  auto_apply?: boolean
  priority?: number
}

export interface CreateInvoiceInput {
  customer_id: string
  currency: string
  subtotal: string
  total: string
  amount_due: string
  amount_paid?: string
  billing_period?: string
  billing_reason?: string
  coupons?: string[]
  description?: string
  due_date?: string
  idempotency_key?: string
  invoice_coupons?: { coupon_id: string; coupon_association_id?: string }[]
  invoice_number?: string
  invoice_pdf_url?: string
  invoice_status?: 'DRAFT'
  invoice_type?: 'SUBSCRIPTION' | 'ONE_OFF' | 'CREDIT'
  line_item_coupons?: { coupon_id: string; line_item_id: string; coupon_association_id?: string }[]
  line_items?: LineItemInput[]
  metadata?: Record<string, string>
  payment_status?: 'INITIATED' | 'PENDING'
  period_start?: string
  period_end?: string
  prepared_tax_rates?: { id?: string; code?: string; name?: string; tax_rate_type: 'percentage' | 'fixed'; percentage_value?: string; fixed_value?: string }[]
  subscription_id?: string
  tax_rate_overrides?: TaxRateOverride[]
  tax_rates?: string[]
  total_prepaid_applied?: string
  issue_date?: string
}

const date = (s: string | undefined): Date | null => (s ? new Date(s) : null)

function lineSpecs(customerId: string, subscriptionId: string | null, currency: string, items: LineItemInput[]): LineSpec[] {
  return items.map((item, i) => {
    const amount = moneyAmount(item.amount, currency, `line_items[${i}].amount`)
    const quantity = moneyQuantity(item.quantity, `line_items[${i}].quantity`)
    const type = item.price_type ?? 'FIXED'
    return {
      fields: {
        customer_id: customerId,
        subscription_id: subscriptionId,
        entity_id: item.entity_id ?? null,
        entity_type: item.entity_type ?? null,
        plan_id: item.plan_id ?? null,
        plan_display_name: item.plan_display_name ?? null,
        display_name: item.display_name ?? null,
        price_id: item.price_id ?? null,
        price_type: type,
        price_unit: item.price_unit ?? null,
        price_unit_amount: item.price_unit_amount === undefined ? null : new D(item.price_unit_amount),
        meter_id: item.meter_id ?? null,
        meter_display_name: item.meter_display_name ?? null,
        period_start: date(item.period_start),
        period_end: date(item.period_end),
        metadata: item.metadata ?? {},
        calculation: { kind: 'manual' },
      },
      input: { price_type: type, price_id: item.price_id, display_name: item.display_name, quantity, amount },
    }
  })
}

function moneyQuantity(value: string, field: string): Decimal {
  const q = new D(value)
  if (q.isNeg()) throw validationError(field, 'must not be negative')
  return q
}

/** A computed amount must be what the request says it is; the message shows both. */
function expectAmount(given: string | undefined, computed: Decimal, currency: string, field: string, what: string): void {
  if (given === undefined) return
  const g = moneyAmount(given, currency, field)
  if (!g.eq(computed)) throw validationError(field, `is ${formatMoney(g, currency)} but ${what} ${formatMoney(computed, currency)}`)
}

/** Coupons of a one-off invoice: redeemed now (window and max_redemptions), line coupons on the line with that price. */
async function oneOffCoupons(tx: Tx, scope: Scope, input: CreateInvoiceInput, lines: LineSpec[], at: Date): Promise<CouponUse[]> {
  const invoiceLevel = [...(input.coupons ?? []).map((coupon_id) => ({ coupon_id, coupon_association_id: undefined as string | undefined })), ...(input.invoice_coupons ?? [])]
  const uses: CouponUse[] = []
  for (const [i, c] of invoiceLevel.entries()) {
    const row = await redeem(tx, scope, c.coupon_id, at, i < (input.coupons ?? []).length ? `coupons[${i}]` : `invoice_coupons[${i - (input.coupons ?? []).length}].coupon_id`)
    uses.push({ coupon: engineCoupon(row), coupon_association_id: c.coupon_association_id })
  }
  for (const [i, c] of (input.line_item_coupons ?? []).entries()) {
    const index = lines.findIndex((l) => l.fields.price_id === c.line_item_id)
    if (index < 0) throw validationError(`line_item_coupons[${i}].line_item_id`, `no line item has price ${c.line_item_id}`)
    const row = await redeem(tx, scope, c.coupon_id, at, `line_item_coupons[${i}].coupon_id`)
    uses.push({ coupon: engineCoupon(row), coupon_association_id: c.coupon_association_id, line_index: index })
  }
  return uses
}

/** Rates a one-off invoice names (prepared, by id, by override code), else the customer's and tenant's automatic ones. */
async function oneOffRates(db: Db, scope: Scope, input: CreateInvoiceInput, customerId: string, at: Date): Promise<ResolvedRate[]> {
  const prepared = (input.prepared_tax_rates ?? []).map((r, i) => ({ ...r, id: r.id ?? `prepared_${i}`, code: r.code ?? r.id ?? `prepared_${i}`, name: r.name ?? r.code ?? 'Tax' }) as ResolvedRate)
  const byId = (await ratesForIds(db, scope, input.tax_rates ?? [], 'tax_rates')).map((r) => resolved(r))
  const overrides = (input.tax_rate_overrides ?? []).filter((o) => o.auto_apply !== false)
  const byCode = (await ratesForCodes(db, scope, overrides.map((o) => o.tax_rate_code), 'tax_rate_overrides')).map((r) => resolved(r))
  const named = [...prepared, ...byId, ...byCode]
  if (named.length > 0 || input.tax_rate_overrides) return named
  return automaticRates(db, scope, { customerId }, input.currency, at)
}

/** Inserts an invoice row and its computed parts. */
async function insertInvoice(tx: Tx, scope: Scope, audit: Audit, header: Record<string, unknown>, assembled: Assembled, paid = new D(0), amounts: Record<string, Decimal> = {}): Promise<store.InvoiceRow> {
  const row = await insertRecord<store.InvoiceRow>(tx, store.INVOICES, scope, audit, {
    invoice_status: 'DRAFT',
    payment_status: 'PENDING',
    ...header,
    ...amountsOf(assembled.computed, paid),
    ...amounts,
    ...inputsOf(assembled.spec),
    amount_paid: paid,
    last_computed_at: audit.at,
  })
  await writeComputed(tx, scope, audit, row, assembled)
  return row
}

/** Rule 11: a replay of an idempotency key answers the invoice that holds it. */
async function replay(deps: Deps, scope: Scope, key: string | undefined): Promise<InvoiceView | undefined> {
  const existing = key ? await store.findByIdempotencyKey(deps.sql, scope, key) : undefined
  return existing && viewOf(deps.sql, scope, existing)
}

export async function createInvoice(deps: Deps, actor: Actor, input: CreateInvoiceInput): Promise<InvoiceView> {
  const earlier = await replay(deps, actor, input.idempotency_key)
  if (earlier) return earlier
  const currency = input.currency.toUpperCase()
  const customer = await referenced('customer_id', requireCustomer(deps, actor, input.customer_id))
  const sub = input.subscription_id ? await referenced('subscription_id', requireSubscription(deps.sql, actor, input.subscription_id)) : null
  if (sub && sub.customer_id !== customer.id && sub.invoicing_customer_id !== customer.id) throw validationError('subscription_id', `subscription ${sub.id} does not belong to customer ${customer.id}`)
  if ((input.invoice_type ?? 'ONE_OFF') === 'SUBSCRIPTION' && !sub) throw validationError('subscription_id', 'is required for a SUBSCRIPTION invoice')
  const [subtotal, total, due] = (['subtotal', 'total', 'amount_due'] as const).map((f) => moneyAmount(input[f], currency, f))
  const prepaid = moneyAmount(input.total_prepaid_applied ?? '0', currency, 'total_prepaid_applied')
  const paid = moneyAmount(input.amount_paid ?? '0', currency, 'amount_paid')
  if (due.gt(total)) throw validationError('amount_due', `${formatMoney(due, currency)} exceeds the total ${formatMoney(total, currency)}`)
  if (paid.gt(due)) throw validationError('amount_paid', `${formatMoney(paid, currency)} exceeds the amount due ${formatMoney(due, currency)}`)
  const lines = lineSpecs(customer.id, sub?.id ?? null, currency, input.line_items ?? [])
  const audit = auditOf(deps, actor)
  if (lines.length === 0 && (input.coupons?.length || input.invoice_coupons?.length || input.line_item_coupons?.length)) throw validationError('line_items', 'are needed for coupons to apply to')
  const taxes = lines.length > 0 ? await oneOffRates(deps.sql, actor, input, customer.id, audit.at) : []
  const header = {
    customer_id: customer.id,
    subscription_id: sub?.id ?? null,
    subscription_customer_id: sub?.customer_id ?? null,
    invoice_type: input.invoice_type ?? 'ONE_OFF',
    billing_reason: input.billing_reason ?? 'MANUAL',
    billing_period: input.billing_period ?? null,
    currency,
    description: input.description ?? null,
    due_date: date(input.due_date),
    period_start: date(input.period_start),
    period_end: date(input.period_end),
    issue_date: input.issue_date ?? null,
    idempotency_key: input.idempotency_key ?? null,
    invoice_number: input.invoice_number ?? null,
    invoice_pdf_url: input.invoice_pdf_url ?? null,
    payment_status: input.payment_status ?? 'PENDING',
    tax_rate_overrides: input.tax_rate_overrides ?? [],
    metadata: input.metadata ?? {},
  }
  try {
    return await transaction(deps, async (tx) => {
      const coupons = await oneOffCoupons(tx, actor, input, lines, audit.at)
      const assembled = assemble({ currency, invoice_date: audit.at, lines, coupons, taxes })
      if (lines.length > 0) checkGiven(input, assembled, prepaid)
      // Without lines the request's amounts are the invoice's; with lines they were checked against the engine's.
      const given = { ...(lines.length === 0 && { subtotal, total }), amount_due: due, total_prepaid_credits_applied: prepaid, amount_remaining: due.minus(paid) }
      const row = await insertInvoice(tx, actor, audit, header, assembled, paid, given)
      return announceInvoice(tx, actor, 'invoice.update', row)
    })
  } catch (err) {
    // Two creates with one key at once: the second finds the first.
    const e = err as { code?: string; constraint_name?: string }
    if (e.code === '23505' && e.constraint_name === store.IDEMPOTENCY_INDEX) return (await replay(deps, actor, input.idempotency_key))!
    if (e.code === '23505' && e.constraint_name === 'invoices_number') throw new AppError('already_exists', `invoice_number ${input.invoice_number} is taken`, { invoice_number: input.invoice_number })
    throw err
  }
}

/** The request's amounts must be the ones its lines, coupons and taxes give. */
function checkGiven(input: CreateInvoiceInput, { computed }: Assembled, prepaid: Decimal): void {
  const cur = computed.currency
  expectAmount(input.subtotal, computed.subtotal, cur, 'subtotal', 'the line items add up to')
  expectAmount(input.total, computed.total, cur, 'total', 'the line items, discounts and taxes give')
  if (prepaid.gt(computed.total)) throw validationError('total_prepaid_applied', `exceeds the total ${formatMoney(computed.total, cur)}`)
  expectAmount(input.amount_due, computed.total.minus(prepaid), cur, 'amount_due', 'total minus prepaid credits is')
  for (const [i, item] of (input.line_items ?? []).entries()) {
    const line = computed.line_items[i]
    expectAmount(item.line_item_discount, line.line_item_discount, cur, `line_items[${i}].line_item_discount`, 'its coupons give')
    expectAmount(item.invoice_level_discount, line.invoice_level_discount, cur, `line_items[${i}].invoice_level_discount`, 'its share of the invoice coupons is')
  }
}

// ---- changing drafts ----------------------------------------------------------------------------------

export interface UpdateInvoiceInput {
  description?: string | null
  due_date?: string | null
  issue_date?: string | null
  metadata?: Record<string, string>
  line_items?: LineItemInput[]
  version?: number
}

/**
 * Drafts change freely (a one-off draft's lines are computed again); a finalized invoice's lines are
 * locked, and only its metadata changes.
 */
export async function updateInvoice(deps: Deps, actor: Actor, id: string, input: UpdateInvoiceInput): Promise<InvoiceView> {
  const { version, line_items, ...fields } = input
  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    const invoice = await lockInvoice(tx, actor, id)
    if (invoice.invoice_status !== 'DRAFT') {
      if (line_items) throw invalidOperation(`invoice ${id} is ${invoice.invoice_status}: its line items are locked`, { invoice_status: invoice.invoice_status })
      const other = Object.keys(fields).find((k) => k !== 'metadata')
      if (other) throw invalidOperation(`invoice ${id} is ${invoice.invoice_status}: only drafts change (${other})`, { field: other })
    }
    if (line_items && invoice.invoice_type === 'SUBSCRIPTION') throw invalidOperation('a subscription invoice bills its subscription: its lines are computed, not edited')
    const changes: Record<string, unknown> = { ...fields, ...(fields.due_date !== undefined && { due_date: fields.due_date && new Date(fields.due_date) }) }
    if (line_items) {
      const spec = { ...specOf(invoice, []), lines: lineSpecs(invoice.customer_id, invoice.subscription_id, invoice.currency, line_items) }
      // Line coupons named lines that are gone: only invoice coupons carry over.
      const assembled = assemble({ ...spec, coupons: spec.coupons.filter((c) => c.line_index == null) })
      await store.deleteComputed(tx, actor, id)
      await writeComputed(tx, actor, audit, invoice, assembled)
      Object.assign(changes, amountsOf(assembled.computed, invoice.amount_paid), inputsOf(assembled.spec), { last_computed_at: audit.at })
    }
    const row = await updateRecord<store.InvoiceRow>(tx, store.INVOICES, actor, id, changes, { version, audit })
    return announceInvoice(tx, actor, 'invoice.update', row)
  })
}

// ---- finalizing ---------------------------------------------------------------------------------------

/**
 * What a draft is computed from at finalization: a subscription draft is computed again (late usage
 * inside the grace period counts); a one-off draft keeps its lines.
 */
async function freshSpec(deps: Deps, scope: Scope, invoice: store.InvoiceRow): Promise<InvoiceSpec | undefined> {
  if (!invoice.subscription_id || invoice.invoice_type !== 'SUBSCRIPTION' || !['SUBSCRIPTION_CREATE', 'SUBSCRIPTION_CYCLE', 'SUBSCRIPTION_TRIAL_START', 'SUBSCRIPTION_TRIAL_END', 'PRORATION', 'AUTO_INVOICE_THRESHOLD'].includes(invoice.billing_reason)) return undefined
  const sub = await requireSubscription(deps.sql, scope, invoice.subscription_id)
  const ctx = await loadContext(deps, scope, sub)
  if (invoice.billing_reason === 'AUTO_INVOICE_THRESHOLD') {
    const full = pointBySequence(sub, 1).period
    const point = thresholdPoint(invoice.period_start!, invoice.period_end!, full)
    return pointSpec(deps, scope, ctx, point, { usageFrom: invoice.period_start!, usageOnly: true, exceptInvoiceId: invoice.id })
  }
  return pointSpec(deps, scope, ctx, pointBySequence(sub, invoice.billing_sequence!), { exceptInvoiceId: invoice.id })
}

const isTrialStart = (i: Pick<store.InvoiceRow, 'billing_reason'>) => i.billing_reason === 'SUBSCRIPTION_TRIAL_START'

/**
 * Finalizes a locked draft: computed again when `spec` is given, prepaid credits applied, then a
 * zero invoice that asks for no payment is SKIPPED (no number); any other takes the next number of the
 * sequence in this transaction and is FINALIZED. A trial's zero invoice (rule 6) is paid at once when
 * invoices are sent, or carries a checkout address when the card is charged.
 */
async function finalizeLocked(deps: Deps, tx: Tx, scope: Scope, audit: Audit, invoice: store.InvoiceRow, spec?: InvoiceSpec): Promise<store.InvoiceRow> {
  if (invoice.invoice_status !== 'DRAFT') throw invalidOperation(`invoice ${invoice.id} is ${invoice.invoice_status}, not a draft: it cannot be finalized`, { invoice_status: invoice.invoice_status })
  const changes: Record<string, unknown> = {}
  const prepaid = await prepaidCredits(deps, tx, scope, invoice)
  if (spec || prepaid) {
    const base = spec ?? specOf(invoice, (await store.childrenOf(tx, scope, [invoice.id])).lines)
    const assembled = assemble({ ...base, prepaid })
    if (assembled.computed.total_prepaid_credits_applied.gt(0)) await takePrepaidCredits(deps, tx, scope, invoice, assembled.computed.total_prepaid_credits_applied)
    await store.deleteComputed(tx, scope, invoice.id)
    await writeComputed(tx, scope, audit, invoice, assembled)
    Object.assign(changes, amountsOf(assembled.computed, invoice.amount_paid), inputsOf(assembled.spec), { last_computed_at: audit.at })
  }
  const amounts = { total: (changes.total as Decimal | undefined) ?? invoice.total, amount_due: (changes.amount_due as Decimal | undefined) ?? invoice.amount_due }
  const needsNumber = !skipped({ ...invoice, ...amounts }) && !invoice.invoice_number
  const number = needsNumber ? await nextDocumentNumber(tx, scope, deps.config.invoicing.invoiceNumberTemplate, audit.at) : invoice.invoice_number
  const sub = isTrialStart(invoice) && invoice.subscription_id ? await requireSubscription(tx, scope, invoice.subscription_id) : null
  const columns = finalColumns({ ...invoice, ...amounts }, number, sub?.collection_method ?? null, audit.at)
  return updateRecord<store.InvoiceRow>(tx, store.INVOICES, scope, invoice.id, { ...changes, ...columns }, { audit })
}

type Finalizing = Pick<store.InvoiceRow, 'id' | 'billing_reason' | 'metadata' | 'amount_paid' | 'total' | 'amount_due'>

/** A zero invoice that asks for no payment is SKIPPED; a trial's zero invoice is still issued (rule 6). */
const skipped = (i: Pick<Finalizing, 'total' | 'billing_reason'>): boolean => i.total.isZero() && i.billing_reason !== 'SUBSCRIPTION_TRIAL_START'

/**
 * The columns that finalize an invoice: SKIPPED without a number, or FINALIZED with `number`; nothing
 * left to pay (a zero trial invoice sent to the customer, prepaid in full) is paid at once, while a
 * trial charged automatically carries a checkout address for the card capture instead.
 */
function finalColumns(i: Finalizing, number: string | null, collection: string | null, at: Date): Record<string, unknown> {
  if (skipped(i)) return { invoice_status: 'SKIPPED' }
  const checkout = i.billing_reason === 'SUBSCRIPTION_TRIAL_START' && collection === 'charge_automatically'
  const paid = i.amount_due.lte(i.amount_paid)
  return {
    invoice_status: 'FINALIZED',
    invoice_number: number,
    finalized_at: at,
    ...(paid && !checkout ? { payment_status: 'SUCCEEDED', paid_at: at } : i.amount_paid.gt(0) ? { payment_status: 'PENDING' } : {}),
    ...(checkout && { metadata: { ...i.metadata, checkout_url: `urn:meterbill:checkout:${i.id}`, checkout_status: 'awaiting_payment_method' } }),
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

// ---- voiding ------------------------------------------------------------------------------------------

const PAID: PaymentStatus[] = ['SUCCEEDED', 'OVERPAID', 'PARTIALLY_REFUNDED', 'REFUNDED']

/** A draft or an unpaid finalized invoice is voided; paid money goes back through a credit note, not a void. */
export async function voidInvoice(deps: Deps, actor: Actor, id: string): Promise<InvoiceView> {
  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    const invoice = await lockInvoice(tx, actor, id)
    if (invoice.invoice_status !== 'DRAFT' && invoice.invoice_status !== 'FINALIZED') throw invalidOperation(`invoice ${id} is ${invoice.invoice_status}: it cannot be voided`, { invoice_status: invoice.invoice_status })
    if (PAID.includes(invoice.payment_status) && invoice.total.gt(invoice.total_prepaid_credits_applied)) throw invalidOperation(`invoice ${id} is paid (${invoice.payment_status}): issue a credit note to refund it`, { payment_status: invoice.payment_status })
    if (invoice.amount_paid.gt(0)) throw invalidOperation(`invoice ${id} has ${formatMoney(invoice.amount_paid, invoice.currency)} paid: issue a credit note to refund it`)
    if (await store.hasLiveCreditNotes(tx, actor, id)) throw invalidOperation(`invoice ${id} has credit notes: void them first`)
    await returnPrepaidCredits(deps, tx, actor, invoice)
    const row = await updateRecord<store.InvoiceRow>(tx, store.INVOICES, actor, id, { invoice_status: 'VOIDED', voided_at: audit.at }, { audit })
    return announceInvoice(tx, actor, 'invoice.update.voided', row)
  })
}

// ---- payments -----------------------------------------------------------------------------------------

export interface PaymentInput {
  payment_status: PaymentStatus
  amount?: string
}

export const paymentState = (i: store.InvoiceRow): PaymentState => ({
  currency: i.currency,
  invoice_status: i.invoice_status,
  payment_status: i.payment_status,
  total: i.total,
  amount_due: i.amount_due,
  amount_paid: i.amount_paid,
  amount_remaining: i.amount_remaining,
  overpaid_amount: i.overpaid_amount,
  refunded_amount: i.refunded_amount,
  adjustment_amount: i.adjustment_amount,
  paid_at: i.paid_at,
})

const paymentColumns = (s: PaymentState) => ({
  payment_status: s.payment_status,
  amount_due: s.amount_due,
  amount_paid: s.amount_paid,
  amount_remaining: s.amount_remaining,
  overpaid_amount: s.overpaid_amount,
  refunded_amount: s.refunded_amount,
  adjustment_amount: s.adjustment_amount,
  paid_at: s.paid_at,
})

/**
 * Records a payment (amount given; SUCCEEDED without an amount pays what remains) or a provider's
 * state without money (PENDING, PROCESSING, FAILED). The amounts decide the status: asking for one
 * the amount does not give is refused. Refunds are credit notes.
 */
export async function updatePayment(deps: Deps, actor: Actor, id: string, input: PaymentInput): Promise<InvoiceView> {
  const audit = auditOf(deps, actor)
  return transaction(deps, (tx) => recordPayment(deps, tx, actor, audit, id, input))
}

/** updatePayment in the caller's transaction: also how a payment provider's notification pays (api/integrations). */
export async function recordPayment(deps: Deps, tx: Tx, scope: Scope, audit: Audit, id: string, input: PaymentInput): Promise<InvoiceView> {
  const invoice = await lockInvoice(tx, scope, id)
  const state = paymentState(invoice)
  if (input.payment_status === 'REFUNDED' || input.payment_status === 'PARTIALLY_REFUNDED') throw invalidOperation('refunds are made with a credit note (POST /v1/creditnotes)', { payment_status: input.payment_status })
  let next: PaymentState
  if (input.amount !== undefined) {
    next = applyPayment(state, moneyAmount(input.amount, invoice.currency, 'amount'), audit.at)
    if (next.payment_status !== input.payment_status) throw validationError('payment_status', `a payment of ${formatMoney(new D(input.amount), invoice.currency)} makes the invoice ${next.payment_status}, not ${input.payment_status}`)
  } else if (input.payment_status === 'SUCCEEDED') {
    if (state.amount_remaining.isZero()) {
      if (invoice.invoice_status !== 'FINALIZED') throw invalidOperation(`a ${invoice.invoice_status} invoice takes no payments`)
      assertTransition(state.payment_status, 'SUCCEEDED')
      next = { ...state, payment_status: 'SUCCEEDED', paid_at: state.paid_at ?? audit.at }
    } else next = applyPayment(state, state.amount_remaining, audit.at)
  } else if (input.payment_status === 'OVERPAID') {
    throw validationError('amount', 'is required to record an overpayment')
  } else next = setPaymentStatus(state, input.payment_status)
  const view = await setPaymentState(tx, scope, audit, id, next)
  await purchasePaid(deps, tx, scope, view)
  if (view.subscription_id && PAID.includes(view.payment_status)) await subscriptionInvoicePaid(tx, scope, audit, view.subscription_id)
  return view
}

export const invoiceLines = async (db: Db, scope: Scope, id: string): Promise<store.LineItemRow[]> => (await store.childrenOf(db, scope, [id])).lines

/** Moves a locked invoice to a new payment state (a payment, a credit note) and announces it. */
export async function setPaymentState(tx: Tx, scope: Scope, audit: Audit, id: string, state: PaymentState): Promise<InvoiceView> {
  const row = await updateRecord<store.InvoiceRow>(tx, store.INVOICES, scope, id, paymentColumns(state), { audit })
  return announceInvoice(tx, scope, 'invoice.update.payment', row)
}

/** Adds keys to an invoice's metadata under its lock (a payment provider's invoice id and checkout address, api/integrations). */
export async function mergeInvoiceMetadata(tx: Tx, scope: Scope, audit: Audit, id: string, patch: Record<string, string>): Promise<InvoiceView> {
  const invoice = await lockInvoice(tx, scope, id)
  const row = await updateRecord<store.InvoiceRow>(tx, store.INVOICES, scope, id, { metadata: { ...invoice.metadata, ...patch } }, { audit })
  return announceInvoice(tx, scope, 'invoice.update', row)
}

// ---- recalculating ------------------------------------------------------------------------------------

/**
 * A draft subscription invoice is computed again in place (usage so far). A voided subscription invoice
 * gets its replacement: the same billing point computed again as a new draft, named by the voided
 * invoice's recalculated_invoice_id.
 */
export async function recalculateInvoice(deps: Deps, actor: Actor, id: string): Promise<InvoiceView> {
  const before = await requireInvoice(deps.sql, actor, id)
  if (before.invoice_status !== 'DRAFT' && before.invoice_status !== 'VOIDED') throw invalidOperation(`invoice ${id} is ${before.invoice_status}: only drafts and voided invoices are recalculated`)
  if (before.recalculated_invoice_id) throw invalidOperation(`invoice ${id} was already replaced by ${before.recalculated_invoice_id}`, { recalculated_invoice_id: before.recalculated_invoice_id })
  const spec = await freshSpec(deps, actor, before)
  if (!spec) throw invalidOperation(`invoice ${id} is not a subscription cycle invoice: there is nothing to compute it from`)
  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    const invoice = await lockInvoice(tx, actor, id)
    const assembled = assemble(spec)
    if (invoice.invoice_status === 'DRAFT') {
      await store.deleteComputed(tx, actor, id)
      await writeComputed(tx, actor, audit, invoice, assembled)
      const row = await updateRecord<store.InvoiceRow>(tx, store.INVOICES, actor, id, { ...amountsOf(assembled.computed, invoice.amount_paid), ...inputsOf(spec), last_computed_at: audit.at }, { audit })
      return announceInvoice(tx, actor, 'invoice.update', row)
    }
    const keep = ['customer_id', 'subscription_id', 'subscription_customer_id', 'invoice_type', 'billing_reason', 'billing_period', 'billing_sequence', 'currency', 'period_start', 'period_end', 'due_date', 'description', 'metadata'] as const
    const header = Object.fromEntries(keep.map((k) => [k, invoice[k]]))
    const replacement = await insertInvoice(tx, actor, audit, { ...header, finalize_after: audit.at }, assembled)
    await updateRecord(tx, store.INVOICES, actor, id, { recalculated_invoice_id: replacement.id }, { audit })
    await announceInvoice(tx, actor, 'invoice.update', replacement)
    return viewOf(tx, actor, replacement)
  })
}

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
  const computed = inserted.map((row, k) => computedRows(row, todo[k].assembled, audit.at))
  const lines = computed.map((c) => c.lines.map((l) => ({ id: newId(store.LINE_ITEMS.prefix), ...l })))
  const lineRows = await store.insertMany<store.LineItemRow>(tx, store.LINE_ITEMS, scope, audit, lines.flat())
  const applications = computed.flatMap((c, k) => c.applications.map(({ line_position, ...a }) => ({ ...a, invoice_line_item_id: line_position === null ? null : lines[k][line_position].id })))
  const appRows = await store.insertMany<store.CouponApplicationRow>(tx, store.COUPON_APPLICATIONS, scope, audit, applications)
  const taxRows = await store.insertMany<store.TaxAppliedRow>(tx, store.TAXES_APPLIED, scope, audit, computed.flatMap((c) => c.taxes))
  inserted = await Promise.all(inserted.map((row, k) => (prepaid[k] ? finalizeLocked(deps, tx, scope, audit, row) : row)))
  await recordEvents(
    tx,
    scope,
    inserted.map((row) =>
      invoiceEvent(row.invoice_status === 'FINALIZED' ? 'invoice.update.finalized' : 'invoice.update', {
        ...row,
        line_items: lineRows.filter((l) => l.invoice_id === row.id),
        coupon_applications: appRows.filter((a) => a.invoice_id === row.id),
        taxes: taxRows.filter((t) => t.entity_id === row.id),
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
  const spec = await pointSpec(deps, actor, await loadContext(deps, actor, sub), point, { usageEnd: now })
  return previewOf(deps.sql, actor, { header: subscriptionHeader(sub, point, deps.config.invoicing.graceMs), assembled: assemble(spec), subscription: sub }, now)
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

// ---- wallet credit purchases ----------------------------------------------------------------------------

/**
 * A CREDIT invoice for wallet credits bought by invoice (api/wallets), created and finalized in the
 * caller's transaction: one line of `amount`, no coupons and no tax (credits are an advance payment).
 */
export async function createCreditPurchaseInvoice(
  deps: Deps,
  tx: Tx,
  scope: Scope,
  audit: Audit,
  input: { customer_id: string; currency: string; amount: Decimal; billing_reason: string; description: string; metadata: Record<string, string> },
): Promise<store.InvoiceRow> {
  const lines = lineSpecs(input.customer_id, null, input.currency, [{ amount: input.amount.toFixed(), quantity: '1', display_name: input.description, price_type: 'FIXED' }])
  const header = { customer_id: input.customer_id, invoice_type: 'CREDIT', billing_reason: input.billing_reason, currency: input.currency, description: input.description, metadata: input.metadata }
  const row = await insertInvoice(tx, scope, audit, header, assemble({ currency: input.currency, invoice_date: audit.at, lines, coupons: [], taxes: [] }))
  const done = await finalizeLocked(deps, tx, scope, audit, row)
  await announceInvoice(tx, scope, 'invoice.update.finalized', done)
  return done
}
