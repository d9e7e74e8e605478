// The candidate of a pricing simulation: price overrides (a price's amount, billing model, tiers, package,
// minimum quantity or allowance changed) or a whole plan. Checked against the catalog once when the simulation is
// asked for; then applied to each subscription's billing context, which the billing engine bills as it is.
import { validationError, AppError } from '../../../core/errors.ts'
import { priceTerms, type PriceInput } from '../../../core/price-rules.ts'
import type { TierMode } from '../../../core/pricing/index.ts'
import type { TransformQuantity } from '../../../core/pricing/package.ts'
import type { Tier } from '../../../core/pricing/tiered.ts'
import { matchPrices } from '../../../core/subscriptions.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Db } from '../../../infra/postgres.ts'
import { entitlementsOf, type EntitlementView } from '../../catalog/entitlements/service.ts'
import { requireOffering } from '../../catalog/offerings/kinds.ts'
import { pricesOf, priceWindows, requirePrice, type PriceRow } from '../../catalog/prices/service.ts'
import { referenced } from '../../records/service.ts'
import { toWire } from '../../records/wire.ts'
import { lineItemFields } from '../../subscriptions/line-items.ts'
import type { LineItemRow } from '../../subscriptions/read.ts'
import type { BillingContext } from '../invoices/billing.ts'

interface PriceOverride {
  price_id: string
  billing_model?: 'FLAT_FEE' | 'PACKAGE' | 'TIERED'
  amount?: string
  tier_mode?: TierMode
  tiers?: Tier[]
  transform_quantity?: TransformQuantity
  min_quantity?: string | null
  /** Units of usage free each period before the price applies (the entitlement's usage_limit, as a soft limit); null: none. */
  allowance?: number | null
}

export type CandidateInput = { price_overrides: PriceOverride[]; plan_id?: undefined } | { plan_id: string; price_overrides?: undefined }

/** Terms a line item's price snapshot takes from an override. */
const MODEL_TERMS = ['billing_model', 'amount', 'tier_mode', 'tiers', 'transform_quantity', 'min_quantity'] as const

interface PreparedOverride {
  price: PriceRow
  /** The line item's price snapshot fields replaced, as the line stores them. */
  terms: Record<string, unknown> | null
  allowance?: number | null
}

export type Candidate =
  | { kind: 'prices'; currency: string; overrides: Map<string, PreparedOverride> }
  | { kind: 'plan'; currency: string; planId: string; planName: string; prices: PriceRow[]; entitlements: EntitlementView[] }

/** A stored price as the input priceTerms checks, its model fields replaced by the override's when it names them. */
function overriddenInput(price: PriceRow, o: PriceOverride): PriceInput {
  const sameModel = o.billing_model === undefined || o.billing_model === price.billing_model
  const base = sameModel
    ? { amount: price.amount.toFixed(), tier_mode: price.tier_mode ?? undefined, tiers: price.tiers ?? undefined, transform_quantity: price.transform_quantity ?? undefined }
    : {}
  const given = Object.fromEntries(MODEL_TERMS.filter((k) => o[k] !== undefined && k !== 'min_quantity').map((k) => [k, o[k]]))
  // A tiered price has no amount of its own (stored as 0): the override's tiers stand alone.
  if ((o.billing_model ?? price.billing_model) === 'TIERED') delete (base as { amount?: string }).amount
  const minQuantity = o.min_quantity === undefined ? price.min_quantity?.toFixed() : (o.min_quantity ?? undefined)
  return {
    currency: price.currency,
    type: price.type,
    billing_model: o.billing_model ?? price.billing_model,
    billing_period: price.billing_period,
    billing_cadence: price.billing_cadence,
    billing_period_count: price.billing_period_count,
    invoice_cadence: price.invoice_cadence,
    meter_id: price.meter_id ?? undefined,
    ...base,
    ...given,
    ...(minQuantity !== undefined && { min_quantity: minQuantity }),
  }
}

/** Runs a check of one override, its errors named under `field`. */
function under<T>(field: string, check: () => T): T {
  try {
    return check()
  } catch (err) {
    if (err instanceof AppError && err.code === 'validation_error') {
      const inner = Object.keys(err.details)[0] ?? ''
      throw validationError(inner ? `${field}.${inner}` : field, String(err.details[inner] ?? err.message))
    }
    throw err
  }
}

async function prepareOverrides(db: Db, scope: Scope, overrides: PriceOverride[]): Promise<Candidate> {
  const prepared = new Map<string, PreparedOverride>()
  let currency: string | undefined
  for (const [i, o] of overrides.entries()) {
    const field = `candidate.price_overrides[${i}]`
    if (prepared.has(o.price_id)) throw validationError(`${field}.price_id`, 'names a price already overridden')
    const price = await referenced(`${field}.price_id`, requirePrice(db, scope, o.price_id))
    if (currency && price.currency !== currency) throw validationError(`${field}.price_id`, `is in ${price.currency}; the other prices are in ${currency}: a simulation compares one currency`)
    currency = price.currency
    if (o.allowance !== undefined && price.type !== 'USAGE') throw validationError(`${field}.allowance`, 'only a USAGE price has an allowance')
    const changesModel = MODEL_TERMS.some((k) => o[k] !== undefined)
    const terms = changesModel ? under(field, () => priceTerms(overriddenInput(price, o))) : null
    prepared.set(o.price_id, { price, terms: terms && (toWire(Object.fromEntries(MODEL_TERMS.map((k) => [k, terms[k]]))) as Record<string, unknown>), allowance: o.allowance })
  }
  return { kind: 'prices', currency: currency!, overrides: prepared }
}

