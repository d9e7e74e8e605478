// Running a pricing simulation: every subscription in the simulation's currency (of the customers asked for) is
// billed twice by the billing engine for each of its billing points dated in [start_time, end_time) and due by
// now — once as its line items bill today, once with the candidate's prices — over the same stored usage, read
// once. A page of subscriptions at a time: memory stays flat in the number of customers; each page's results
// are stored, and the totals and distribution are added up from the stored results, a page of customers at a time.
import { billingPoints, type BillingPoint } from '../../../core/billing/cycle.ts'
import type { CouponUse } from '../../../core/billing/coupons.ts'
import { addBilled, billedByPrice, BUCKETS, bucketOf, differencePercent, type SimulatedLine } from '../../../core/billing/simulation.ts'
import { inParallel, timeSlicer } from '../../../core/concurrency.ts'
import { D, sumMoney } from '../../../core/money.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import { listSubscriptions, type SubscriptionRow } from '../../subscriptions/read.ts'
import { assemble } from '../invoices/assemble.ts'
import { billedThroughParent, cycleOf, loadContexts, pointSpec, usageRequests, type BillingContext, type SpecOptions } from '../invoices/billing.ts'
import { prefetchUsage } from '../invoices/usage-batch.ts'
import { candidateContext, candidateWindows, keepsLines, prepareCandidate, type Candidate, type CandidateInput } from './candidate.ts'
import * as store from './store.ts'

/** Subscriptions simulated per page. */
const PAGE = 500
/** Subscriptions computed at once: usage reads of one overlap the pure work of another. */
const CONCURRENCY = 8
/** A running simulation with no sign of life for this long was left by a stopped process: it is started again. */
const STALE_MS = 2 * 60_000

const systemActor = (scope: Scope): Actor => ({ ...scope, keyId: 'system', roles: ['admin'] })

/** The billing points dated in [start, end) and due by `now`. */
function pointsIn(sub: SubscriptionRow, start: Date, end: Date, now: Date): BillingPoint[] {
  const out: BillingPoint[] = []
  for (const p of billingPoints(cycleOf(sub))) {
    if (p.at >= end || p.at > now) break
    if (p.at >= start) out.push(p)
  }
  return out
}

interface Simulated {
  lines: Map<string | null, SimulatedLine>
  invoices: number
}

/**
 * One subscription's points billed as today and as the candidate. Both bills use the coupon uses its stored
 * invoice was computed with (a coupon's period counts the invoices it discounted before), else those the engine
 * gives now, counting the points simulated before it as a catch-up does; a new plan's lines take no line coupon.
 * Usage is measured over the whole period (a threshold invoice's cut is not made again).
 */
async function simulateSubscription(deps: Deps, scope: Scope, current: BillingContext, candidate: BillingContext, points: BillingPoint[], opts: { usage: SpecOptions['usage']; billed: Map<string, CouponUse[]>; keepLines: boolean }): Promise<Simulated> {
  const lines = new Map<string | null, SimulatedLine>()
  const redeemed = new Map<string, number>()
  for (const point of points) {
    const spec = { usage: opts.usage, usageFrom: point.arrear?.start, redeemed }
    const now = await pointSpec(deps, scope, current, point, spec)
    const stored = opts.billed.get(`${current.sub.id}:${point.sequence}`)
    const coupons = stored ?? now.coupons
    const billedNow = assemble({ ...now, coupons }).computed
    // A subscription the candidate does not touch bills the same: computed once.
    const billedNext = candidate === current ? billedNow : assemble({ ...(await pointSpec(deps, scope, candidate, point, spec)), coupons: opts.keepLines ? coupons : coupons.filter((c) => c.line_index == null) }).computed
    addBilled(lines, 'current', billedByPrice(billedNow))
    addBilled(lines, 'candidate', billedByPrice(billedNext))
    if (!stored) for (const a of billedNow.coupon_applications) if (a.coupon_association_id && a.discounted_amount.gt(0)) redeemed.set(a.coupon_association_id, (redeemed.get(a.coupon_association_id) ?? 0) + 1)
  }
  return { lines, invoices: points.length }
}

interface Run {
  sim: store.SimulationRow
  scope: Scope
  candidate: Candidate
  windows: BillingContext['prices']
  now: Date
}

