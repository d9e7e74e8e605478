// From what an invoice bills (lines, coupons, tax rates) to the rows it is stored as, through the pure
// engine (core/billing/invoice.ts computeInvoice): every amount on an invoice comes from there. The same
// path serves one-off invoices, subscription invoices, previews and drafts computed again.
import type { CouponUse } from '../../../core/billing/coupons.ts'
import { computeInvoice, type Invoice, type InvoiceInput, type InvoiceLineInput, type SharedCommitment } from '../../../core/billing/invoice.ts'
import { ratesByLine } from '../../../core/billing/taxes.ts'
import { newId } from '../../../core/ids.ts'
import { D, type Decimal } from '../../../core/money.ts'
import { amountInUnit } from '../../../core/price-units.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Tx } from '../../../infra/postgres.ts'
import type { Audit } from '../../../infra/records.ts'
import { toWire } from '../../records/wire.ts'
import type { ResolvedRate } from '../taxes/service.ts'
import * as store from './store.ts'

/** What a stored line says about itself besides its amounts. */
export interface LineFields {
  customer_id: string
  subscription_id?: string | null
  subscription_line_item_id?: string | null
  entity_id?: string | null
  entity_type?: string | null
  plan_id?: string | null
  plan_display_name?: string | null
  display_name?: string | null
  price_id?: string | null
  price_type?: 'FIXED' | 'USAGE' | null
  price_unit?: string | null
  price_unit_id?: string | null
  price_unit_amount?: Decimal | null
  meter_id?: string | null
  meter_display_name?: string | null
  period_start?: Date | null
  period_end?: Date | null
  metadata?: Record<string, string>
  /** How the amount was reached, shown to explain the line. */
  calculation?: Record<string, unknown> | null
  /** A stored line's commitment_info, kept when the invoice is computed again from its rounded lines. */
  commitment_info?: Record<string, unknown> | null
}

export interface LineSpec {
  fields: LineFields
  input: InvoiceLineInput
  /** A line billed from a price in a custom unit: the unit's rate, to show the billed amount in the unit (price_unit_amount). */
  conversion_rate?: Decimal
  /**
   * Rates of this line alone instead of the invoice's (a usage adjustment on a later invoice keeps its original
   * invoice's rates; [] taxes it with nothing). Kept in the stored line's calculation.tax_rates.
   */
  tax_rates?: ResolvedRate[]
}

/** An invoice before its amounts: the engine computes them. */
export interface InvoiceSpec {
  currency: string
  invoice_date: Date
  lines: LineSpec[]
  coupons: CouponUse[]
  taxes: ResolvedRate[]
  prepaid?: InvoiceInput['prepaid']
  /** Commitments over several lines (a subscription's), with what their true-up line says about itself. */
  commitments?: (SharedCommitment & { fields: LineFields })[]
}

export interface Assembled {
  spec: InvoiceSpec
  computed: Invoice
}

/** Each rate once, on the lines it taxes (core/billing/taxes.ts ratesByLine): what the engine and the taxes applied take. */
const taxUses = (spec: InvoiceSpec) => ratesByLine(spec.taxes, spec.lines.map((l) => l.tax_rates))

export function assemble(spec: InvoiceSpec): Assembled {
  const computed = computeInvoice({
    currency: spec.currency,
    invoice_date: spec.invoice_date,
    lines: spec.lines.map((l) => ({ ...l.input, plan_id: l.fields.plan_id ?? undefined })),
    coupons: spec.coupons,
    taxes: taxUses(spec).map((use) => ({ ...use, tax_association_id: use.rate.tax_association_id })),
    prepaid: spec.prepaid,
    commitments: spec.commitments,
  })
  return { spec, computed }
}

/** The invoice's amount columns; amount_remaining follows what was paid already. */
export function amountsOf(c: Invoice, paid: Decimal = new D(0)) {
  return {
    subtotal: c.subtotal,
    total_discount: c.total_discount,
    total_tax: c.total_tax,
    total: c.total,
    amount_due: c.amount_due,
    amount_remaining: D.max(0, c.amount_due.minus(paid)),
    total_prepaid_credits_applied: c.total_prepaid_credits_applied,
  }
}

