// What usage cost over a range, as the invoices bill it. The customers' subscription line items are priced by the
// billing code itself: the billing points of each subscription's cycle (core/billing/cycle) and their usage charges,
// each line's price, the plan's allowance for its meter (once per reset window when it resets inside the period, as
// billed) and the subscription's commitment (invoicing's billing.ts), priced together per billing period by
// core/analytics periodCosts. Within a period, a window costs what the lines'
// amounts grew by from its start to its end, usage being counted from the period's start (an allowance used up
// before the range is used up): for a closed period read whole, the windows add up to the invoice line's amount.
import { cumulativeUsage, periodCosts } from '../../core/analytics/allocation.ts'
import { billingPoints, pointCharges, type BillingPoint, type Charge } from '../../core/billing/cycle.ts'
import { timeSlicer } from '../../core/concurrency.ts'
import { validationError } from '../../core/errors.ts'
import { runs } from '../../core/runs.ts'
import { D, ZERO, type Decimal } from '../../core/money.ts'
import type { UsageWindow, WindowSize } from '../../core/periods.ts'
import type { PriceInput } from '../../core/pricing/index.ts'
import type { Actor, Scope } from '../../core/scope.ts'
import { isAdditive, queryWindows, type CalendarOptions } from '../../core/usage.ts'
import type { Deps } from '../../infra/deps.ts'
import type { Meter } from '../catalog/meters/service.ts'
import { cachedRecords } from './cached-records.ts'
import { listSubscriptions, type LineItemRow, type SubscriptionRow } from '../subscriptions/read.ts'
import { meterUsageByCustomer, type UsageResult } from '../usage/queries/service.ts'
import { allowanceOf, cycleLine, cycleOf, loadContexts, resetWindows, subscriptionCommitment, type BillingContext } from '../invoicing/invoices/billing.ts'

export interface CostQuery {
  meters: Meter[]
  /** Internal ids of the customers whose lines are priced; absent: every subscription of the environment. */
  customerIds?: string[]
  start: Date
  end: Date
  windowSize?: WindowSize
  calendar: CalendarOptions
  /**
   * A customer's (external id) usage of a meter in each window of the range, where the caller has already read it
   * whole (an unfiltered breakdown with every group): spares the read. Used for additive, unbucketed meters read
   * over exactly the range with nothing before it; undefined: read it.
   */
  known?: (meterId: string, externalCustomerId: string) => Decimal[] | undefined
}

export interface MeterCost {
  /** What each window of the range cost (one window without a window size). */
  windows: Decimal[]
  /** The same per customer (external id), when asked for (`planCosts`' perCustomer). */
  customers?: Map<string, Decimal[]>
  /** The subscription line items that priced the meter's usage. */
  lines: LineItemRow[]
  /** With exactly one subscription with a commitment: its terms and how the meter's lines met it at the range's end. */
  commitment: { amount: string; overage_factor: string | null; true_up_enabled: boolean; utilized: Decimal; overage: Decimal } | null
  /** With a commitment: what each window adds to the lines' amounts within it (utilized) and over it (overage). */
  commitmentWindows: { utilized: Decimal[]; overage: Decimal[] } | null
}

export interface Costs {
  /** The subscriptions' currency; null when no line prices these meters. */
  currency: string | null
  meters: Map<string, MeterCost>
}

/** Usage counted from `start` (a charge's period, or one of its allowance windows), read over [from, to). */
interface UsageSpan {
  start: Date
  from: Date
  to: Date
  /** The usage from `start` up to each of its unit's instants. */
  cumulative?: Decimal[]
}

/** A usage charge of one billing period and what the read covers of it. */
interface PricedCharge {
  row: LineItemRow
  charge: Charge
  customer: string
  /** The part of the charge inside the range. */
  from: Date
  to: Date
  /** The charge's period; or, when its allowance resets inside the period (a DAILY limit), each reset window it gets the allowance for, as billed. */
  spans: UsageSpan[]
  resets: boolean
}

