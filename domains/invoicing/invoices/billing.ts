// What a subscription's invoice holds at one billing point: the charges of core/billing/cycle.ts for
// the subscription's line items (and, for a parent, its grouped and inherited children's: rule 8), usage
// measured by the usage service (the same numbers as POST /v1/events/usage/meter), allowances from the
// plan's entitlements, the subscription's commitment over its usage lines, its coupons and the tax rates
// of its chain. Reads only: the billing run and the preview both start here, so a preview is the invoice
// the run will make. A modification or cancellation billed at once (always_invoice) gets its update
// invoice here too.
import { billingPoints, nextPoint, pointCharges, prorations, type BillingPoint, type Charge, type Cycle, type CycleLine, type ProrationBehavior, type Span } from '../../../core/billing/cycle.ts'
import { periodCommitment } from '../../../core/billing/commitment.ts'
import { withinPrice, type PriceWindow } from '../../../core/billing/price-window.ts'
import type { CouponUse } from '../../../core/billing/coupons.ts'
import { allowanceWindows, type Allowance } from '../../../core/billing/allowance.ts'
import { invalidOperation } from '../../../core/errors.ts'
import { D, sumMoney, type Decimal } from '../../../core/money.ts'
import { DAY_MS, type Period } from '../../../core/periods.ts'
import type { PriceInput } from '../../../core/pricing/index.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Db } from '../../../infra/postgres.ts'
import { engineCoupon, associationsOf, type AssociationRow, type CouponRow } from '../coupons/service.ts'
import { customerViews, type CustomerView } from '../../customers/service.ts'
import { entitlementsOf, type EntitlementView } from '../../catalog/entitlements/service.ts'
import type { ListParams } from '../../../core/list.ts'
import { getMeter } from '../../catalog/meters/service.ts'
import { priceWindows } from '../../catalog/prices/service.ts'
import { paidInAdvance } from '../../subscriptions/service.ts'
import { listSubscriptions, searchLineItems, type LineItemRow, type SubscriptionRow } from '../../subscriptions/read.ts'
import { taxResolver, type ResolvedRate, type TaxResolver, type TaxTarget } from '../taxes/service.ts'
import { serviceUsage, type UsageReader, type UsageRequest } from './usage-batch.ts'
import { assemble, type Assembled, type InvoiceSpec, type LineSpec } from './assemble.ts'
import * as store from './store.ts'

/** A subscription invoice computed for a billing point, ready to store. */
export interface PointInvoice {
  header: ReturnType<typeof subscriptionHeader>
  assembled: Assembled
  subscription: SubscriptionRow
  /** Usage adjustments of earlier periods the invoice carries as lines (adjustments/next-invoice.ts), marked issued with it. */
  adjustments?: string[]
}

/** A subscription billed on its own invoices, with what is billed with it. */
export interface BillingContext {
  sub: SubscriptionRow
  /** The subscription and, for a parent, the children billed through it. */
  members: { sub: SubscriptionRow; lines: LineItemRow[] }[]
  customers: Map<string, CustomerView>
  entitlements: EntitlementView[]
  coupons: { association: AssociationRow; coupon: CouponRow }[]
  taxes: TaxResolver
  /** When the lines' prices are in force. */
  prices: Map<string, PriceWindow>
}

/** Children billed through a parent (rule 8): grouped and inherited ones bill nothing themselves. */
export const billedThroughParent = (sub: SubscriptionRow): boolean => sub.subscription_type === 'grouped_invoicing' || sub.subscription_type === 'inherited'

const systemActor = (scope: Scope): Actor => ({ ...scope, keyId: 'system', roles: ['admin'] })
const everything = (sort = 'created_at'): ListParams => ({ limit: 1000, offset: 0, sort, order: 'asc', status: 'published', metadata: {} })

/** Line items of many subscriptions, through the subscription service, a page at a time. */
async function lineItemsOf(deps: Deps, scope: Scope, ids: string[]): Promise<LineItemRow[]> {
  const all: LineItemRow[] = []
  for (let i = 0; i < ids.length; i += 1000) {
    const chunk = ids.slice(i, i + 1000)
    for (let offset = 0; ; offset += 1000) {
      const page = await searchLineItems(deps, systemActor(scope), { params: { ...everything('start_date'), offset }, filters: { subscription_ids: chunk } })
      all.push(...page.items)
      if (offset + 1000 >= page.pagination.total) break
    }
  }
  return all
}

