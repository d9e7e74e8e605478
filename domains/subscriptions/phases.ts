// Phases of a subscription: spans with their own line items (a launch discount, a one-time onboarding
// fee). They stay in order and never overlap; a phase's line items follow its dates.
import { notFound } from '../../core/errors.ts'
import type { Actor, Scope } from '../../core/scope.ts'
import { checkPhases } from '../../core/subscriptions.ts'
import type { Deps } from '../../infra/deps.ts'
import type { Db, Tx } from '../../infra/postgres.ts'
import { deleteRecord, requireRecord, updateRecord } from '../../infra/records.ts'
import { page, type Page } from '../../core/list.ts'
import { announce, auditOf, transaction } from '../records/service.ts'
import { assertLive, insertPhases, preparePhases, type PhaseInput } from './service.ts'
import { lockSubscription, requireSubscription } from './read.ts'
import * as store from './store.ts'

export interface PhaseView extends store.PhaseRow {
  line_items: store.LineItemRow[]
}

export interface UpdatePhaseInput {
  start_date?: string
  end_date?: string | null
  metadata?: Record<string, string>
  version?: number
}

async function phaseViews(db: Db, scope: Scope, subscriptionId: string, phases: store.PhaseRow[]): Promise<PhaseView[]> {
  const lines = await store.childrenOf<store.LineItemRow>(db, store.LINE_ITEMS, scope, [subscriptionId])
  return phases.map((p) => ({ ...p, line_items: lines.filter((l) => l.subscription_phase_id === p.id) }))
}

/** The subscription's phases with `changed` put in (or taken out), checked as a whole. */
async function checkWith(tx: Tx, scope: Scope, sub: store.SubscriptionRow, changed: { id?: string; start_date: Date; end_date: Date | null } | undefined, without?: string) {
  const phases: { id?: string; start_date: Date; end_date: Date | null }[] = (await store.childrenOf<store.PhaseRow>(tx, store.PHASES, scope, [sub.id])).filter(
    (p) => p.id !== without && p.id !== changed?.id,
  )
  if (changed) phases.push(changed)
  phases.sort((a, b) => a.start_date.getTime() - b.start_date.getTime())
  checkPhases(phases, sub.start_date, sub.end_date)
}

async function phaseOf(tx: Tx, scope: Scope, subscriptionId: string, phaseId: string): Promise<store.PhaseRow> {
  const phase = await requireRecord<store.PhaseRow>(tx, store.PHASES, scope, phaseId, { published: true })
  if (phase.subscription_id !== subscriptionId) throw notFound('subscription_phase', phaseId)
  return phase
}

export async function listPhases(deps: Deps, actor: Actor, subscriptionId: string): Promise<Page<PhaseView>> {
  await requireSubscription(deps.sql, actor, subscriptionId)
  const phases = await store.childrenOf<store.PhaseRow>(deps.sql, store.PHASES, actor, [subscriptionId])
  const views = await phaseViews(deps.sql, actor, subscriptionId, phases)
  return page(views, views.length, { limit: views.length, offset: 0 })
}

export async function addPhase(deps: Deps, actor: Actor, subscriptionId: string, input: PhaseInput): Promise<PhaseView> {
  const found = await requireSubscription(deps.sql, actor, subscriptionId)
  const [prepared] = await preparePhases(deps.sql, actor, [input], found.currency, () => '')
  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    const sub = await lockSubscription(tx, actor, subscriptionId)
    assertLive(sub)
    await checkWith(tx, actor, sub, prepared)
    const [phase] = await insertPhases(tx, actor, audit, sub, [prepared])
    return (await phaseViews(tx, actor, sub.id, [phase]))[0]
  })
}

export async function updatePhase(deps: Deps, actor: Actor, subscriptionId: string, phaseId: string, input: UpdatePhaseInput): Promise<PhaseView> {
  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    const sub = await lockSubscription(tx, actor, subscriptionId)
    assertLive(sub)
    const phase = await phaseOf(tx, actor, subscriptionId, phaseId)
    const dates = {
      start_date: input.start_date ? new Date(input.start_date) : phase.start_date,
      end_date: input.end_date === undefined ? phase.end_date : input.end_date === null ? null : new Date(input.end_date),
    }
    await checkWith(tx, actor, sub, { id: phaseId, ...dates })
    const row = await updateRecord<store.PhaseRow>(tx, store.PHASES, actor, phaseId, { ...dates, metadata: input.metadata }, { version: input.version, audit })
    await store.setPhaseLines(tx, actor, phaseId, dates, audit)
    await announce(tx, actor, 'subscription.phase.updated', store.PHASES, row)
    return (await phaseViews(tx, actor, sub.id, [row]))[0]
  })
}

/** Deleting a phase removes its line items with it. */
export async function deletePhase(deps: Deps, actor: Actor, subscriptionId: string, phaseId: string): Promise<PhaseView> {
  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    const sub = await lockSubscription(tx, actor, subscriptionId)
    assertLive(sub)
    await phaseOf(tx, actor, subscriptionId, phaseId)
    const row = await deleteRecord<store.PhaseRow>(tx, store.PHASES, actor, phaseId, audit)
    await store.setPhaseLines(tx, actor, phaseId, { status: 'deleted' }, audit)
    await announce(tx, actor, 'subscription.phase.deleted', store.PHASES, row)
    return { ...row, line_items: [] }
  })
}