/** One billing period of one subscription: its usage charges in invoice order, and the instants the range cuts it at. */
interface PeriodUnit {
  ctx: BillingContext
  point: BillingPoint & { arrear: NonNullable<BillingPoint['arrear']> }
  charges: PricedCharge[]
  /** The read's start in the period, the window ends inside it, its end. */
  instants: Date[]
}

const systemActor = (scope: Scope): Actor => ({ ...scope, keyId: 'system', roles: ['admin'] })

async function subscriptionsOf(deps: Deps, scope: Scope, customerIds: string[] | undefined): Promise<SubscriptionRow[]> {
  if (customerIds?.length === 0) return []
  const all: SubscriptionRow[] = []
  for (let offset = 0; ; offset += 1000) {
    const page = await listSubscriptions(deps, systemActor(scope), {
      params: { limit: 1000, offset, sort: 'created_at', order: 'asc', status: 'published', metadata: {} },
      filters: customerIds ? { customer_ids: customerIds } : {},
    })
    // A draft bills nothing (the billing run skips it).
    all.push(...page.items.filter((s) => s.subscription_status !== 'draft'))
    if (offset + 1000 >= page.pagination.total) return all
  }
}

const ONE = new D(1)

const later = (a: Date, b: Date) => (a > b ? a : b)
const earlier = (a: Date, b: Date) => (a < b ? a : b)

/** The billing periods of `ctx`'s subscription that the range reaches, with their usage charges of `meters`. */
function unitsOf(ctx: BillingContext, q: CostQuery, windowEnds: Date[]): PeriodUnit[] {
  const meters = new Set(q.meters.map((m) => m.id))
  const { sub, lines } = ctx.members[0]
  const rows = new Map(lines.map((l) => [l.id, l]))
  const units: PeriodUnit[] = []
  for (const point of billingPoints(cycleOf(sub))) {
    const span = point.arrear
    if (!span) continue
    if (span.start >= q.end) break
    if (span.end <= q.start) continue
    const from = later(q.start, span.start)
    const to = earlier(q.end, span.end)
    const charges = pointCharges(point, lines.map(cycleLine), { prorate: false })
      .filter((c) => c.kind === 'usage' && meters.has(rows.get(c.line.id)!.meter_id!))
      .map((charge) => {
        const row = rows.get(charge.line.id)!
        const c = { from: later(from, charge.period.start), to: earlier(to, charge.period.end) }
        const resets = resetWindows(ctx, charge.period, allowanceOf(ctx, row, charge.period.start)?.reset ?? null)
        // A reset window is read from its own start; one wholly before the range is read whole, one after it is left out.
        const spans = resets
          ? resets.filter((w) => w.start < c.to).map((w) => ({ start: w.start, from: later(w.start, earlier(c.from, w.end)), to: earlier(c.to, w.end) }))
          : [{ start: charge.period.start, ...c }]
        return { row, charge, customer: ctx.customers.get(row.customer_id)!.external_id, ...c, spans, resets: resets !== undefined }
      })
      .filter((c) => c.from < c.to)
    if (charges.length === 0) continue
    units.push({ ctx, point: point as PeriodUnit['point'], charges, instants: [from, ...windowEnds.filter((t) => t > from && t < to), to] })
  }
  return units
}

// Read to each instant rather than run up from windows: COUNT_UNIQUE, AVG and WEIGHTED_SUM do not follow from window
// values, and MIN and LATEST need to know which windows had events, which the usage read's windows do not say (a MAX
// over non-negative usage — priced usage is never negative — runs up the same with or without the empty windows).
const NON_DERIVABLE = new Set(['COUNT_UNIQUE', 'AVG', 'WEIGHTED_SUM', 'MIN', 'LATEST'])