/**
 * Contexts of many subscriptions of one scope, read in batches. `usagePricing`: only what prices a subscription's
 * own usage lines (its lines, customers, allowances) — no children, coupons or taxes, which such a context must
 * not be billed without (usage analytics reads it).
 */
export async function loadContexts(deps: Deps, scope: Scope, subs: SubscriptionRow[], opts: { usagePricing?: boolean } = {}): Promise<Map<string, BillingContext>> {
  const children = new Map<string, SubscriptionRow[]>()
  for (const parent of opts.usagePricing ? [] : subs.filter((s) => s.subscription_type === 'parent')) {
    const page = await listSubscriptions(deps, systemActor(scope), { params: everything(), filters: { parent_subscription_id: parent.id } })
    children.set(parent.id, page.items.filter(billedThroughParent))
  }
  const members = subs.flatMap((s) => [s, ...(children.get(s.id) ?? [])])
  const lines = await lineItemsOf(deps, scope, members.map((m) => m.id))
  const customerIds = members.flatMap((m) => [m.customer_id, m.invoicing_customer_id ?? m.customer_id])
  const customers = new Map((await customerViews(deps.sql, scope, customerIds)).map((c) => [c.id, c]))
  const entityIds = [...new Set(lines.map((l) => l.entity_id))]
  const entitlements = await entitlementsOf(deps.sql, scope, entityIds)
  const coupons = opts.usagePricing ? [] : await associationsOf(deps.sql, scope, subs.map((s) => s.id))
  const taxes: TaxResolver = opts.usagePricing ? () => [] : await taxResolver(deps.sql, scope, subs.map(taxTarget))
  const prices = await priceWindows(deps.sql, scope, lines.map((l) => l.price_id))
  return new Map(
    subs.map((sub) => [
      sub.id,
      {
        sub,
        members: [sub, ...(children.get(sub.id) ?? [])].map((m) => ({ sub: m, lines: lines.filter((l) => l.subscription_id === m.id) })),
        customers,
        entitlements,
        coupons: coupons.filter((c) => c.association.subscription_id === sub.id),
        taxes,
        prices,
      },
    ]),
  )
}

export async function loadContext(deps: Deps, scope: Scope, sub: SubscriptionRow): Promise<BillingContext> {
  return (await loadContexts(deps, scope, [sub])).get(sub.id)!
}

/** The subscription's calendar: it stops at its end date or cancellation, whichever comes first. */
export function cycleOf(sub: SubscriptionRow): Cycle {
  const ends = [sub.end_date, sub.cancel_at, sub.cancelled_at].filter((d): d is Date => d !== null)
  return {
    start_date: sub.start_date,
    end: ends.length > 0 ? new Date(Math.min(...ends.map((d) => d.getTime()))) : null,
    trial_start: sub.trial_start,
    trial_end: sub.trial_end,
    billing_anchor: sub.billing_anchor,
    billing_period: sub.billing_period,
    billing_period_count: sub.billing_period_count,
    timezone: sub.customer_timezone,
    prorate: sub.proration_behavior === 'create_prorations',
  }
}

export function pointBySequence(sub: SubscriptionRow, sequence: number): BillingPoint {
  for (const p of billingPoints(cycleOf(sub))) if (p.sequence === sequence) return p
  throw invalidOperation(`subscription ${sub.id} has no billing point ${sequence}`)
}

export const cycleLine = (l: LineItemRow): CycleLine => ({
  id: l.id,
  price_type: l.price_type,
  invoice_cadence: l.invoice_cadence,
  onetime: l.price.billing_cadence === 'ONETIME',
  start_date: l.start_date,
  end_date: l.end_date,
  quantity: l.quantity,
  price: l.price as unknown as PriceInput,
  start_proration: l.proration_behavior,
  end_proration: l.end_proration_behavior,
})

