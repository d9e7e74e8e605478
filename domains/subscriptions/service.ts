// Subscriptions: creation under the specification's rules 1–5 (core/subscriptions.ts), line items
// snapshotted from the plan's prices, periods from core/periods.ts, and the changes that stay inside
// this domain. Reads are read.ts's, activation activation.ts's; cancellation and quantity changes are
// settled by invoices, so they live in invoicing/changes/. Every change writes subscription.* to the
// outbox in its transaction. Over 400 lines: creation's rules 1–5 are one transaction that reads best whole.
import { moneyAmount } from '../../core/billing/amounts.ts'
import { invalidOperation, validationError } from '../../core/errors.ts'
import { parseDecimal, type Decimal } from '../../core/money.ts'
import type { BillingPeriod } from '../../core/periods.ts'
import type { Actor, Scope } from '../../core/scope.ts'
import {
  billingAnchor,
  checkAnchor,
  checkPhases,
  checkThreshold,
  checkTimezone,
  initialStatus,
  matchPrices,
  parseQuantity,
  periodAt,
  resolveTrial,
  type BillingCycle,
  type SubscriptionType,
  type Timeline,
} from '../../core/subscriptions.ts'
import type { Deps } from '../../infra/deps.ts'
import type { Db, Tx } from '../../infra/postgres.ts'
import { insertRecord, insertRecords, updateRecord, type Audit } from '../../infra/records.ts'
import { customerDeletion, findCustomerByExternalId, requireCustomer, type CustomerRow } from '../customers/service.ts'
import type { OfferingRow } from '../catalog/offerings/service.ts'
import { requireOffering } from '../catalog/offerings/kinds.ts'
import { pricesOf, requirePrice, type PriceRow } from '../catalog/prices/service.ts'
import { guards } from '../records/guards.ts'
import { announce, auditOf, referenced, transaction } from '../records/service.ts'
import { onCustomersTime } from '../customers/reach.ts'
import { lineItemFields, type LineOwner } from './line-items.ts'
import * as store from './store.ts'
import { requireSubscription, viewOf, type SubscriptionView } from './read.ts'


export interface PhaseInput {
  start_date: string
  end_date?: string | null
  metadata?: Record<string, string>
  line_items?: { price_id: string; quantity?: string }[]
}

export interface CreateSubscriptionInput {
  /** "draft": billed and granted nothing until POST /v1/subscriptions/{id}/activate. */
  subscription_status?: 'draft'
  customer_id?: string
  external_customer_id?: string
  plan_id: string
  currency: string
  billing_period: BillingPeriod
  billing_period_count?: number
  billing_cycle?: BillingCycle
  start_date?: string
  end_date?: string
  trial_period_days?: number
  trial_start?: string
  trial_end?: string
  billing_anchor?: string
  collection_method?: 'charge_automatically' | 'send_invoice'
  payment_behavior?: 'default_active' | 'default_incomplete' | 'allow_incomplete' | 'error_if_incomplete'
  payment_terms?: string
  proration_behavior?: 'create_prorations' | 'none'
  auto_invoice_threshold?: string
  commitment_amount?: string
  commitment_duration?: BillingPeriod
  overage_factor?: string
  enable_true_up?: boolean
  invoicing_customer_id?: string
  parent_subscription_id?: string
  inheritance?: { parent_subscription_id?: string; subscriptions_ids_for_grouped_invoicing?: string[] }
  coupons?: string[]
  tax_rate_overrides?: Record<string, unknown>[]
  customer_timezone?: string
  gateway_payment_method_id?: string
  lookup_key?: string
  metadata?: Record<string, string>
  phases?: PhaseInput[]
  addons?: { addon_id: string; quantity?: number }[]
}

export const date = (value: string | null | undefined): Date | null => (value ? new Date(value) : null)

// A customer with a subscription that is not cancelled (a scheduled cancellation still counts) stays.
customerDeletion.register(async (db, scope, customerId) => {
  if ((await store.countLive(db, scope, customerId)) > 0) throw invalidOperation('the customer has subscriptions that are not cancelled; cancel them first', { customer_id: customerId })
})

export const awaitsPayment = (collection: string, behavior: string): boolean => collection === 'charge_automatically' && behavior === 'default_incomplete'

// ---- creating -----------------------------------------------------------------------------------------

async function resolveCustomer(deps: Deps, scope: Scope, input: CreateSubscriptionInput): Promise<CustomerRow> {
  // customer_id wins when both are given, as the reference system does.
  if (input.customer_id) return referenced('customer_id', requireCustomer(deps, scope, input.customer_id))
  if (input.external_customer_id) return referenced('external_customer_id', findCustomerByExternalId(deps, scope, input.external_customer_id))
  throw validationError('customer_id', 'customer_id or external_customer_id is required')
}

