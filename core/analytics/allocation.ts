// Money in usage analytics, pure: a line's cost split over groups in proportion to their usage, and the cost of each
// window of a time series, both adding up exactly to what the invoice bills.
//
// - allocateByUsage: largest remainder. The total is rounded to the currency's minor unit; each group gets the floor
//   of its exact share in minor units, and the minor units left over go one each to the groups with the largest
//   remainders (ties: the larger usage, then the earlier group). The parts add up to the total, and no part is more
//   than one minor unit away from its exact share.
// - incrementalCosts: the cost of a window is cost(usage up to its end) − cost(usage up to its start), where cost is
//   the amount the invoice's usage line would bill for that quantity (core/billing computeInvoice: allowance, min
//   quantity, price model, the line's own commitment; rounded once). The points add up to the line's amount.
import { D, minorUnits, roundMoney, ZERO, type Decimal } from '../money.ts'
import { commitLines, computeInvoice } from '../billing/invoice.ts'
import type { Allowance } from '../billing/allowance.ts'
import type { Commitment } from '../billing/commitment.ts'
import type { AggregationType } from '../meters.ts'
import type { PriceInput } from '../pricing/index.ts'

/** A non-negative decimal as a whole number of 10^-scale (exact when scale is at least its decimal places). */
const scaled = (d: Decimal, scale: number): bigint => BigInt(d.toFixed(scale).replace('.', ''))
const compare = (a: bigint, b: bigint): number => (a < b ? -1 : a > b ? 1 : 0)

/**
 * Splits `total` over groups in proportion to their non-negative `usages` (largest remainder, see above). With no
 * usage at all the groups share equally. A negative total is split as its opposite and negated. In whole numbers
 * (BigInt: usages scaled to their most decimal places, the total in minor units), so every remainder is exact;
 * analytics splits every window's cost over its groups, and decimal.js at 200 digits took ~27 µs a window.
 */
export function allocateByUsage(total: Decimal, usages: readonly Decimal[], currency: string): Decimal[] {
  const places = minorUnits(currency)
  const rounded = roundMoney(total, currency)
  if (usages.length === 0) {
    if (!rounded.isZero()) throw new RangeError('allocateByUsage: a non-zero total needs at least one group')
    return []
  }
  for (const u of usages) if (!u.isFinite() || u.isNeg()) throw new RangeError(`allocateByUsage: usage must be a non-negative number, got ${u.toString()}`)
  if (rounded.isZero()) return usages.map(() => new D(0))
  const units = scaled(rounded.abs(), places)
  // A loop, not Math.max(...): a window may split over more groups than a call takes arguments.
  const scale = usages.reduce((most, u) => Math.max(most, u.decimalPlaces()), 0)
  const weights = usages.map((u) => scaled(u, scale))
  const w = weights.every((x) => x === 0n) ? weights.map(() => 1n) : weights
  const sum = w.reduce((a, b) => a + b, 0n)
  const shares = w.map((wi, i) => {
    const numerator = units * wi
    const floor = numerator / sum
    return { i, floor, remainder: numerator - floor * sum, usage: wi }
  })
  let left = units - shares.reduce((a, s) => a + s.floor, 0n)
  const order = [...shares].sort((a, b) => compare(b.remainder, a.remainder) || compare(b.usage, a.usage) || a.i - b.i)
  const parts = shares.map((s) => s.floor)
  for (const s of order) {
    if (left <= 0n) break
    parts[s.i] += 1n
    left--
  }
  return parts.map((p) => {
    if (p === 0n) return new D(0)
    const digits = p.toString().padStart(places + 1, '0')
    const amount = new D(places === 0 ? digits : `${digits.slice(0, -places)}.${digits.slice(-places)}`)
    return rounded.isNeg() ? amount.neg() : amount
  })
}

/** How one usage line is priced: as the invoice prices it. */
export interface UsageLinePricing {
  currency: string
  price: PriceInput
  allowance?: Allowance | null
  commitment?: Commitment | null
}