/** A member's lines as the cycle bills them: each within its price's dates, those never in force left out. */
const billedLines = (ctx: BillingContext, lines: LineItemRow[]): CycleLine[] => lines.flatMap((l) => withinPrice(cycleLine(l), ctx.prices.get(l.price_id)) ?? [])

/** "15 NET" → 15 days; none → due on the invoice date. */
const termsDays = (terms: string | null): number => (terms ? Number(/^(\d+)/.exec(terms)?.[1] ?? 0) : 0)

/** The invoice columns of a subscription invoice, besides its amounts. */
export function subscriptionHeader(sub: SubscriptionRow, point: Pick<BillingPoint, 'at' | 'period' | 'reason'> & { sequence: number | null }, graceMs: number) {
  return {
    customer_id: sub.invoicing_customer_id ?? sub.customer_id,
    subscription_id: sub.id,
    subscription_customer_id: sub.customer_id,
    invoice_type: 'SUBSCRIPTION' as const,
    billing_reason: point.reason,
    billing_sequence: point.sequence,
    billing_period: sub.billing_period,
    currency: sub.currency,
    period_start: point.period.start,
    period_end: point.period.end,
    due_date: new Date(point.at.getTime() + termsDays(sub.payment_terms) * DAY_MS),
    finalize_after: new Date(point.at.getTime() + graceMs),
  }
}

const meterNames = new Map<string, string>()

async function meterName(deps: Deps, scope: Scope, meterId: string): Promise<string> {
  let name = meterNames.get(meterId)
  if (name === undefined) {
    name = (await getMeter(deps, scope, meterId)).name
    meterNames.set(meterId, name)
  }
  return name
}

/** An entitlement with a window gives its allowance to the billing periods that start within it. */
const inForce = (e: EntitlementView, at: Date): boolean => (!e.start_date || e.start_date <= at) && (!e.end_date || e.end_date > at)

/**
 * The plan's (or addon's) entitlement for the line's meter: only usage above its limit is billed, once per reset
 * period; `at`, the start of the billing period, must be within the entitlement's window.
 */
export function allowanceOf(ctx: BillingContext, line: LineItemRow, at: Date): { allowance: Allowance; reset: string | null } | null {
  const e = ctx.entitlements.find((x) => x.entity_id === line.entity_id && x.feature?.meter_id === line.meter_id && x.feature_type === 'metered' && inForce(x, at))
  return e ? { allowance: { usage_limit: e.usage_limit, is_soft_limit: e.is_soft_limit, is_enabled: e.is_enabled }, reset: e.usage_reset_period } : null
}

/**
 * The windows of `usage` the allowance is given for, each measured on its own, when it resets inside the billing
 * period (a DAILY limit: the days of the subscription's customer_timezone); none when it is given once. Usage
 * analytics prices such a line with the same windows.
 */
export function resetWindows(ctx: BillingContext, usage: Period, reset: string | null): Period[] | undefined {
  const windows = allowanceWindows(usage, reset, { period: ctx.sub.billing_period, count: ctx.sub.billing_period_count }, ctx.sub.customer_timezone)
  return windows.length < 2 ? undefined : windows
}

/** Usage of each window the allowance is given for, when it resets inside the billing period (a DAILY limit); else none. */
async function usageWindows(ctx: BillingContext, request: UsageRequest, reset: string | null, read: UsageReader): Promise<Decimal[] | undefined> {
  const windows = resetWindows(ctx, request, reset)
  return windows && Promise.all(windows.map((w) => read({ ...request, start: w.start, end: w.end })))
}

/** What an invoice line of `charge` says about itself. */
function chargeFields(member: SubscriptionRow, row: LineItemRow, charge: Charge) {
  return {
    customer_id: row.customer_id,
    subscription_id: member.id,
    subscription_line_item_id: row.id,
    entity_id: row.entity_id,
    entity_type: row.entity_type,
    plan_id: row.entity_type === 'plan' ? row.entity_id : member.plan_id,
    plan_display_name: row.plan_display_name,
    display_name: charge.description ?? (charge.kind === 'trial' ? `${row.display_name ?? row.price_id} (trial)` : row.display_name),
    price_id: row.price_id,
    price_type: row.price_type,
    price_unit: (row.price.price_unit as string | undefined) ?? null,
    price_unit_id: (row.price.price_unit_id as string | undefined) ?? null,
    meter_id: row.meter_id,
    period_start: charge.period.start,
    period_end: charge.period.end,
    calculation: { kind: charge.kind, ...(charge.factor && { factor: charge.factor.toFixed() }) } as Record<string, unknown>,
  }
}