/** The prices of a plan or addon this subscription takes; an owner with prices but none that fit is refused. */
async function pricesFor(db: Db, scope: Scope, owner: { id: string; name: string; noun: string }, input: CreateSubscriptionInput, field: string): Promise<PriceRow[]> {
  const all = await pricesOf(db, scope, [owner.id])
  const count = input.billing_period_count ?? 1
  const matched = matchPrices(all, input.currency, input.billing_period, count)
  const recurring = (prices: PriceRow[]) => prices.some((p) => p.billing_cadence === 'RECURRING')
  if (recurring(all) && !recurring(matched)) {
    throw validationError(field, `${owner.noun} ${owner.id} has no prices in ${input.currency.toUpperCase()} billed every ${count} ${input.billing_period}`)
  }
  return matched
}

/** A parent or child must be this environment's, live and in the same currency; a child may not be a parent itself. */
async function relative(db: Db, scope: Scope, id: string, field: string, currency: string, missingField = field): Promise<store.SubscriptionRow> {
  const sub = await referenced(missingField, requireSubscription(db, scope, id))
  if (sub.subscription_status === 'cancelled') throw validationError(field, `subscription ${id} is cancelled`)
  if (sub.currency !== currency.toUpperCase()) throw validationError(field, `subscription ${id} bills in ${sub.currency}, not ${currency.toUpperCase()}`)
  return sub
}

/** Grouped children: standalone subscriptions without an auto-invoice threshold (rule 5 keeps those standalone). */
export async function groupableChildren(db: Db, scope: Scope, ids: string[], field: string, currency: string, parentId?: string): Promise<store.SubscriptionRow[]> {
  if (new Set(ids).size !== ids.length) throw validationError(field, 'lists a subscription twice')
  const children: store.SubscriptionRow[] = []
  for (const [i, id] of ids.entries()) {
    if (id === parentId) throw validationError(field, 'a subscription cannot be grouped under itself')
    const child = await relative(db, scope, id, field, currency, `${field}[${i}]`)
    if (child.subscription_type !== 'standalone') throw validationError(field, `subscription ${id} is ${child.subscription_type}, not standalone`)
    if (child.auto_invoice_threshold) throw validationError(field, `subscription ${id} has an auto_invoice_threshold, which only standalone subscriptions may have`)
    children.push(child)
  }
  return children
}

interface Related {
  type: SubscriptionType
  parent?: store.SubscriptionRow
  children: store.SubscriptionRow[]
  invoicingCustomerId: string | null
}

async function related(deps: Deps, scope: Scope, input: CreateSubscriptionInput, customer: CustomerRow): Promise<Related> {
  const top = input.parent_subscription_id
  const nested = input.inheritance?.parent_subscription_id
  if (top && nested && top !== nested) throw validationError('inheritance.parent_subscription_id', 'differs from parent_subscription_id')
  const parentId = top ?? nested
  const groupIds = input.inheritance?.subscriptions_ids_for_grouped_invoicing ?? []
  const groupField = 'inheritance.subscriptions_ids_for_grouped_invoicing'
  if (parentId && groupIds.length > 0) throw validationError(groupField, 'cannot be combined with parent_subscription_id: a child cannot be a parent')
  let invoicingCustomerId: string | null = null
  if (input.invoicing_customer_id && input.invoicing_customer_id !== customer.id) {
    if (parentId) throw validationError('invoicing_customer_id', 'an inherited subscription is invoiced through its parent')
    invoicingCustomerId = (await referenced('invoicing_customer_id', requireCustomer(deps, scope, input.invoicing_customer_id))).id
  }
  if (parentId) {
    const parent = await relative(deps.sql, scope, parentId, 'parent_subscription_id', input.currency)
    if (parent.parent_subscription_id) throw validationError('parent_subscription_id', `subscription ${parentId} is itself a child`)
    if (parent.auto_invoice_threshold) throw validationError('parent_subscription_id', `subscription ${parentId} has an auto_invoice_threshold and must stay standalone`)
    return { type: 'inherited', parent, children: [], invoicingCustomerId: null }
  }
  if (groupIds.length > 0) {
    const children = await groupableChildren(deps.sql, scope, groupIds, groupField, input.currency)
    if (invoicingCustomerId) throw validationError('invoicing_customer_id', 'cannot be combined with grouped invoicing')
    return { type: 'parent', children, invoicingCustomerId: null }
  }
  return { type: invoicingCustomerId ? 'delegated_invoicing' : 'standalone', children: [], invoicingCustomerId }
}

