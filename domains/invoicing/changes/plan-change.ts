// POST /v1/subscriptions/{id}/change/preview and /change/execute (Flexprice's plan change): the subscription
// moves to another plan, keeping its id and its billing cycle. The old plan's line items end and the target
// plan's start at the change, so the billing engine prorates them as it does quantity changes (modify.ts):
// an immediate change credits the old plan's unused time and charges the new plan's for the rest of the
// period (settled as proration_behavior says); usage before the change bills at the old prices, after it at
// the new. A change at the end of the period prorates nothing: its line items are written at once, ending and
// starting at the boundary, and a schedule (schedules.ts) moves the subscription's plan when it comes due.
// Entitlements and a plan's credit grants follow the subscription's plan; the commitment is the subscription's.
// Preview makes the change in a transaction it rolls back, so its next invoice is the billing engine's own.
// It stands with invoicing, above subscriptions, because a change is settled by invoices.
import type { ProrationBehavior } from '../../../core/billing/cycle.ts'
import { AppError, invalidOperation, validationError } from '../../../core/errors.ts'
import { D, parseDecimal, type Decimal } from '../../../core/money.ts'
import type { BillingPeriod } from '../../../core/periods.ts'
import { changeTypeOf, prorationSummary, type ChangeType } from '../../../core/plan-change.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import { matchPrices, type BillingCycle } from '../../../core/subscriptions.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Db, Tx } from '../../../infra/postgres.ts'
import { insertRecord, insertRecords, updateRecord, type Audit } from '../../../infra/records.ts'
import { requireOffering } from '../../catalog/offerings/kinds.ts'
import type { OfferingRow } from '../../catalog/offerings/service.ts'
import { pricesOf, type PriceRow } from '../../catalog/prices/service.ts'
import { announce, auditOf, referenced, transaction } from '../../records/service.ts'
import { toWire } from '../../records/wire.ts'
import { lineItemFields } from '../../subscriptions/line-items.ts'
import { lockSubscription, requireSubscription, viewOf } from '../../subscriptions/read.ts'
import { assertEndOpen, assertLive } from '../../subscriptions/service.ts'
import * as store from '../../subscriptions/store.ts'
import { changeCharges, settlementOf, updateInvoice, updateTaxes } from '../invoices/billing.ts'
import { previewInvoice, previewOf } from '../invoices/subscription-invoices.ts'
import { rolledBack } from './plan-change-rollback.ts'
import { storeChangeInvoice } from './modify.ts'
import { prorationLines, type ProrationLine } from './proration-lines.ts'
import { pendingOf, SCHEDULES, type ScheduleConfiguration, type ScheduleRow } from './schedules-store.ts'

export interface PlanChangeInput {
  target_plan_id: string
  change_at?: 'immediate' | 'end_of_period'
  /** How an immediate change's proration is settled; the subscription's own proration_behavior when absent. */
  proration_behavior?: ProrationBehavior
  billing_cadence?: 'RECURRING'
  billing_cycle?: BillingCycle
  billing_period?: BillingPeriod
  billing_period_count?: number
  /** now: the subscription is replaced by one anchored at the change (plan-change-reset.ts); default unchanged. */
  billing_cycle_anchor?: 'unchanged' | 'now'
  metadata?: Record<string, string>
  version?: number
}

type Sub = store.SubscriptionRow
type NewLine = ReturnType<typeof lineItemFields> & { proration_behavior: ProrationBehavior | null }

/** The change worked out, before anything is written. */
interface Change {
  sub: Sub
  current: OfferingRow
  target: OfferingRow
  type: ChangeType
  at: Date
  scheduled: boolean
  /** How the change's ends and starts are settled; a change at the boundary settles nothing (null on its lines). */
  behavior: ProrationBehavior
  /** The old plan's line items still in force at `at`, as they are. */
  ending: store.LineItemRow[]
  starting: NewLine[]
  warnings: string[]
}

const amountOf = (terms: Record<string, unknown>): Decimal => (terms.amount == null ? new D(0) : parseDecimal(String(terms.amount)))
const recurringFixed = (terms: Record<string, unknown>): boolean => terms.type === 'FIXED' && terms.billing_cadence === 'RECURRING'