/** The rate of a line's custom price unit, when its price is in one (the line then shows its amount in the unit). */
const unitRate = (row: LineItemRow): Pick<LineSpec, 'conversion_rate'> =>
  row.price.price_unit_type === 'CUSTOM' && row.price.conversion_rate ? { conversion_rate: new D(row.price.conversion_rate as string) } : {}

/** A fixed charge (its amount computed by the cycle) as an invoice line. */
function fixedLineSpec(member: SubscriptionRow, row: LineItemRow, charge: Charge): LineSpec {
  const fields = chargeFields(member, row, charge)
  return { fields, input: { price_type: row.price_type, price_id: row.price_id, display_name: fields.display_name ?? undefined, quantity: row.quantity, amount: charge.amount! }, ...unitRate(row) }
}

/** One charge as an invoice line; usage is measured here, for the line's customer and window. */
async function lineSpec(deps: Deps, scope: Scope, ctx: BillingContext, member: SubscriptionRow, row: LineItemRow, charge: Charge, opts: SpecOptions): Promise<LineSpec> {
  if (charge.kind !== 'usage') return fixedLineSpec(member, row, charge)
  const fields = chargeFields(member, row, charge)
  const request = usageRequest(ctx, row, charge, opts.usageEnd)
  const read = opts.usage ?? serviceUsage(deps, scope)
  const entitlement = allowanceOf(ctx, row, charge.period.start)
  const reset = entitlement?.reset ?? null
  const windows = request && reset ? await usageWindows(ctx, request, reset, read) : undefined
  const quantity = windows ? sumMoney(windows) : request ? await read(request) : new D(0)
  const end = request?.end ?? charge.period.start
  fields.calculation = { ...fields.calculation, usage: quantity.toFixed(), usage_start: charge.period.start.toISOString(), usage_end: end.toISOString(), ...(windows && { usage_reset_period: reset, allowance_windows: windows.length }) }
  return {
    fields: { ...fields, meter_display_name: await meterName(deps, scope, row.meter_id!) } as LineSpec['fields'],
    input: {
      price_type: 'USAGE',
      price_id: row.price_id,
      display_name: fields.display_name ?? undefined,
      quantity,
      price: row.price as unknown as PriceInput,
      allowance: entitlement?.allowance ?? null,
      ...(windows && { usage_windows: windows }),
    },
    ...unitRate(row),
  }
}

/**
 * The subscription's coupons on this invoice: associations in force at its date; a line coupon on the
 * first line it covers. A coupon's period is how many invoices it already discounted.
 */
async function couponUses(db: Db, scope: Scope, ctx: BillingContext, lines: LineSpec[], at: Date, opts: SpecOptions): Promise<CouponUse[]> {
  const live = ctx.coupons.filter(({ association: a }) => a.start_date <= at && (a.end_date === null || a.end_date > at))
  if (live.length === 0) return []
  const used = await store.redemptionsOf(db, scope, live.map((c) => c.association.id), opts.exceptInvoiceId)
  return live.flatMap(({ association: a, coupon }) => {
    const base = { coupon: engineCoupon(coupon), coupon_association_id: a.id, period_index: (used.get(a.id) ?? 0) + (opts.redeemed?.get(a.id) ?? 0) }
    if (!a.subscription_line_item_id) return [base]
    const index = lines.findIndex((l) => l.fields.subscription_line_item_id === a.subscription_line_item_id && l.input.amount?.isNeg() !== true)
    return index < 0 ? [] : [{ ...base, line_index: index }]
  })
}

export interface SpecOptions {
  /** Usage is measured up to here at most (a preview of a running period, an auto-invoice cut). */
  usageEnd?: Date
  /** Usage is measured from here (after an auto-invoice threshold cut). */
  usageFrom?: Date
  /** A draft computed again does not count its own coupon applications. */
  exceptInvoiceId?: string
  /** Usage lines only: a threshold invoice bills what was used; the fixed charges stay on the cycle. */
  usageOnly?: boolean
  /** Invoices computed before this one but not stored yet (a catch-up), per coupon association. */
  redeemed?: Map<string, number>
  /** Where usage is read; the usage service by default. */
  usage?: UsageReader
}