export interface PreparedPhase {
  start_date: Date
  end_date: Date | null
  metadata: Record<string, string>
  prices: { price: PriceRow; quantity?: Decimal }[]
}

/**
 * Phases with their prices looked up (published, in the subscription's currency); `name(i)` is how
 * errors call phase i ("phases[0]" in a subscription request, "" when the request is one phase).
 */
export async function preparePhases(db: Db, scope: Scope, phases: PhaseInput[], currency: string, name: (i: number) => string): Promise<PreparedPhase[]> {
  const prepared: PreparedPhase[] = []
  for (const [i, phase] of phases.entries()) {
    const prices = []
    for (const [j, item] of (phase.line_items ?? []).entries()) {
      const at = [name(i), `line_items[${j}]`].filter(Boolean).join('.')
      const price = await referenced(`${at}.price_id`, requirePrice(db, scope, item.price_id))
      if (price.currency !== currency.toUpperCase()) throw validationError(`${at}.price_id`, `price ${price.id} is in ${price.currency}, not ${currency.toUpperCase()}`)
      const quantity = item.quantity === undefined ? undefined : parseQuantity(item.quantity, `${at}.quantity`)
      prices.push({ price, quantity })
    }
    prepared.push({ start_date: new Date(phase.start_date), end_date: date(phase.end_date), metadata: phase.metadata ?? {}, prices })
  }
  return prepared
}

/** Inserts phases with their line items, announcing each phase. */
export async function insertPhases(tx: Tx, actor: Actor, audit: Audit, sub: store.SubscriptionRow, phases: PreparedPhase[]): Promise<store.PhaseRow[]> {
  const rows: store.PhaseRow[] = []
  for (const phase of phases) {
    const row = await insertRecord<store.PhaseRow>(tx, store.PHASES, actor, audit, {
      subscription_id: sub.id,
      start_date: phase.start_date,
      end_date: phase.end_date,
      metadata: phase.metadata,
    })
    const owner = (price: PriceRow): LineOwner => ({ entity_type: price.entity_type === 'ADDON' ? 'addon' : 'plan', entity_id: price.entity_id, name: price.display_name ?? price.id })
    await insertRecords(
      tx,
      store.LINE_ITEMS,
      actor,
      audit,
      phase.prices.map(({ price, quantity }) =>
        lineItemFields(sub, owner(price), price, { start_date: phase.start_date, end_date: phase.end_date, subscription_phase_id: row.id, quantity }),
      ),
    )
    await announce(tx, actor, 'subscription.phase.created', store.PHASES, row)
    rows.push(row)
  }
  return rows
}

/** Moves subscriptions under (or out from under) a parent, announcing each change. */
export async function regroup(
  tx: Tx,
  actor: Scope,
  audit: Audit,
  subs: store.SubscriptionRow[],
  change: { subscription_type: SubscriptionType; parent_subscription_id: string | null },
): Promise<void> {
  for (const sub of subs) {
    const row = await updateRecord<store.SubscriptionRow>(tx, store.SUBSCRIPTIONS, actor, sub.id, change, { audit })
    await announce(tx, actor, 'subscription.updated', store.SUBSCRIPTIONS, row)
  }
}

/**
 * What a new subscription names that only higher domains know (its coupons, its tax rate codes): they
 * register a check when they load, and a reference outside the environment is not_found naming the field.
 */
export const subscriptionReferences = guards<CreateSubscriptionInput>()