/** What the invoice stores to compute itself again: coupon uses and tax rates as resolved. */
export const inputsOf = (spec: InvoiceSpec) => ({ coupon_uses: toWire(spec.coupons), prepared_tax_rates: toWire(spec.taxes) })

type Owner = Pick<store.InvoiceRow, 'id' | 'currency' | 'subscription_id'>

/** The terms of the shared commitment a line is billed under (or completes), shown with its amounts. */
function commitmentTerms(spec: InvoiceSpec, position: number, shared: number | null) {
  const c = spec.commitments?.find((x, k) => k === shared || x.line_indexes.includes(position))?.commitment
  return c ? { type: 'amount', amount: c.amount, overage_factor: c.overage_factor ?? '1', true_up_enabled: c.true_up_enabled ?? false } : {}
}

/** A true-up line: a line's own commitment's takes that line's fields; a shared commitment's, the ones it was given. */
function trueUpFields(spec: InvoiceSpec, lines: number[], shared: number | null, name: string | null): LineFields {
  if (shared === null) return { ...spec.lines[lines[0]].fields, display_name: name, calculation: { true_up_for_position: lines[0] } }
  return { ...spec.commitments![shared].fields, display_name: name, calculation: { kind: 'commitment_true_up', true_up_for_positions: lines } }
}

/**
 * The rows an assembled invoice is stored as: lines (true-ups after the given lines, as the engine
 * orders them), coupon applications (naming their line by position) and taxes applied. A preview shows
 * them without storing.
 */
export function computedRows(invoice: Owner, { spec, computed }: Assembled, at: Date) {
  const lines = computed.line_items.map((l, position) => {
    const own = l.true_up_for === null ? spec.lines[position].fields : trueUpFields(spec, l.true_up_for, l.shared_commitment, l.display_name)
    const tiers = l.tiers ? { tiers: toWire(l.tiers), billed_quantity: l.billed_quantity.toFixed() } : {}
    // A line's own true-up is in the line's unit too; a shared commitment's is in the invoice's currency.
    const rate = l.true_up_for === null ? spec.lines[position].conversion_rate : l.shared_commitment === null ? spec.lines[l.true_up_for[0]].conversion_rate : undefined
    return {
      ...own,
      ...(rate && { price_unit_amount: amountInUnit(l.amount, rate, invoice.currency) }),
      metadata: own.metadata ?? {},
      calculation: own.calculation || l.tiers ? { ...own.calculation, ...tiers } : null,
      invoice_id: invoice.id,
      position,
      currency: invoice.currency,
      quantity: l.quantity,
      amount: l.amount,
      line_item_discount: l.line_item_discount,
      invoice_level_discount: l.invoice_level_discount,
      tax_amount: l.tax_amount,
      prepaid_credits_applied: l.prepaid_credits_applied,
      commitment_info: l.commitment_info ? toWire({ ...commitmentTerms(spec, position, l.shared_commitment), ...l.commitment_info }) : (own.commitment_info ?? null),
    }
  })
  const applications = computed.coupon_applications.map((a) => {
    const use = spec.coupons.find((u) => u.coupon.id === a.coupon_id && (u.coupon_association_id ?? null) === a.coupon_association_id && (u.line_index ?? null) === a.line_index)
    return {
      coupon_id: a.coupon_id,
      coupon_association_id: a.coupon_association_id,
      coupon_snapshot: toWire(use?.coupon ?? {}),
      invoice_id: invoice.id,
      line_position: a.line_index,
      subscription_id: invoice.subscription_id,
      applied_at: at,
      currency: a.currency,
      discount_type: a.discount_type,
      discount_percentage: a.discount_percentage,
      discounted_amount: a.discounted_amount,
      original_price: a.original_price,
      final_price: a.final_price,
      metadata: {},
    }
  })
  const rates = taxUses(spec).map((u) => u.rate)
  const taxes = computed.taxes.map((t, i) => ({
    tax_rate_id: t.tax_rate_id,
    tax_rate: toWire(rates[i]),
    tax_association_id: t.tax_association_id,
    entity_type: 'invoice',
    entity_id: invoice.id,
    taxable_amount: t.taxable_amount,
    tax_amount: t.tax_amount,
    currency: t.currency,
    applied_at: at,
    idempotency_key: `${invoice.id}:${t.tax_rate_id}`,
    metadata: {},
  }))
  return { lines, applications, taxes }
}