/** The subscription's own terms: a plan change here keeps the billing period and cycle (Flexprice's request repeats them). */
function checkTerms(sub: Sub, input: PlanChangeInput): void {
  if (input.billing_period !== undefined && input.billing_period !== sub.billing_period) throw validationError('billing_period', `must be the subscription's (${sub.billing_period}): a plan change keeps the billing period`)
  if ((input.billing_period_count ?? sub.billing_period_count) !== sub.billing_period_count) throw validationError('billing_period_count', `must be the subscription's (${sub.billing_period_count})`)
  if (input.billing_cycle !== undefined && input.billing_cycle !== sub.billing_cycle) throw validationError('billing_cycle', `must be the subscription's (${sub.billing_cycle}): a plan change keeps the billing cycle`)
}

/** Children bill through their parent, whose invoices would have to carry the change: refused rather than half done. */
function checkChangeable(sub: Sub): void {
  assertLive(sub)
  if (sub.subscription_status === 'draft') throw invalidOperation(`subscription ${sub.id} is a draft; change its plan by creating it again, or activate it first`, { subscription_id: sub.id })
  if (sub.subscription_type === 'inherited' || sub.subscription_type === 'grouped_invoicing') {
    throw invalidOperation(`subscription ${sub.id} is ${sub.subscription_type} and billed through its parent ${sub.parent_subscription_id}; its plan cannot be changed (remove it from the group first)`, { subscription_id: sub.id, subscription_type: sub.subscription_type })
  }
}

/** The plan's own line items (not a phase's or an addon's) still in force at `at`. */
async function planLines(db: Db, scope: Scope, sub: Sub, at: Date): Promise<store.LineItemRow[]> {
  const lines = await store.childrenOf<store.LineItemRow>(db, store.LINE_ITEMS, scope, [sub.id])
  return lines.filter((l) => l.entity_type === 'plan' && l.entity_id === sub.plan_id && !l.subscription_phase_id && !l.addon_association_id && (l.end_date === null || l.end_date > at))
}

/**
 * A fixed line of the target plan keeps the quantity of the line it replaces: the same price's, else, when
 * each plan has one recurring fixed price (seats), the old one's; else 1.
 */
function carriedQuantity(price: PriceRow, ending: store.LineItemRow[], targets: PriceRow[]): Decimal | undefined {
  if (price.type !== 'FIXED') return undefined
  const same = ending.find((l) => l.price_id === price.id)
  if (same) return same.quantity
  const oldSeats = ending.filter((l) => recurringFixed(l.price))
  const newSeats = targets.filter((p) => p.type === 'FIXED' && p.billing_cadence === 'RECURRING')
  return oldSeats.length === 1 && newSeats.length === 1 && price.billing_cadence === 'RECURRING' ? oldSeats[0].quantity : undefined
}

/** Where new lines end: where the lines they follow would have (null: open), or the subscription's end. */
export function endOf(sub: Sub, following: store.LineItemRow[]): Date | null {
  const ends = following.map((l) => l.end_date)
  if (ends.length === 0) return sub.end_date
  return ends.some((e) => e === null) ? null : new Date(Math.max(...ends.map((e) => e!.getTime())))
}

/** `prices` of `target` as line items from `at` to `end`, fixed ones carrying the quantities of the `ending` lines they replace. */
export function startingLines(sub: Sub, target: OfferingRow, prices: PriceRow[], ending: store.LineItemRow[], at: Date, end: Date | null, behavior: ProrationBehavior | null): NewLine[] {
  const owner = { entity_type: 'plan' as const, entity_id: target.id, name: target.name }
  return prices.map((p) => ({ ...lineItemFields(sub, owner, p, { start_date: at, end_date: end, quantity: carriedQuantity(p, ending, prices) }), proration_behavior: behavior }))
}