/** Usage up to each window's end run up from the windows (cumulativeUsage): a group_by meter's groups each, added up. */
function runningUsage(meter: Meter, opening: UsageResult | undefined, windows: UsageResult): Decimal[] {
  const groups = new Set<string>([...windows.results.flatMap((w) => [...w.groups.keys()]), ...(opening?.results[0]?.groups.keys() ?? [])])
  const keys = groups.size === 0 ? [undefined] : [...groups]
  const bucketed = meter.aggregation.bucket_size !== undefined && meter.aggregation.bucket_size !== null
  const perGroup = keys.map((g) =>
    cumulativeUsage(
      meter.aggregation.type,
      windows.results.map((w) => ({ eventCount: ONE, usage: g === undefined ? w.value : (w.groups.get(g) ?? ZERO) })),
      { bucketed, opening: opening ? (g === undefined ? opening.value : (opening.results[0]?.groups.get(g) ?? ZERO)) : undefined },
    ),
  )
  // An export prices thousands of windows a customer: one group's running usage is the answer, not a copy of it.
  return perGroup.length === 1 ? perGroup[0] : windows.results.map((_, i) => perGroup.reduce((a, c) => a.plus(c[i]), ZERO))
}

/**
 * Each span's usage from its start to each of its unit's instants (clamped to the span's part of the range), read
 * for all customers of a meter and span at once: the usage before `from` and the windows of [from, to), run up by
 * cumulativeUsage; aggregations whose windows do not add up are read to each instant. A meter that never resets
 * counts from its beginning, as billed.
 */
async function readUsage(deps: Deps, scope: Scope, q: CostQuery, units: PeriodUnit[], rangeWindows: UsageWindow[]): Promise<void> {
  const meters = new Map(q.meters.map((m) => [m.id, m]))
  const batches = new Map<string, { unit: PeriodUnit; c: PricedCharge; span: UsageSpan }[]>()
  for (const unit of units) {
    for (const c of unit.charges) {
      for (const span of c.spans) {
        const key = `${c.row.meter_id}|${span.start.getTime()}|${span.from.getTime()}|${span.to.getTime()}`
        const batch = batches.get(key)
        if (batch) batch.push({ unit, c, span })
        else batches.set(key, [{ unit, c, span }])
      }
    }
  }
  for (const batch of batches.values()) {
    const { from, to, start } = batch[0].span
    const meter = meters.get(batch[0].c.row.meter_id!)!
    const customers = [...new Set(batch.map((b) => b.c.customer))]
    const read = (start: Date, end: Date, windowSize?: WindowSize) =>
      meterUsageByCustomer(deps, scope, { meterId: meter.id, externalCustomerIds: customers, start, end, windowSize, ...q.calendar })
    const periodStart = meter.reset_usage === 'NEVER' ? new Date(0) : start
    // Per customer: the usage from the period's start to `from`, and to each window end after it.
    const at = new Map<string, Map<number, Decimal>>(customers.map((id) => [id, new Map()]))
    const opening = periodStart < from ? await read(periodStart, from) : undefined
    for (const id of customers) at.get(id)!.set(from.getTime(), opening?.get(id)?.value ?? new D(0))
    if (NON_DERIVABLE.has(meter.aggregation.type)) {
      const ends = [...new Set(batch.flatMap((b) => b.unit.instants.filter((t) => t > from && t <= to).map((t) => t.getTime())))]
      for (const t of ends) for (const [id, r] of await read(periodStart, new Date(t))) at.get(id)!.set(t, r.value)
    } else if (from < to) {
      const windows = knownWindows(q, meter, customers, from, to, opening === undefined, rangeWindows) ?? (await read(from, to, q.windowSize))
      for (const id of customers) {
        const running = runningUsage(meter, opening?.get(id), windows.get(id)!)
        windows.get(id)!.results.forEach((w, i) => at.get(id)!.set(w.end.getTime(), running[i]))
      }
    }
    for (const { unit, c, span } of batch) {
      const values = at.get(c.customer)!
      span.cumulative = unit.instants.map((t) => values.get((t <= from ? from : t >= to ? to : t).getTime()) ?? new D(0))
    }
  }
}

