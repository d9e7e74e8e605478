// POST /v1/plans/{id}/sync/subscriptions (Flexprice's syncPlanPrices): the plan's live subscriptions move onto
// its current prices. A run is recorded at once and worked through by the worker's plan-sync job, one
// subscription per transaction in id order, with progress on the run and one audit row per subscription
// (what ended, what started, or why it was skipped); a run stopped halfway resumes from its cursor and moves
// nobody twice. Each subscription's plan line items whose price is no longer the plan's end and the plan's new
// prices start, at the end of the current period (default: nothing prorated) or now (prorated by the billing
// engine as proration_behavior says, like a plan change). It stands with the plan changes it resembles.
import type { ProrationBehavior } from '../../../core/billing/cycle.ts'
import { invalidOperation, notFound } from '../../../core/errors.ts'
import { page, type ListRequest } from '../../../core/list.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import { matchPrices } from '../../../core/subscriptions.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Tx } from '../../../infra/postgres.ts'
import { insertRecord, insertRecords, listRecords, requireRecord, updateRecord, type Audit } from '../../../infra/records.ts'
import type { Progress } from '../../../infra/scheduler.ts'
import { requireOffering } from '../../catalog/offerings/kinds.ts'
import type { OfferingRow } from '../../catalog/offerings/service.ts'
import { pricesOf, type PriceRow } from '../../catalog/prices/service.ts'
import { announce, auditOf, transaction } from '../../records/service.ts'
import { toWire } from '../../records/wire.ts'
import { latestPlanLines, lockSubscription, viewOf } from '../../subscriptions/read.ts'
import { assertEndOpen } from '../../subscriptions/service.ts'
import * as store from '../../subscriptions/store.ts'
import { settlementOf } from '../invoices/billing.ts'
import { endOf, startingLines } from './plan-change.ts'
import { CHANGES, countOnPlan, nextOnPlan, openRuns, recorded, RUNS, type ChangeRow, type LineRef, type RunRow } from './plan-sync-store.ts'
import { pendingOf } from './schedules-store.ts'

export interface SyncInput {
  change_at?: 'immediate' | 'end_of_period'
  proration_behavior?: 'create_prorations' | 'none'
}

/** A run as answered: Flexprice's workflow fields (workflow_id, run_id, message) and the run's progress. */
function runView(run: RunRow) {
  const { run_status, status: _record, tenant_id: _t, environment_id: _e, cursor: _c, ...rest } = run
  return toWire({
    ...rest,
    status: run_status,
    workflow_id: run.id,
    run_id: run.id,
    message: `plan sync ${run.id} of plan ${run.plan_id}: ${run.processed} of ${run.total} subscriptions done (${run.moved} moved, ${run.skipped} skipped, ${run.failed} failed)`,
    progress: { processed: run.processed, total: run.total, moved: run.moved, skipped: run.skipped, failed: run.failed },
  })
}

/** Records a run for the plan's live subscriptions; one run of a plan at a time. */
export async function startPlanSync(deps: Deps, actor: Actor, planId: string, input: SyncInput) {
  const plan = await requireOffering(deps.sql, actor, 'PLAN', planId)
  return transaction(deps, async (tx) => {
    const [open] = await tx`SELECT id FROM plan_sync_runs WHERE tenant_id = ${actor.tenantId} AND environment_id = ${actor.environmentId}
      AND plan_id = ${plan.id} AND run_status IN ('pending', 'running') AND status = 'published' FOR UPDATE`
    if (open) throw invalidOperation(`plan ${plan.id} is being synced by ${open.id}; wait for it to finish`, { run_id: open.id })
    const run = await insertRecord<RunRow>(tx, RUNS, actor, auditOf(deps, actor), {
      plan_id: plan.id,
      change_at: input.change_at ?? 'end_of_period',
      proration_behavior: input.proration_behavior ?? 'create_prorations',
      run_status: 'pending',
      total: await countOnPlan(tx, actor, plan.id),
    })
    return runView(run)
  })
}

async function requireRun(deps: Deps, actor: Actor, planId: string, runId: string): Promise<RunRow> {
  const run = await requireRecord<RunRow>(deps.sql, RUNS, actor, runId, { published: true })
  if (run.plan_id !== planId) throw notFound('plan sync run of plan', runId)
  return run
}

export const getPlanSync = async (deps: Deps, actor: Actor, planId: string, runId: string) => runView(await requireRun(deps, actor, planId, runId))

/** The run's audit: one row per subscription, in the order it was done. */
export async function planSyncChanges(deps: Deps, actor: Actor, planId: string, runId: string, { params }: ListRequest) {
  await requireRun(deps, actor, planId, runId)
  const { rows, total } = await listRecords<ChangeRow>(deps.sql, CHANGES, actor, { ...params, sort: 'created_at', order: 'asc' }, [deps.sql`run_id = ${runId}`])
  return toWire(page(rows, total, params))
}

const refs = (lines: { id: string; price_id: string; quantity: { toFixed(): string } }[]): LineRef[] => lines.map((l) => ({ line_item_id: l.id, price_id: l.price_id, quantity: l.quantity.toFixed() }))

type Outcome = Pick<ChangeRow, 'outcome' | 'reason' | 'effective_date' | 'ended' | 'started'>