export async function createSubscription(callerDeps: Deps, actor: Actor, input: CreateSubscriptionInput): Promise<SubscriptionView> {
  const customer = await resolveCustomer(callerDeps, actor, input)
  // A customer on a test clock subscribes at the clock's time: its periods start from there.
  const deps = await onCustomersTime(callerDeps, customer)
  const now = deps.clock.now()
  const plan = await referenced('plan_id', requireOffering(deps.sql, actor, 'PLAN', input.plan_id))
  await subscriptionReferences.check(deps.sql, actor, input)
  const prices = await pricesFor(deps.sql, actor, { id: plan.id, name: plan.name, noun: 'plan' }, input, 'billing_period')

  const start = date(input.start_date) ?? now
  const end = date(input.end_date)
  if (end && end <= start) throw validationError('end_date', 'must be after start_date')
  if (end && end <= now) throw validationError('end_date', 'must be in the future')
  const cycle = input.billing_cycle ?? 'anniversary'
  const anchor = date(input.billing_anchor) ?? undefined
  checkAnchor(cycle, anchor)
  const trial = resolveTrial({ start, trial_period_days: input.trial_period_days, trial_start: date(input.trial_start) ?? undefined, trial_end: date(input.trial_end) ?? undefined }, prices)
  const rel = await related(deps, actor, input, customer)
  checkThreshold(input.auto_invoice_threshold, rel.type, prices)
  checkCommitment(input)
  const timezone = input.customer_timezone ?? 'UTC'
  checkTimezone(timezone, 'customer_timezone')

  const schedule = { billing_cycle: cycle, billing_period: input.billing_period, billing_period_count: input.billing_period_count ?? 1, timezone }
  const timeline: Timeline = {
    ...schedule,
    start_date: start,
    end_date: end,
    trial_start: trial?.start ?? null,
    trial_end: trial?.end ?? null,
    billing_anchor: billingAnchor(schedule, trial?.end ?? start, anchor),
  }
  const collection = input.collection_method ?? 'charge_automatically'
  const behavior = input.payment_behavior ?? 'default_active'
  const draft = input.subscription_status === 'draft'
  if (draft && rel.children.length > 0) throw validationError('inheritance.subscriptions_ids_for_grouped_invoicing', 'a draft cannot take over the billing of other subscriptions')
  const status = draft ? 'draft' : initialStatus(timeline, now, awaitsPayment(collection, behavior))
  const period = periodAt(timeline, now)

  const phases = await preparePhases(deps.sql, actor, input.phases ?? [], input.currency, (i) => `phases[${i}]`)
  checkPhases(phases, start, end)
  const addons: { addon: OfferingRow; quantity: number; prices: PriceRow[] }[] = []
  for (const [i, a] of (input.addons ?? []).entries()) {
    const addon = await referenced(`addons[${i}].addon_id`, requireOffering(deps.sql, actor, 'ADDON', a.addon_id))
    if (addon.type === 'onetime' && ((a.quantity ?? 1) !== 1 || addons.some((x) => x.addon.id === addon.id))) {
      throw validationError(`addons[${i}]`, `addon ${addon.id} is onetime: once per subscription, quantity 1`)
    }
    addons.push({ addon, quantity: a.quantity ?? 1, prices: await pricesFor(deps.sql, actor, { id: addon.id, name: addon.name, noun: 'addon' }, input, `addons[${i}].addon_id`) })
  }

  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    const sub = await insertRecord<store.SubscriptionRow>(tx, store.SUBSCRIPTIONS, actor, audit, {
      customer_id: customer.id,
      invoicing_customer_id: rel.invoicingCustomerId,
      parent_subscription_id: rel.parent?.id ?? null,
      plan_id: plan.id,
      lookup_key: input.lookup_key ?? null,
      currency: input.currency.toUpperCase(),
      subscription_status: status,
      subscription_type: rel.type,
      billing_cycle: cycle,
      billing_period: input.billing_period,
      billing_period_count: schedule.billing_period_count,
      billing_anchor: timeline.billing_anchor,
      start_date: start,
      end_date: end,
      current_period_start: period.start,
      current_period_end: period.end,
      trial_start: timeline.trial_start,
      trial_end: timeline.trial_end,
      collection_method: collection,
      payment_behavior: behavior,
      payment_terms: input.payment_terms ?? null,
      proration_behavior: input.proration_behavior ?? 'none',
      customer_timezone: timezone,
      gateway_payment_method_id: input.gateway_payment_method_id ?? null,
      commitment_amount: input.commitment_amount === undefined ? null : parseDecimal(input.commitment_amount),
      commitment_duration: input.commitment_duration ?? null,
      overage_factor: input.overage_factor === undefined ? null : parseDecimal(input.overage_factor),
      enable_true_up: input.enable_true_up ?? false,
      auto_invoice_threshold: input.auto_invoice_threshold === undefined ? null : parseDecimal(input.auto_invoice_threshold),
      coupons: input.coupons ?? [],
      tax_rate_overrides: input.tax_rate_overrides ?? [],
      metadata: input.metadata ?? {},
    })
    const span = { start_date: start, end_date: end }
    const planOwner: LineOwner = { entity_type: 'plan', entity_id: plan.id, name: plan.name }
    const lines = prices.map((p) => lineItemFields(sub, planOwner, p, span))
    for (const a of addons) {
      const assoc = await insertRecord<store.AddonAssociationRow>(tx, store.ADDON_ASSOCIATIONS, actor, audit, {
        subscription_id: sub.id,
        addon_id: a.addon.id,
        quantity: a.quantity,
        ...span,
      })
      const owner: LineOwner = { entity_type: 'addon', entity_id: a.addon.id, name: a.addon.name }
      lines.push(...a.prices.map((p) => lineItemFields(sub, owner, p, { ...span, addon_association_id: assoc.id })))
    }
    await insertRecords(tx, store.LINE_ITEMS, actor, audit, lines)
    await insertPhases(tx, actor, audit, sub, phases)
    if (rel.parent?.subscription_type === 'standalone') await regroup(tx, actor, audit, [rel.parent], { subscription_type: 'parent', parent_subscription_id: null })
    await regroup(tx, actor, audit, rel.children, { subscription_type: 'grouped_invoicing', parent_subscription_id: sub.id })
    const view = await viewOf(tx, actor, sub)
    await announce(tx, actor, draft ? 'subscription.draft.created' : 'subscription.created', store.SUBSCRIPTIONS, view)
    return view
  })
}