/** The spec of the invoice the subscription gets at `point`. */
export async function pointSpec(deps: Deps, scope: Scope, ctx: BillingContext, point: BillingPoint, opts: SpecOptions = {}): Promise<InvoiceSpec> {
  const cut = point.arrear && ctx.sub.auto_invoice_threshold !== null
  const usageFrom = opts.usageFrom ?? (cut ? await store.lastThresholdCut(deps.sql, scope, ctx.sub.id, point.arrear!.start, point.arrear!.end) : undefined)
  const lines: LineSpec[] = []
  const commitments: NonNullable<InvoiceSpec['commitments']> = []
  for (const member of ctx.members) {
    const rows = new Map(member.lines.map((l) => [l.id, l]))
    const label = (l: CycleLine) => rows.get(l.id)!.display_name ?? rows.get(l.id)!.price_id
    const charges = pointCharges(point, billedLines(ctx, member.lines), { prorate: cycleOf(member.sub).prorate, usageFrom, label }).filter((c) => !opts.usageOnly || c.kind === 'usage')
    const usage: number[] = []
    for (const charge of charges) {
      if (charge.kind === 'usage') usage.push(lines.length)
      lines.push(await lineSpec(deps, scope, ctx, member.sub, rows.get(charge.line.id)!, charge, opts))
    }
    // A threshold invoice bills usage at its price: the period's commitment settles on its cycle invoice.
    if (point.arrear && !opts.usageOnly && member.sub.commitment_amount !== null) commitments.push(subscriptionCommitment(member.sub, point.arrear, usage))
  }
  return {
    currency: ctx.sub.currency,
    invoice_date: point.at,
    lines,
    commitments,
    // A trial's zero invoice takes no coupon: a once coupon is kept for the first real charge.
    coupons: point.trial ? [] : await couponUses(deps.sql, scope, ctx, lines, point.at, opts),
    taxes: ctx.taxes(taxTarget(ctx.sub), ctx.sub.currency, point.at),
  }
}

/**
 * The subscription's commitment (commitment_amount, overage_factor, enable_true_up) over its usage
 * lines of the span that ended, in invoice order; a partial period commits to its share by day.
 */
export function subscriptionCommitment(sub: SubscriptionRow, span: Span, usageLines: number[]): NonNullable<InvoiceSpec['commitments']>[number] {
  const terms = { amount: sub.commitment_amount!.toFixed(), overage_factor: sub.overage_factor?.toFixed() ?? null, true_up_enabled: sub.enable_true_up }
  return {
    commitment: periodCommitment(terms, span.full, span, sub.currency),
    line_indexes: usageLines,
    display_name: 'Commitment true-up',
    fields: { customer_id: sub.customer_id, subscription_id: sub.id, plan_id: sub.plan_id, price_type: 'USAGE', period_start: span.start, period_end: span.end },
  }
}

const taxTarget = (sub: SubscriptionRow): TaxTarget => ({ customerId: sub.invoicing_customer_id ?? sub.customer_id, subscriptionId: sub.id, overrides: sub.tax_rate_overrides as TaxTarget['overrides'] })

/** The usage window a usage charge measures: its period, cut at `usageEnd`; none when nothing is left. */
function usageRequest(ctx: BillingContext, row: LineItemRow, charge: Charge, usageEnd?: Date): UsageRequest | undefined {
  const end = usageEnd && usageEnd < charge.period.end ? usageEnd : charge.period.end
  if (end <= charge.period.start) return undefined
  return { meterId: row.meter_id!, externalCustomerId: ctx.customers.get(row.customer_id)!.external_id, start: charge.period.start, end }
}

/** The usage windows `point` will measure (a run reads them for many subscriptions at once). */
export function usageRequests(ctx: BillingContext, point: BillingPoint): UsageRequest[] {
  return ctx.members.flatMap((member) => {
    const rows = new Map(member.lines.map((l) => [l.id, l]))
    return pointCharges(point, billedLines(ctx, member.lines), { prorate: false })
      .filter((c) => c.kind === 'usage')
      .flatMap((c) => usageRequest(ctx, rows.get(c.line.id)!, c) ?? [])
  })
}