/**
 * What the invoice's usage line bills for `quantity`: the same computeInvoice an invoice runs, on that one line
 * (allowance, min_quantity, price model, the line's own commitment), rounded once to the minor unit. A true-up line
 * the commitment may add is a line of its own and not part of it.
 */
export function usageLineCost(quantity: Decimal, pricing: UsageLinePricing): Decimal {
  const invoice = computeInvoice({
    currency: pricing.currency,
    invoice_date: new Date(0),
    lines: [{ price_type: 'USAGE', quantity: new D(quantity), price: pricing.price, allowance: pricing.allowance ?? null, commitment: pricing.commitment ?? null }],
  })
  return invoice.line_items[0].amount
}

/**
 * The cost of each window from the usage up to each window's end (`cumulative`, in order, from the line's start):
 * cost(cumulative[i]) − cost(cumulative[i − 1]), the first window's cost(cumulative[0]) − nothing. The points add up
 * to cost(cumulative[last]), the line's amount when the last window ends the line. A minimum (min_quantity) is
 * billed in the first window; under VOLUME tiers a window that crosses into a cheaper tier costs less than nothing,
 * as the whole quantity is repriced.
 */
export function incrementalCosts(cumulative: readonly Decimal[], pricing: UsageLinePricing): Decimal[] {
  let before = new D(0)
  return cumulative.map((q) => {
    const cost = usageLineCost(q, pricing)
    const point = cost.minus(before)
    before = cost
    return point.isZero() ? new D(0) : point
  })
}

export interface WindowUsage {
  eventCount: Decimal
  usage: Decimal
}

/**
 * Usage up to each window's end from the windows' own values, where that follows from them: a running sum for COUNT,
 * SUM and SUM_WITH_MULTIPLIER, and for any aggregation of a meter with a bucket_size (its value is a sum of
 * buckets); a running maximum or minimum of the windows with events for MAX and MIN; the last window with events for
 * LATEST. `opening` is the usage before the first window (reset_usage NEVER), combined the same way. COUNT_UNIQUE,
 * AVG and WEIGHTED_SUM do not follow from window values: read them up to each window's end from the store. A
 * group_by meter's value is a sum over its groups: take each group's windows here and add the results.
 */
export function cumulativeUsage(type: AggregationType, windows: readonly WindowUsage[], options: { bucketed?: boolean; opening?: Decimal } = {}): Decimal[] {
  const additive = options.bucketed || type === 'COUNT' || type === 'SUM' || type === 'SUM_WITH_MULTIPLIER'
  let acc: Decimal | undefined = options.opening === undefined ? undefined : new D(options.opening)
  const combine = (a: Decimal | undefined, v: Decimal): Decimal => {
    if (additive) return (a ?? new D(0)).plus(v)
    if (type === 'MAX') return a === undefined ? v : D.max(a, v)
    if (type === 'MIN') return a === undefined ? v : D.min(a, v)
    if (type === 'LATEST') return v
    throw new RangeError(`cumulativeUsage: ${type} up to each window's end does not follow from the windows; read it from the store`)
  }
  if (!additive && type !== 'MAX' && type !== 'MIN' && type !== 'LATEST') combine(undefined, new D(0))
  return windows.map((w) => {
    // plus rounds to D's precision itself: an additive window's usage needs no copy first.
    if (additive || !w.eventCount.isZero()) acc = combine(acc, additive ? w.usage : new D(w.usage))
    return acc ?? ZERO
  })
}

/** The usage lines one invoice bills together for a billing period: each line's pricing, and a commitment shared by all. */
export interface PeriodPricing {
  currency: string
  lines: { price: PriceInput; allowance?: Allowance | null }[]
  /** The subscription's commitment over these lines in this order (commitment_amount, overage_factor, true-up). */
  commitment?: Commitment | null
}

export interface PeriodCosts {
  /** [line][window]: what each window adds to each line's amount. */
  costs: Decimal[][]
  /** What each line's amount is at the last instant, with its commitment_info at that instant (null without a commitment). */
  amounts: Decimal[]
  commitment: { utilized: Decimal; overage: Decimal }[] | null
  /** With a commitment, [line][window]: what each window adds to each line's utilized and overage amounts (they add up to `costs`). */
  commitmentWindows: { utilized: Decimal[][]; overage: Decimal[][] } | null
}