/** The customers' windows from `q.known`, when it has every one of them and they are the range's windows with nothing before. */
function knownWindows(q: CostQuery, meter: Meter, customers: string[], from: Date, to: Date, fromStart: boolean, windows: UsageWindow[]): Map<string, UsageResult> | undefined {
  const bucketed = meter.aggregation.bucket_size !== undefined && meter.aggregation.bucket_size !== null
  if (!q.known || !fromStart || bucketed || !isAdditive(meter.aggregation.type) || from.getTime() !== q.start.getTime() || to.getTime() !== q.end.getTime()) return undefined
  const out = new Map<string, UsageResult>()
  for (const id of customers) {
    const values = q.known(meter.id, id)
    if (!values) return undefined
    const results = windows.map((w, i) => ({ ...w, value: values[i], groups: new Map<string, Decimal>() }))
    out.set(id, { meterId: meter.id, eventName: meter.event_name, type: meter.aggregation.type, value: values.reduce((a, b) => a.plus(b), new D(0)), results })
  }
  return out
}

/** The index of the window holding each instant (ascending instants, windows in order). */
function windowsAt(windows: readonly { start: Date; end: Date }[], instants: readonly Date[]): number[] {
  let w = 0
  return instants.map((t) => {
    while (w < windows.length && windows[w].end.getTime() <= t.getTime()) w++
    return w
  })
}

/** What pricing a range needs before any usage is read: its windows, the billing periods it reaches, their currency. */
export interface CostPlan {
  windows: UsageWindow[]
  units: PeriodUnit[]
  /** The subscriptions' currency; null when no line prices these meters. */
  currency: string | null
}

/**
 * The billing periods of the customers' subscriptions (every subscription of the environment without customers)
 * that the range reaches, with their usage charges of `q.meters`. One currency per answer: lines in several
 * currencies are a validation_error (docs/decisions.md).
 */
export async function costPlan(deps: Deps, scope: Scope, q: CostQuery): Promise<CostPlan> {
  const windows = queryWindows(q.start, q.end, q.windowSize, q.calendar)
  const contexts = await cachedRecords(deps, scope, 'billing contexts', q.customerIds ?? null, async () => {
    const subs = await subscriptionsOf(deps, scope, q.customerIds)
    return subs.length === 0 ? new Map<string, BillingContext>() : await loadContexts(deps, scope, subs, { usagePricing: true })
  })
  const units = [...contexts.values()].flatMap((ctx) => unitsOf(ctx, q, windows.slice(0, -1).map((w) => w.end)))
  const currencies = [...new Set(units.map((u) => u.ctx.sub.currency))].sort()
  if (currencies.length > 1) {
    throw validationError('external_customer_id', `the usage is billed in several currencies (${currencies.join(', ')}): ask for customers of one currency at a time`)
  }
  return { windows, units, currency: currencies[0] ?? null }
}

/** The customers (external ids) whose usage a plan prices. */
export const pricedCustomers = (plan: CostPlan): Set<string> => new Set(plan.units.flatMap((u) => u.charges.map((c) => c.customer)))

/**
 * The plan's charges of `customers` (external ids) alone, each span new: a read fills its spans' usage, and the
 * plan, kept while an export prices one batch of customers after another, must not hold every batch's.
 */
export function planOf(plan: CostPlan, customers: ReadonlySet<string>): CostPlan {
  const units = plan.units.flatMap((u) => {
    const charges = u.charges.filter((c) => customers.has(c.customer)).map((c) => ({ ...c, spans: c.spans.map(({ start, from, to }) => ({ start, from, to })) }))
    return charges.length === 0 ? [] : [{ ...u, charges }]
  })
  return { ...plan, units }
}

/** The cost of the usage of `q.meters` over the range, per meter and window, as the invoices bill it. */
export async function usageCosts(deps: Deps, scope: Scope, q: CostQuery): Promise<Costs> {
  return planCosts(deps, scope, q, await costPlan(deps, scope, q))
}

/**
 * Windows of charges (each charge's windows in the range) whose usage is read and priced together at most: pricing keeps ~1.3–1.9 KB
 * a window while it runs, so a range of many customers and windows is priced a part at a time (400 customers × 1,000
 * MINUTE windows in one piece: +548 MB peak RSS; the whole environment at its 5,000 windows would not fit a heap).
 */
export const PRICED_WINDOWS_A_BATCH = 20_000