/**
 * A commitment is money in the subscription's currency, per billing period, and settled on the period's
 * cycle invoice, so it cannot be combined with a threshold that bills usage mid-period.
 */
function checkCommitment(input: CreateSubscriptionInput): void {
  if (input.overage_factor !== undefined && parseDecimal(input.overage_factor).lt(1)) throw validationError('overage_factor', 'must be at least 1')
  if (input.commitment_amount === undefined) return
  moneyAmount(input.commitment_amount, input.currency, 'commitment_amount')
  if (input.commitment_duration && input.commitment_duration !== input.billing_period) throw validationError('commitment_duration', `must be the billing period (${input.billing_period}): a commitment is settled per billing period`)
  if (input.auto_invoice_threshold !== undefined) throw validationError('commitment_amount', 'cannot be combined with auto_invoice_threshold: the commitment is settled on the cycle invoice of the whole period')
}

/** Charged automatically and told to wait: incomplete until the first invoice is paid. */
// ---- changing -----------------------------------------------------------------------------------------

export interface UpdateSubscriptionInput {
  lookup_key?: string | null
  metadata?: Record<string, string>
  version?: number
}

/** Only labels change here; billing changes go through cancel and modify, which price them. */
export async function updateSubscription(deps: Deps, actor: Actor, id: string, input: UpdateSubscriptionInput): Promise<SubscriptionView> {
  const { version, ...fields } = input
  return transaction(deps, async (tx) => {
    const row = await updateRecord<store.SubscriptionRow>(tx, store.SUBSCRIPTIONS, actor, id, fields, { version, audit: auditOf(deps, actor) })
    const view = await viewOf(tx, actor, row)
    await announce(tx, actor, 'subscription.updated', store.SUBSCRIPTIONS, view)
    return view
  })
}

/**
 * A line whose coming end was already invoiced (always_invoice) keeps it: moving the end would leave the
 * credit on that invoice wrong.
 */
export function assertEndOpen(line: store.LineItemRow, now: Date, field: string): void {
  if (line.end_date && line.end_date > now && line.end_proration_behavior === 'always_invoice') {
    throw invalidOperation(`line item ${line.id} ends at ${line.end_date.toISOString()} and its unused time from then was already invoiced`, { field, line_item_id: line.id })
  }
}

/** Lines paid in advance for a recurring period: the ones a mid-period change prorates. */
export const paidInAdvance = (l: store.LineItemRow): boolean => l.price_type === 'FIXED' && l.invoice_cadence === 'ADVANCE' && l.price.billing_cadence === 'RECURRING'

/**
 * When a parent ends, inherited children end with it (they are billed through it) and grouped children
 * become standalone again (they bill themselves).
 */
export async function releaseChildren(tx: Tx, scope: Scope, audit: Audit, parent: store.SubscriptionRow, at: Date): Promise<void> {
  const children = await store.childSubscriptions(tx, scope, parent.id)
  for (const child of children.filter((c) => c.subscription_type === 'inherited')) {
    const row = await updateRecord<store.SubscriptionRow>(tx, store.SUBSCRIPTIONS, scope, child.id, { subscription_status: 'cancelled', cancelled_at: at, end_date: at, cancel_at: at }, { audit })
    await store.endLineItems(tx, scope, { subscription_id: child.id }, at, audit)
    await announce(tx, scope, 'subscription.cancelled', store.SUBSCRIPTIONS, row)
  }
  await regroup(tx, scope, audit, children.filter((c) => c.subscription_type === 'grouped_invoicing'), { subscription_type: 'standalone', parent_subscription_id: null })
}

/** Guards modifications: a cancelled subscription is finished. */
export function assertLive(sub: store.SubscriptionRow): void {
  if (sub.subscription_status === 'cancelled') throw invalidOperation(`subscription ${sub.id} is cancelled`, { subscription_id: sub.id })
}