/** What a change to `input.target_plan_id` may be: another published plan with recurring prices in the subscription's currency and period. */
export async function checkTarget(db: Db, scope: Scope, sub: Sub, input: PlanChangeInput): Promise<{ target: OfferingRow; current: OfferingRow; prices: PriceRow[] }> {
  checkChangeable(sub)
  checkTerms(sub, input)
  const target = await referenced('target_plan_id', requireOffering(db, scope, 'PLAN', input.target_plan_id))
  if (target.id === sub.plan_id) throw validationError('target_plan_id', `is the subscription's plan already; POST /v1/plans/${target.id}/sync/subscriptions brings it onto the plan's current prices`)
  const current = await requireOffering(db, scope, 'PLAN', sub.plan_id, { anyStatus: true })
  const all = await pricesOf(db, scope, [target.id])
  const prices = matchPrices(all, sub.currency, sub.billing_period, sub.billing_period_count).filter((p) => p.billing_cadence === 'RECURRING')
  if (prices.length === 0) {
    const currencies = [...new Set(all.map((p) => p.currency))].join(', ') || 'none'
    throw validationError('target_plan_id', `plan ${target.id} has no recurring prices in ${sub.currency} billed every ${sub.billing_period_count} ${sub.billing_period} (its currencies: ${currencies}); a plan change keeps the subscription's currency`)
  }
  return { target, current, prices }
}

async function workOut(db: Db, scope: Scope, sub: Sub, input: PlanChangeInput, now: Date): Promise<Change> {
  const { target, current, prices } = await checkTarget(db, scope, sub, input)
  const scheduled = input.change_at === 'end_of_period'
  // A subscription that has not started changes from its start.
  const at = scheduled ? sub.current_period_end : sub.start_date > now ? sub.start_date : now
  if (sub.cancel_at && sub.cancel_at <= at) throw invalidOperation(`subscription ${sub.id} is cancelled from ${sub.cancel_at.toISOString()}, before the change would take effect`, { subscription_id: sub.id })
  if (sub.end_date && sub.end_date <= at) throw invalidOperation(`subscription ${sub.id} ends at ${sub.end_date.toISOString()}, before the change would take effect`, { subscription_id: sub.id })
  const ending = await planLines(db, scope, sub, at)
  for (const line of ending) assertEndOpen(line, now, 'target_plan_id')
  const behavior = scheduled ? 'none' : settlementOf(sub, input.proration_behavior ?? (sub.proration_behavior as ProrationBehavior), at, now)
  const starting = startingLines(sub, target, prices, ending, at, endOf(sub, ending), scheduled ? null : behavior)
  const cost = (lines: { terms: Record<string, unknown>; quantity: Decimal }[]) => lines.filter((l) => recurringFixed(l.terms)).reduce((acc, l) => acc.plus(amountOf(l.terms).times(l.quantity)), new D(0))
  const type = changeTypeOf(cost(ending.map((l) => ({ terms: l.price, quantity: l.quantity }))), cost(starting.map((l) => ({ terms: l.price as Record<string, unknown>, quantity: l.quantity }))))
  const warnings: string[] = []
  if (!scheduled && sub.subscription_status !== 'active') warnings.push(`the subscription is ${sub.subscription_status}: nothing was paid for this period, so nothing is prorated`)
  if (ending.some((l) => l.price_type === 'USAGE')) warnings.push(`usage before ${at.toISOString()} is billed at the old plan's prices, after it at the new plan's`)
  return { sub, current, target, type, at, scheduled, behavior, ending, starting, warnings }
}

/** The old lines as stored after the change: ended at `at` (one that starts later ends as it starts). */
const endedRows = (c: Change): store.LineItemRow[] =>
  c.ending.map((l) => ({ ...l, end_date: l.start_date > c.at ? l.start_date : c.at, end_proration_behavior: c.scheduled ? null : c.behavior }))

/** The billing engine's proration charges of the change; `ids` name the new lines once made. */
function chargesOf(c: Change, ids: string[] = []) {
  if (c.scheduled) return []
  const started = c.starting.map((l, i) => ({ ...l, id: ids[i] ?? '', end_proration_behavior: null }) as unknown as store.LineItemRow)
  return changeCharges(c.sub, [...endedRows(c), ...started], [c.at], c.behavior)
}

export const planSummary = (p: OfferingRow) => ({ id: p.id, name: p.name, description: p.description, lookup_key: p.lookup_key })
export const subscriptionSummary = (s: Sub) => ({
  id: s.id,
  plan_id: s.plan_id,
  status: s.subscription_status,
  current_period_start: s.current_period_start,
  current_period_end: s.current_period_end,
  billing_anchor: s.billing_anchor,
  created_at: s.created_at,
})