/** Stores the computed rows of an invoice. */
export async function writeComputed(tx: Tx, scope: Scope, audit: Audit, invoice: Owner, assembled: Assembled): Promise<store.LineItemRow[]> {
  return (await writeComputedMany(tx, scope, audit, [{ invoice, assembled }])).lines[0]
}

/** Stores the computed rows of many invoices, three statements in all: each invoice's lines in order, and the rest. */
export async function writeComputedMany(tx: Tx, scope: Scope, audit: Audit, items: { invoice: Owner; assembled: Assembled }[]) {
  const computed = items.map(({ invoice, assembled }) => computedRows(invoice, assembled, audit.at))
  // Ids given here: an application names its line by id, and lines are inserted all at once.
  const lines = computed.map((c) => c.lines.map((l) => ({ id: newId(store.LINE_ITEMS.prefix), ...l })))
  const inserted = await store.insertMany<store.LineItemRow>(tx, store.LINE_ITEMS, scope, audit, lines.flat())
  const applications = computed.flatMap((c, k) => c.applications.map(({ line_position, ...a }) => ({ ...a, invoice_line_item_id: line_position === null ? null : lines[k][line_position].id })))
  const applied = await store.insertMany<store.CouponApplicationRow>(tx, store.COUPON_APPLICATIONS, scope, audit, applications)
  const taxes = await store.insertMany<store.TaxAppliedRow>(tx, store.TAXES_APPLIED, scope, audit, computed.flatMap((c) => c.taxes))
  const byId = new Map(inserted.map((l) => [l.id, l]))
  return { lines: lines.map((ls) => ls.map((l) => byId.get(l.id)!)), applications: applied, taxes }
}

/** A stored invoice as a spec again: each line its rounded amount (true-ups included), the same coupons and rates. */
export function specOf(invoice: store.InvoiceRow, lines: store.LineItemRow[]): InvoiceSpec {
  return {
    currency: invoice.currency,
    invoice_date: invoice.created_at,
    lines: lines.map((l) => ({
      fields: {
        customer_id: l.customer_id,
        subscription_id: l.subscription_id,
        subscription_line_item_id: l.subscription_line_item_id,
        entity_id: l.entity_id,
        entity_type: l.entity_type,
        plan_id: l.plan_id,
        plan_display_name: l.plan_display_name,
        display_name: l.display_name,
        price_id: l.price_id,
        price_type: l.price_type,
        price_unit: l.price_unit,
        price_unit_id: l.price_unit_id,
        price_unit_amount: l.price_unit_amount,
        meter_id: l.meter_id,
        meter_display_name: l.meter_display_name,
        period_start: l.period_start,
        period_end: l.period_end,
        metadata: l.metadata,
        calculation: l.calculation,
        commitment_info: l.commitment_info,
      },
      ...(Array.isArray(l.calculation?.tax_rates) && { tax_rates: l.calculation.tax_rates as ResolvedRate[] }),
      input: {
        price_type: l.price_type ?? 'FIXED',
        price_id: l.price_id ?? undefined,
        display_name: l.display_name ?? undefined,
        quantity: l.quantity,
        amount: l.amount,
        ...(l.calculation?.discountable === false && { discountable: false }),
      },
    })),
    coupons: invoice.coupon_uses as CouponUse[],
    taxes: invoice.prepared_tax_rates as ResolvedRate[],
  }
}