/**
 * incrementalCosts for the usage lines of one billing period together, as the invoice prices them: at each instant
 * every line has its usage up to that instant (`cumulative[line][instant]`; instant 0 is where the read starts, the
 * period's start or later), the invoice's line pricing (computeInvoice's commitLines) prices them all with the shared
 * commitment (a line's overage depends on what the lines before it used), and a window costs each line's amount at its
 * end minus the amount at its start. The windows of a line add up to its amount at the last instant minus the amount
 * at instant 0 (the line's amount on the invoice when the read spans the whole period). The true-up line is no usage
 * line: left out.
 * A line billed from instant 0 on (`fresh[line]`: its charge starts there) had no amount before it, so a minimum
 * (min_quantity) lands in its first window, as in incrementalCosts. A line whose allowance resets inside the period
 * (a DAILY limit) has `resetUsage[line][window][instant]`: each reset window's own usage up to each instant, given
 * to the pricing as the invoice's `usage_windows` (one allowance per window); its `cumulative` is their sum.
 */
export function periodCosts(
  cumulative: readonly (readonly Decimal[])[],
  pricing: PeriodPricing,
  fresh: readonly boolean[] = [],
  resetUsage: readonly ((readonly (readonly Decimal[])[]) | undefined)[] = [],
): PeriodCosts {
  const instants = cumulative[0]?.length ?? 0
  const lines = pricing.lines.map((l) => ({ price_type: 'USAGE' as const, price: l.price, allowance: l.allowance ?? null }))
  const commitments = pricing.commitment ? [{ commitment: pricing.commitment, line_indexes: lines.map((_, k) => k), display_name: 'true-up' }] : []
  const same = (i: number) => cumulative.every((c, k) => c[i].eq(c[i - 1]) && (resetUsage[k]?.every((w) => w[i].eq(w[i - 1])) ?? true))
  /** Each line's amount, commitment utilized and overage at instant i: what computeInvoice bills each line (its commitLines). */
  // Without a commitment a line's utilized and overage amounts are 0: only its amount is followed.
  const values = pricing.commitment ? 3 : 1
  const at = (i: number): Decimal[][] =>
    commitLines({
      currency: pricing.currency,
      // Decimals are immutable: the usage is passed as it is, not copied.
      lines: lines.map((l, k) => ({ ...l, quantity: cumulative[k][i], ...(resetUsage[k] && { usage_windows: resetUsage[k].map((w) => w[i]) }) })),
      commitments,
    })
      .slice(0, lines.length)
      .map((l) => (values === 1 ? [l.amount] : [l.amount, l.commitment_info?.computed_commitment_utilized_amount ?? ZERO, l.commitment_info?.computed_overage_amount ?? ZERO]))
  // [value][line][window], each window's value at its end minus at its start (nothing before a fresh line). An instant
  // whose usage is the one before's is priced as it: a window without usage costs nothing without pricing it again.
  const windows: Decimal[][][] = Array.from({ length: values }, () => lines.map(() => []))
  let before = instants > 0 ? at(0) : []
  for (let i = 1; i < instants; i++) {
    const end = same(i) ? before : at(i)
    end.forEach((values, k) =>
      values.forEach((v, x) => {
        const d = v.minus(i === 1 && fresh[k] ? ZERO : before[k][x])
        windows[x][k].push(d.isZero() ? ZERO : d)
      }),
    )
    before = end
  }
  return {
    costs: windows[0],
    amounts: lines.map((_, k) => before[k]?.[0] ?? ZERO),
    commitment: pricing.commitment ? lines.map((_, k) => ({ utilized: before[k]?.[1] ?? ZERO, overage: before[k]?.[2] ?? ZERO })) : null,
    commitmentWindows: pricing.commitment ? { utilized: windows[1], overage: windows[2] } : null,
  }
}