/** Moves one subscription onto the plan's current prices, in the caller's transaction; what it did, for the audit. */
async function syncOne(tx: Tx, scope: Scope, audit: Audit, run: RunRow, plan: OfferingRow, prices: PriceRow[], id: string): Promise<Outcome> {
  const skip = (reason: string): Outcome => ({ outcome: 'skipped', reason, effective_date: null, ended: [], started: [] })
  const sub = await lockSubscription(tx, scope, id)
  if (sub.plan_id !== run.plan_id || sub.subscription_status === 'cancelled') return skip('no longer on the plan')
  const now = audit.at
  const at = run.change_at === 'immediate' ? now : sub.current_period_end
  if (sub.cancel_at && sub.cancel_at <= at) return skip(`cancelled from ${sub.cancel_at.toISOString()}`)
  const pending = await pendingOf(tx, scope, sub.id)
  if (pending) return skip(`a plan change is scheduled (${pending.id})`)
  const latest = latestPlanLines({ plan_id: sub.plan_id, line_items: await store.childrenOf<store.LineItemRow>(tx, store.LINE_ITEMS, scope, [sub.id]) })
  const current = matchPrices(prices, sub.currency, sub.billing_period, sub.billing_period_count)
  const ids = new Set(current.map((p) => p.id))
  const used = new Set(latest.map((l) => l.price_id))
  const ending = latest.filter((l) => !ids.has(l.price_id) && (l.end_date === null || l.end_date > at))
  const adding = current.filter((p) => !used.has(p.id))
  if (ending.length === 0 && adding.length === 0) return skip('already on the plan\'s prices')
  for (const line of ending) assertEndOpen(line, now, 'plan_id')
  const behavior = run.change_at === 'immediate' ? settlementOf(sub, run.proration_behavior as ProrationBehavior, at, now) : null
  for (const line of ending) await updateRecord(tx, store.LINE_ITEMS, scope, line.id, { end_date: line.start_date > at ? line.start_date : at, end_proration_behavior: behavior }, { audit })
  const started = await insertRecords<store.LineItemRow>(tx, store.LINE_ITEMS, scope, audit, startingLines(sub, plan, adding, ending, at, endOf(sub, latest), behavior))
  const outcome: Outcome = { outcome: 'moved', reason: null, effective_date: at, ended: refs(ending), started: refs(started) }
  const announced = { ...(await viewOf(tx, scope, sub)), plan_sync: toWire({ run_id: run.id, ...outcome }) }
  await announce(tx, scope, 'subscription.updated', store.SUBSCRIPTIONS, announced)
  return outcome
}

const scopeOf = (row: RunRow): Scope => ({ tenantId: row.tenant_id, environmentId: row.environment_id })

/** Records one subscription's outcome and moves the run's cursor past it, in the transaction that did it. */
async function advance(tx: Tx, audit: Audit, run: RunRow, subscriptionId: string, outcome: Outcome): Promise<RunRow> {
  await insertRecord(tx, CHANGES, scopeOf(run), audit, { run_id: run.id, subscription_id: subscriptionId, ...outcome })
  const counts = { processed: run.processed + 1, [outcome.outcome]: run[outcome.outcome] + 1, cursor: subscriptionId }
  return updateRecord<RunRow>(tx, RUNS, scopeOf(run), run.id, counts, { audit })
}

/** Works one run through to its end: each subscription once, its cursor saved with each. */
async function work(deps: Deps, run: RunRow, audit: Audit, progress: Progress): Promise<RunRow> {
  const scope = scopeOf(run)
  const plan = await requireOffering(deps.sql, scope, 'PLAN', run.plan_id, { anyStatus: true })
  const prices = await pricesOf(deps.sql, scope, [plan.id])
  if (run.run_status === 'pending') run = await transaction(deps, (tx) => updateRecord<RunRow>(tx, RUNS, scope, run.id, { run_status: 'running', started_at: audit.at }, { audit }))
  for (;;) {
    const sub = await nextOnPlan(deps.sql, scope, run.plan_id, run.cursor)
    if (!sub) break
    const current = run
    try {
      run = await transaction(deps, async (tx) => {
        if (await recorded(tx, current.id, sub.id)) return updateRecord<RunRow>(tx, RUNS, scope, current.id, { cursor: sub.id }, { audit })
        return advance(tx, audit, current, sub.id, await syncOne(tx, scope, audit, current, plan, prices, sub.id))
      })
    } catch (err) {
      deps.logger.error({ err, run: current.id, subscription: sub.id }, 'plan sync of a subscription failed')
      const failed: Outcome = { outcome: 'failed', reason: (err as Error).message, effective_date: null, ended: [], started: [] }
      run = await transaction(deps, (tx) => advance(tx, audit, current, sub.id, failed))
    }
    progress(run.processed, run.total, `plan sync ${run.id}`)
  }
  return transaction(deps, (tx) => updateRecord<RunRow>(tx, RUNS, scope, run.id, { run_status: 'completed', finished_at: audit.at }, { audit }))
}

/** The plan-sync job: every open run, oldest first, resumed where it stopped. */
export async function processPlanSyncs(deps: Deps, progress: Progress = () => {}, now: Date = deps.clock.now()): Promise<{ runs: number; moved: number; skipped: number; failed: number }> {
  const audit: Audit = { by: 'system', at: now }
  const summary = { runs: 0, moved: 0, skipped: 0, failed: 0 }
  for (const open of await openRuns(deps.sql)) {
    const before = { moved: open.moved, skipped: open.skipped, failed: open.failed }
    const done = await work(deps, open, audit, progress)
    summary.runs++
    summary.moved += done.moved - before.moved
    summary.skipped += done.skipped - before.skipped
    summary.failed += done.failed - before.failed
  }
  return summary
}
