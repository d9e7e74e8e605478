// Invoices: one-off creation (rule 11 idempotency), draft edits, voiding, recalculation and the CREDIT
// invoices of wallet purchases. Reads are read.ts's, finalization finalize.ts's, payments payments.ts's,
// billing points' invoices subscription-invoices.ts's. Every amount comes from core/billing through
// assemble.ts; every change writes invoice.update* to the outbox in its transaction.
import { moneyAmount } from '../../../core/billing/amounts.ts'
import { checkCommitmentInfo, type CommitmentInfoInput } from '../../../core/billing/commitment-info.ts'
import type { CouponUse } from '../../../core/billing/coupons.ts'
import { AppError, invalidOperation, validationError } from '../../../core/errors.ts'
import { D, formatMoney, type Decimal } from '../../../core/money.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Db, Tx } from '../../../infra/postgres.ts'
import { insertRecord, updateRecord, type Audit } from '../../../infra/records.ts'
import { engineCoupon, redeem } from '../coupons/service.ts'
import { requireCustomer } from '../../customers/service.ts'
import { auditOf, referenced, transaction, within } from '../../records/service.ts'
import { getPrice } from '../../catalog/prices/service.ts'
import { getMeter } from '../../catalog/meters/service.ts'
import { requireOffering } from '../../catalog/offerings/kinds.ts'
import { requireSubscription } from '../../subscriptions/read.ts'
import { automaticRates, ratesForCodes, ratesForIds, resolved, type ResolvedRate } from '../taxes/service.ts'
import { amountsOf, assemble, inputsOf, specOf, writeComputed, type Assembled, type LineSpec } from './assemble.ts'
import { returnPrepaidCredits } from './prepaid.ts'
import * as store from './store.ts'
import { announceInvoice, lockInvoice, requireInvoice, viewOf, type InvoiceView } from './read.ts'
import { PAID } from './payments.ts'
import { finalizeLocked, freshSpec } from './finalize.ts'
import { resolveDunning } from './dunning-state.ts'

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
  commitment_info?: CommitmentInfoInput
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
        commitment_info: item.commitment_info ? checkCommitmentInfo(item.commitment_info, amount, currency, `line_items[${i}].commitment_info`) : null,
      },
      input: { price_type: type, price_id: item.price_id, display_name: item.display_name, quantity, amount },
    }
  })
}

/**
 * What one-off lines name (a price, plan or meter, a plan or addon as their entity) must be records of
 * this environment, in any status (a line may bill a price since retired); else not_found naming the field.
 */
async function checkLineReferences(deps: Deps, actor: Actor, items: LineItemInput[]): Promise<void> {
  for (const [i, item] of items.entries()) {
    await within(`line_items[${i}]`, async () => {
      if (item.price_id) await referenced('price_id', getPrice(deps, actor, item.price_id))
      if (item.plan_id) await referenced('plan_id', requireOffering(deps.sql, actor, 'PLAN', item.plan_id, { anyStatus: true }))
      if (item.meter_id) await referenced('meter_id', getMeter(deps, actor, item.meter_id))
      const kind = item.entity_type?.toUpperCase()
      if (item.entity_id && (kind === 'PLAN' || kind === 'ADDON')) await referenced('entity_id', requireOffering(deps.sql, actor, kind, item.entity_id, { anyStatus: true }))
    })
  }
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
  // Every code must name a rate of this environment; those applied must be active.
  const overrides = input.tax_rate_overrides ?? []
  const field = (i: number) => `tax_rate_overrides[${i}].tax_rate_code`
  await ratesForCodes(db, scope, overrides.map((o) => o.tax_rate_code), field, { active: false })
  const applied = overrides.filter((o) => o.auto_apply !== false)
  const byCode = (await ratesForCodes(db, scope, applied.map((o) => o.tax_rate_code), (i) => field(overrides.indexOf(applied[i])), { active: true })).map((r) => resolved(r))
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
  await checkLineReferences(deps, actor, input.line_items ?? [])
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
  await checkLineReferences(deps, actor, line_items ?? [])
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
      await store.deleteComputed(tx, actor, [id])
      await writeComputed(tx, actor, audit, invoice, assembled)
      Object.assign(changes, amountsOf(assembled.computed, invoice.amount_paid), inputsOf(assembled.spec), { last_computed_at: audit.at })
    }
    const row = await updateRecord<store.InvoiceRow>(tx, store.INVOICES, actor, id, changes, { version, audit })
    return announceInvoice(tx, actor, 'invoice.update', row)
  })
}

// ---- voiding ------------------------------------------------------------------------------------------

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
    // Nothing is owed any more: dunning ends and a suspension it caused is lifted.
    return announceInvoice(tx, actor, 'invoice.update.voided', await resolveDunning(tx, actor, audit, row))
  })
}

/**
 * Flexprice's "trigger communication": announces invoice.communication.triggered (a spec event type) with
 * the invoice, for the webhook endpoints that send invoices to customers. Drafts are not sent.
 */
export async function triggerCommunication(deps: Deps, actor: Actor, id: string): Promise<{ message: string }> {
  return transaction(deps, async (tx) => {
    const invoice = await lockInvoice(tx, actor, id)
    if (invoice.invoice_status === 'DRAFT') throw invalidOperation(`invoice ${id} is a draft: finalize it before sending it`, { invoice_status: invoice.invoice_status })
    await announceInvoice(tx, actor, 'invoice.communication.triggered', invoice)
    return { message: `invoice.communication.triggered announced for invoice ${id}` }
  })
}

// ---- recalculating ------------------------------------------------------------------------------------

/**
 * A draft subscription invoice is computed again in place (usage so far). A voided subscription invoice
 * gets its replacement: the same billing point computed again as a new draft, named by the voided
 * invoice's recalculated_invoice_id.
 */
export async function recalculateInvoice(deps: Deps, actor: Actor, id: string): Promise<InvoiceView> {
  const before = await requireInvoice(deps.sql, actor, id)
  if (before.invoice_status !== 'DRAFT' && before.invoice_status !== 'VOIDED') throw invalidOperation(`invoice ${id} is ${before.invoice_status}: only drafts and voided invoices are recalculated`, { invoice_status: before.invoice_status })
  if (before.recalculated_invoice_id) throw invalidOperation(`invoice ${id} was already replaced by ${before.recalculated_invoice_id}`, { recalculated_invoice_id: before.recalculated_invoice_id })
  const spec = await freshSpec(deps, actor, before)
  if (!spec) throw invalidOperation(`invoice ${id} is not a subscription cycle invoice: there is nothing to compute it from`, { id: 'not a subscription cycle invoice' })
  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    const invoice = await lockInvoice(tx, actor, id)
    const assembled = assemble(spec)
    if (invoice.invoice_status === 'DRAFT') {
      await store.deleteComputed(tx, actor, [id])
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

// ---- wallet credit purchases ----------------------------------------------------------------------------

/**
 * A CREDIT invoice for wallet credits bought by invoice (domains/credits/wallets), created and finalized in the
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