function prorationDetails(c: Change, lines: ProrationLine[]) {
  if (c.scheduled) return null
  const summary = prorationSummary(lines.map((l) => ({ description: l.description, amount: parseDecimal(l.amount) })), c.sub.currency, { start: c.sub.current_period_start, end: c.sub.current_period_end }, c.at)
  return { ...summary, proration_behavior: c.behavior, lines }
}

type InvoicePreview = Awaited<ReturnType<typeof previewOf>>

/** An invoice as Flexprice's DtoInvoicePreview; lines whose description is one of `prorations` are its proration lines. */
export function invoiceSummary(invoice: InvoicePreview, prorations: ProrationLine[] = []) {
  const prorated = new Set(prorations.map((l) => l.description))
  return {
    currency: invoice.currency,
    billing_reason: invoice.billing_reason,
    period_start: invoice.period_start,
    period_end: invoice.period_end,
    due_date: invoice.due_date,
    subtotal: invoice.subtotal,
    tax_amount: invoice.total_tax,
    total: invoice.total,
    line_items: invoice.line_items.map((l) => ({ description: l.display_name, amount: l.amount, quantity: l.quantity, period_start: l.period_start, period_end: l.period_end, is_proration: prorated.has(l.display_name ?? '') })),
  }
}

/** The SUBSCRIPTION_UPDATE invoice an always_invoice change makes now. */
async function updatePreview(deps: Deps, actor: Actor, c: Change, taxes: Awaited<ReturnType<typeof updateTaxes>>, now: Date): Promise<InvoicePreview | null> {
  const charges = chargesOf(c)
  if (c.behavior !== 'always_invoice' || charges.length === 0) return null
  return previewOf(deps.sql, actor, updateInvoice(c.sub, charges, taxes, now, deps.config.invoicing.graceMs), now)
}

/** The subscription's next invoice with the change made (made and rolled back): its next period, the prorations left to it, usage so far. */
function nextInvoice(deps: Deps, actor: Actor, id: string, input: PlanChangeInput): Promise<InvoicePreview | null> {
  return rolledBack(deps, async (inner) => {
    await executePlanChange(inner, actor, id, input)
    return previewInvoice(inner, actor, { subscription_id: id }).catch((err: unknown) => {
      if (err instanceof AppError) return null // nothing left to bill
      throw err
    })
  })
}

const taxesFor = async (deps: Deps, actor: Actor, sub: Sub, input: PlanChangeInput, now: Date) =>
  input.proration_behavior === 'always_invoice' && input.change_at !== 'end_of_period' ? updateTaxes(deps, actor, sub, now) : []

export async function previewPlanChange(deps: Deps, actor: Actor, id: string, input: PlanChangeInput) {
  const now = deps.clock.now()
  const sub = await requireSubscription(deps.sql, actor, id)
  const c = await workOut(deps.sql, actor, sub, input, now)
  const lines = prorationLines(sub, chargesOf(c))
  const update = await updatePreview(deps, actor, c, await taxesFor(deps, actor, sub, input, now), now)
  const next = await nextInvoice(deps, actor, id, input)
  return toWire({
    subscription_id: sub.id,
    current_plan: planSummary(c.current),
    target_plan: planSummary(c.target),
    change_type: c.type,
    effective_date: c.at,
    is_scheduled: c.scheduled,
    scheduled_at: c.scheduled ? c.at : null,
    proration_details: prorationDetails(c, lines),
    // always_invoice: the update invoice made now; the next billing point's invoice either way.
    update_invoice_preview: update && invoiceSummary(update, lines),
    next_invoice_preview: next && invoiceSummary(next, lines),
    new_billing_cycle: { billing_anchor: sub.billing_anchor, billing_cadence: 'RECURRING', billing_period: sub.billing_period, billing_period_count: sub.billing_period_count, period_start: sub.current_period_start, period_end: sub.current_period_end },
    warnings: c.warnings,
    metadata: input.metadata ?? {},
  })
}