async function preparePlan(db: Db, scope: Scope, planId: string): Promise<Candidate> {
  const plan = await referenced('candidate.plan_id', requireOffering(db, scope, 'PLAN', planId))
  const prices = await pricesOf(db, scope, [plan.id])
  const currencies = [...new Set(prices.map((p) => p.currency))]
  if (currencies.length !== 1) throw validationError('candidate.plan_id', currencies.length === 0 ? 'the plan has no prices' : `the plan has prices in ${currencies.join(', ')}: a simulation compares one currency`)
  return { kind: 'plan', currency: currencies[0], planId: plan.id, planName: plan.name, prices, entitlements: await entitlementsOf(db, scope, [plan.id]) }
}

/** The candidate checked against the catalog: every price or the plan is the caller's, and in one currency. */
export function prepareCandidate(db: Db, scope: Scope, input: CandidateInput): Promise<Candidate> {
  return input.plan_id !== undefined ? preparePlan(db, scope, input.plan_id) : prepareOverrides(db, scope, input.price_overrides)
}

/**
 * The entitlement giving `line`'s allowance, replaced (or added) with `usage_limit` as a soft limit (the units
 * above it billed: a hard limit bills none, which prices nothing); removed when null. Its reset period stays.
 */
function withAllowance(entitlements: EntitlementView[], line: LineItemRow, usageLimit: number | null): EntitlementView[] {
  const matches = (e: EntitlementView) => e.entity_id === line.entity_id && e.feature?.meter_id === line.meter_id && e.feature_type === 'metered'
  const found = entitlements.find(matches)
  const rest = entitlements.filter((e) => !matches(e))
  if (usageLimit === null) return rest
  const base = found ?? ({ entity_id: line.entity_id, feature_type: 'metered', feature: { meter_id: line.meter_id }, is_enabled: true, is_soft_limit: true, usage_reset_period: null } as unknown as EntitlementView)
  return [...rest, { ...base, usage_limit: usageLimit, is_enabled: true, is_soft_limit: true }]
}

/** The context with the overrides applied; the same object when none of its lines has an overridden price. */
function overriddenContext(ctx: BillingContext, overrides: Map<string, PreparedOverride>): BillingContext {
  if (!ctx.members.some((m) => m.lines.some((l) => overrides.has(l.price_id)))) return ctx
  let entitlements = ctx.entitlements
  const members = ctx.members.map((m) => ({
    sub: m.sub,
    lines: m.lines.map((line) => {
      const o = overrides.get(line.price_id)
      if (!o) return line
      if (o.allowance !== undefined) entitlements = withAllowance(entitlements, line, o.allowance)
      return o.terms ? { ...line, price: { ...line.price, ...o.terms } } : line
    }),
  }))
  return { ...ctx, members, entitlements }
}

/**
 * The subscription on the candidate plan: its plan lines are replaced by lines of the plan's prices in its currency
 * and billing period, over the same span (a fixed price keeps the quantity of the line of the same price, else 1);
 * addon lines stay. The plan's entitlements give the allowances.
 */
function planContext(ctx: BillingContext, c: Extract<Candidate, { kind: 'plan' }>): BillingContext {
  const members = ctx.members.map((m) => {
    const planLines = m.lines.filter((l) => l.entity_type === 'plan')
    if (planLines.length === 0) return m
    const start = new Date(Math.min(...planLines.map((l) => l.start_date.getTime())))
    const end = planLines.some((l) => l.end_date === null) ? null : new Date(Math.max(...planLines.map((l) => l.end_date!.getTime())))
    const prices = matchPrices(c.prices, m.sub.currency, m.sub.billing_period, m.sub.billing_period_count)
    const lines = prices.map((price) => {
      const quantity = planLines.find((l) => l.price_id === price.id)?.quantity
      const fields = lineItemFields(m.sub, { entity_type: 'plan', entity_id: c.planId, name: c.planName }, price, { start_date: start, end_date: end, quantity })
      return { ...planLines[0], ...fields, id: `${m.sub.id}:${price.id}`, proration_behavior: null, end_proration_behavior: null } as LineItemRow
    })
    return { sub: m.sub, lines: [...lines, ...m.lines.filter((l) => l.entity_type !== 'plan')] }
  })
  return { ...ctx, members, entitlements: [...ctx.entitlements, ...c.entitlements] }
}

/** The price windows a plan candidate's lines need besides the subscription's own. */
export async function candidateWindows(db: Db, scope: Scope, c: Candidate): Promise<BillingContext['prices']> {
  return c.kind === 'plan' ? priceWindows(db, scope, c.prices.map((p) => p.id)) : new Map()
}

/** The subscription's billing context with the candidate's prices (`ctx` itself when the candidate changes none of them). */
export function candidateContext(ctx: BillingContext, c: Candidate, windows: BillingContext['prices']): BillingContext {
  if (c.kind === 'prices') return overriddenContext(ctx, c.overrides)
  return { ...planContext(ctx, c), prices: new Map([...ctx.prices, ...windows]) }
}

/** Whether a candidate changes the line coupons address: a new plan's lines are not the ones they were given for. */
export const keepsLines = (c: Candidate): boolean => c.kind === 'prices'