/** The units in order, cut into runs of at most PRICED_WINDOWS_A_BATCH windows of charges (one unit at least). */
const unitBatches = (units: PeriodUnit[]): PeriodUnit[][] =>
  runs(units, (unit) => (unit.instants.length - 1) * unit.charges.length, (_, windows) => windows <= PRICED_WINDOWS_A_BATCH)

/**
 * The cost of a plan's charges (reading their usage), per meter and window, and per customer too with `perCustomer`.
 * Read and priced a batch of units at a time (unitBatches), each span's usage dropped once its unit is priced.
 */
export async function planCosts(deps: Deps, scope: Scope, q: CostQuery, { windows, units, currency }: CostPlan, options: { perCustomer?: boolean } = {}): Promise<Costs> {
  const meters = new Map<string, MeterCost>()
  const costOf = (meterId: string) => {
    let m = meters.get(meterId)
    if (!m) meters.set(meterId, (m = { windows: windows.map(() => ZERO), ...(options.perCustomer && { customers: new Map() }), lines: [], commitment: null, commitmentWindows: null }))
    return m
  }
  const committed = new Set<string>()
  const listed = new Set<string>()
  // Pricing is pure work (~20 µs a window): between units the process's other requests (intake) get the thread.
  const pause = timeSlicer()
  for (const batch of unitBatches(units)) {
    await readUsage(deps, scope, q, batch, windows)
    for (const unit of batch) {
      priceUnit(unit)
      for (const c of unit.charges) for (const span of c.spans) span.cumulative = undefined
      await pause()
    }
  }
  // Commitment figures describe one subscription's period; across several they would add unlike things.
  if (committed.size > 1) for (const m of meters.values()) m.commitment = null
  return { currency, meters }

  function priceUnit(unit: PeriodUnit): void {
    const sub = unit.ctx.sub
    const commitment = sub.commitment_amount === null ? null : subscriptionCommitment(sub, unit.point.arrear, []).commitment
    const priced = periodCosts(
      unit.charges.map((c) => (c.spans.length === 1 ? c.spans[0].cumulative! : unit.instants.map((_, i) => c.spans.reduce((sum, s) => sum.plus(s.cumulative![i]), ZERO)))),
      { currency: sub.currency, lines: unit.charges.map((c) => ({ price: c.row.price as unknown as PriceInput, allowance: allowanceOf(unit.ctx, c.row, c.charge.period.start)?.allowance ?? null })), commitment },
      unit.charges.map((c) => c.charge.period.start >= unit.instants[0]),
      unit.charges.map((c) => (c.resets ? c.spans.map((s) => s.cumulative!) : undefined)),
    )
    const windowAt = windowsAt(windows, unit.instants.slice(0, -1))
    unit.charges.forEach((c, k) => {
      const m = costOf(c.row.meter_id!)
      if (!listed.has(c.row.id)) m.lines.push(c.row)
      listed.add(c.row.id)
      let own = m.customers?.get(c.customer)
      if (m.customers && !own) m.customers.set(c.customer, (own = windows.map(() => ZERO)))
      priced.costs[k].forEach((cost, i) => {
        if (cost.isZero()) return
        m.windows[windowAt[i]] = m.windows[windowAt[i]].plus(cost)
        if (own) own[windowAt[i]] = own[windowAt[i]].plus(cost)
      })
      if (commitment && priced.commitment && priced.commitmentWindows) {
        committed.add(sub.id)
        m.commitment = { amount: commitment.amount, overage_factor: commitment.overage_factor ?? null, true_up_enabled: commitment.true_up_enabled ?? false, ...priced.commitment[k] }
        const cw = (m.commitmentWindows ??= { utilized: windows.map(() => new D(0)), overage: windows.map(() => new D(0)) })
        priced.commitmentWindows.utilized[k].forEach((v, i) => (cw.utilized[windowAt[i]] = cw.utilized[windowAt[i]].plus(v)))
        priced.commitmentWindows.overage[k].forEach((v, i) => (cw.overage[windowAt[i]] = cw.overage[windowAt[i]].plus(v)))
      }
    })
  }
}