/** Ends the old plan's lines at the change and starts the target plan's; the new lines' ids, in order. */
async function switchLines(tx: Tx, actor: Actor, audit: Audit, c: Change): Promise<string[]> {
  for (const row of endedRows(c)) await updateRecord(tx, store.LINE_ITEMS, actor, row.id, { end_date: row.end_date, end_proration_behavior: row.end_proration_behavior }, { audit })
  return (await insertRecords<store.LineItemRow>(tx, store.LINE_ITEMS, actor, audit, c.starting)).map((l) => l.id)
}

/**
 * Applies the change in one transaction: an immediate one moves the subscription's plan now (with its
 * always_invoice update invoice, if asked); one at the end of the period writes its line items and a pending
 * schedule. Either way subscription.updated is announced.
 */
export async function executePlanChange(deps: Deps, actor: Actor, id: string, input: PlanChangeInput) {
  const now = deps.clock.now()
  const audit = auditOf(deps, actor)
  const taxes = await taxesFor(deps, actor, await requireSubscription(deps.sql, actor, id), input, now)
  return transaction(deps, async (tx) => {
    const sub = await lockSubscription(tx, actor, id, input.version)
    const c = await workOut(tx, actor, sub, input, now)
    const pending = await pendingOf(tx, actor, sub.id)
    if (pending) throw invalidOperation(`subscription ${sub.id} already has a plan change scheduled for ${pending.scheduled_at.toISOString()} (${pending.id}); cancel it first`, { schedule_id: pending.id })
    const ids = await switchLines(tx, actor, audit, c)
    let invoice = null
    let schedule: ScheduleRow | null = null
    let row = sub
    if (c.scheduled) {
      const configuration: ScheduleConfiguration = {
        target_plan_id: c.target.id,
        proration_behavior: c.behavior,
        ended_line_items: c.ending.map((l) => ({ id: l.id, end_date: l.end_date?.toISOString() ?? null, end_proration_behavior: l.end_proration_behavior })),
        created_line_item_ids: ids,
      }
      schedule = await insertRecord<ScheduleRow>(tx, SCHEDULES, actor, audit, { subscription_id: sub.id, schedule_type: 'plan_change', schedule_status: 'pending', scheduled_at: c.at, configuration, metadata: input.metadata ?? {} })
    } else {
      const charges = chargesOf(c, ids)
      if (c.behavior === 'always_invoice' && charges.length > 0) invoice = await storeChangeInvoice(deps, tx, actor, updateInvoice(sub, charges, taxes, now, deps.config.invoicing.graceMs))
      row = await updateRecord<Sub>(tx, store.SUBSCRIPTIONS, actor, sub.id, { plan_id: c.target.id, plan_start_date: c.at }, { audit })
    }
    const lines = prorationLines(sub, chargesOf(c, ids))
    const result = {
      subscription_id: sub.id,
      change_type: c.type,
      effective_date: c.at,
      is_scheduled: c.scheduled,
      scheduled_at: c.scheduled ? c.at : null,
      schedule_id: schedule?.id ?? null,
      target_plan_id: c.target.id,
      old_subscription: subscriptionSummary(sub),
      new_subscription: subscriptionSummary(row),
      proration_applied: prorationDetails(c, lines),
      invoice_id: invoice?.id ?? null,
      credit_grants: [],
      metadata: input.metadata ?? {},
    }
    const view = await viewOf(tx, actor, row)
    const announced = { ...view, plan_change: toWire(result) }
    await announce(tx, actor, 'subscription.updated', store.SUBSCRIPTIONS, announced)
    return toWire({ ...result, invoice, warnings: c.warnings, subscription: view })
  })
}

/** A schedule's change as it comes due: the subscription moves onto the target plan (its lines were written when asked). */
export async function movePlan(tx: Tx, scope: Scope, audit: Audit, sub: Sub, schedule: ScheduleRow): Promise<Sub> {
  const target = await requireOffering(tx, scope, 'PLAN', schedule.configuration.target_plan_id, { anyStatus: true })
  if (target.status !== 'published') throw new AppError('invalid_operation', `plan ${target.id} was ${target.status} before the change applied`)
  return updateRecord<Sub>(tx, store.SUBSCRIPTIONS, scope, sub.id, { plan_id: target.id, plan_start_date: schedule.scheduled_at }, { audit })
}