async function simulatePage(deps: Deps, run: Run, subs: SubscriptionRow[]): Promise<store.ResultRow[]> {
  const { sim, scope, now } = run
  const owners = subs.filter((s) => !billedThroughParent(s) && s.subscription_status !== 'draft')
  const points = new Map(owners.map((s) => [s.id, pointsIn(s, sim.start_time, sim.end_time, now)]))
  const due = owners.filter((s) => points.get(s.id)!.length > 0)
  if (due.length === 0) return []
  const contexts = await loadContexts(deps, scope, due)
  const candidates = new Map(due.map((s) => [s.id, candidateContext(contexts.get(s.id)!, run.candidate, run.windows)]))
  // Usage of every point for both bills, a meter and window at a time.
  const requests = due.flatMap((s) => points.get(s.id)!.flatMap((p) => [...usageRequests(contexts.get(s.id)!, p), ...(candidates.get(s.id) === contexts.get(s.id) ? [] : usageRequests(candidates.get(s.id)!, p))]))
  const usage = await prefetchUsage(deps, scope, requests)
  const billed = await store.billedCouponUses(deps.sql, scope, due.filter((s) => contexts.get(s.id)!.coupons.length > 0).map((s) => s.id))
  const pause = timeSlicer()
  const rows: store.ResultRow[] = []
  await inParallel(due, CONCURRENCY, async (sub) => {
    const result = await simulateSubscription(deps, scope, contexts.get(sub.id)!, candidates.get(sub.id)!, points.get(sub.id)!, { usage, billed, keepLines: keepsLines(run.candidate) })
    const lines = [...result.lines.values()]
    rows.push({
      simulation_id: sim.id,
      subscription_id: sub.id,
      customer_id: sub.invoicing_customer_id ?? sub.customer_id,
      current: sumMoney(lines.map((l) => l.current)),
      candidate: sumMoney(lines.map((l) => l.candidate)),
      invoices: result.invoices,
      lines: lines.map((l) => ({ price_id: l.price_id, current: l.current.toFixed(), candidate: l.candidate.toFixed() })),
    })
    await pause()
  })
  return rows
}

/** The simulation's subscriptions, a page at a time: its currency, of its customers when it names them. */
const subscriptionPage = (deps: Deps, run: Run, offset: number) =>
  listSubscriptions(deps, systemActor(run.scope), {
    params: { limit: PAGE, offset, sort: 'created_at', order: 'asc', status: 'published', metadata: {} },
    filters: { currency: run.sim.currency, ...(run.sim.customer_ids && { customer_ids: run.sim.customer_ids }) },
  })

/** Totals and distribution added up from the stored results, a page of customers at a time. */
async function summarize(deps: Deps, id: string) {
  const buckets = BUCKETS.map(() => ({ customers: 0, current: new D(0), candidate: new D(0) }))
  let current = new D(0)
  let candidate = new D(0)
  let customers = 0
  let invoices = 0
  for (let after = ''; ; ) {
    const page = await store.customersAfter(deps.sql, id, after, 1000, { lines: false })
    if (page.length === 0) break
    after = page[page.length - 1].customer_id
    for (const c of page) {
      const b = buckets[bucketOf(c.current, c.candidate)]
      b.customers++
      b.current = b.current.plus(c.current)
      b.candidate = b.candidate.plus(c.candidate)
      current = current.plus(c.current)
      candidate = candidate.plus(c.candidate)
      customers++
      invoices += c.invoices
    }
  }
  const totals = { current, candidate, difference: candidate.minus(current), difference_percent: differencePercent(current, candidate), customers, invoices }
  const distribution = BUCKETS.map((b, i) => ({ from_percent: b.from, to_percent: b.to, ...buckets[i], difference: buckets[i].candidate.minus(buckets[i].current) }))
  return { totals, distribution }
}

/** Runs the simulation if it is waiting (or was left running by a stopped process); any failure is recorded on it. */
export async function runSimulation(deps: Deps, id: string): Promise<void> {
  const started = deps.clock.now()
  const sim = await store.claim(deps.sql, id, started, new Date(started.getTime() - STALE_MS))
  if (!sim) return
  try {
    const scope = { tenantId: sim.tenant_id, environmentId: sim.environment_id }
    const candidate = await prepareCandidate(deps.sql, scope, sim.candidate as unknown as CandidateInput)
    const run: Run = { sim, scope, candidate, windows: await candidateWindows(deps.sql, scope, candidate), now: started }
    await store.clearResults(deps.sql, id)
    let processed = 0
    for (let offset = 0; ; offset += PAGE) {
      const page = await subscriptionPage(deps, run, offset)
      await store.insertResults(deps.sql, await simulatePage(deps, run, page.items))
      processed += page.items.length
      await store.recordProgress(deps.sql, id, processed, page.pagination.total, deps.clock.now())
      if (page.items.length < PAGE) break
    }
    const { totals, distribution } = await summarize(deps, id)
    await store.complete(deps.sql, id, totals as never, distribution as never, deps.clock.now())
  } catch (err) {
    deps.logger.error({ err, simulation_id: id }, 'pricing simulation failed')
    await store.fail(deps.sql, id, (err as Error).message, deps.clock.now())
  }
}

/** Worker job: simulations still waiting (their process stopped before starting them) or left running by a stopped process. */
export async function runOpenSimulations(deps: Deps): Promise<{ simulations: number }> {
  const ids = await store.openSimulations(deps.sql, new Date(deps.clock.now().getTime() - STALE_MS), 10)
  for (const id of ids) await runSimulation(deps, id)
  return { simulations: ids.length }
}