/**
 * The auto-invoice threshold's invoice (rule 5): the usage of the running period from its last cut to
 * `at`, as an arrear point of its own.
 */
export function thresholdPoint(from: Date, at: Date, full: { start: Date; end: Date }): BillingPoint {
  const span = { start: from, end: at, full }
  return { sequence: 0, at, reason: 'AUTO_INVOICE_THRESHOLD', period: { start: from, end: at }, arrear: span, advance: null, trial: false }
}

/** The billing span holding `at`, where a change at `at` is prorated; none in a trial or before billing starts. */
function spanAt(sub: SubscriptionRow, at: Date): Span | null {
  const point = nextPoint(cycleOf(sub), at)
  return point && !point.trial ? point.arrear : null
}

/**
 * How a change at `at`, asked `now` as `requested`, is settled. In the running period as asked, if the
 * subscription is active (in a trial or before its start nothing was paid yet: none). A change in a later
 * period (a cancel_at after the current period) is settled by that period's own invoices
 * (create_prorations) whatever was asked: nothing of it was paid when asked, and Stripe always prorates
 * a future period cut short.
 */
export function settlementOf(sub: SubscriptionRow, requested: ProrationBehavior, at: Date, now: Date): ProrationBehavior {
  const span = spanAt(sub, at)
  if (span && span.start > now) return 'create_prorations'
  return sub.subscription_status === 'active' ? requested : 'none'
}

export interface ChangeCharge {
  row: LineItemRow
  charge: Charge
  /** The subscription the line belongs to, when not the one invoiced (an inherited child). */
  member?: SubscriptionRow
}

/**
 * The proration charges of the line starts and ends a modification or cancellation made at `ats` as
 * `behavior`, computed as the billing point (create_prorations) or the update invoice (always_invoice)
 * bills them: `rows` are the lines the change ended and started, as stored after it.
 */
export function changeCharges(sub: SubscriptionRow, rows: LineItemRow[], ats: Date[], behavior: ProrationBehavior): ChangeCharge[] {
  const span = ats.length > 0 ? spanAt(sub, new Date(Math.min(...ats.map((t) => t.getTime())))) : null
  if (!span || behavior === 'none') return []
  const times = new Set(ats.map((t) => t.getTime()))
  const fallback = cycleOf(sub).prorate ? 'create_prorations' : 'none'
  return rows.filter(paidInAdvance).flatMap((row) => prorations(cycleLine(row), span, (b, t) => b === behavior && times.has(t.getTime()), fallback, row.display_name ?? row.price_id).map((charge) => ({ row, charge })))
}

/**
 * The SUBSCRIPTION_UPDATE invoice of a change settled at once (always_invoice): its proration
 * charges and the subscription's tax rates `taxes` (as resolved by `updateTaxes`). No coupons: a
 * coupon's periods count billing periods, and an update is not one.
 */
export function updateInvoice(sub: SubscriptionRow, charges: ChangeCharge[], taxes: ResolvedRate[], at: Date, graceMs: number): PointInvoice {
  const period = { start: new Date(Math.min(...charges.map((c) => c.charge.period.start.getTime()))), end: new Date(Math.max(...charges.map((c) => c.charge.period.end.getTime()))) }
  const lines = charges.map(({ row, charge, member }) => fixedLineSpec(member ?? sub, row, charge))
  const assembled = assemble({ currency: sub.currency, invoice_date: at, lines, coupons: [], taxes })
  return { header: subscriptionHeader(sub, { at, period, reason: 'SUBSCRIPTION_UPDATE', sequence: null }, graceMs), assembled, subscription: sub }
}

/** The tax rates an update invoice of `sub` at `at` takes: read before the change's transaction. */
export async function updateTaxes(deps: Deps, scope: Scope, sub: SubscriptionRow, at: Date): Promise<ResolvedRate[]> {
  return (await taxResolver(deps.sql, scope, [taxTarget(sub)]))(taxTarget(sub), sub.currency, at)
}
