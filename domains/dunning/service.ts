// Dunning (docs/invoicing.md "Dunning"): each environment's schedule of steps after an invoice's due date, run by the
// dunning job. A finalized invoice still owing enters the schedule once dunning is on; each due step runs once (its
// step-run row is the claim) — reminder email through communications, a payment retry through the connected
// provider, and on the last step one final action — then the invoice moves to its next step, announced as
// invoice.dunning.step. A payment in full at any point ends it (invoicing's dunning-state.ts, in the payment's
// transaction), and so does voiding it.
import { checkSteps, DUNNING_PRESETS, nextStep, stepAt, stepsDue, type DunningAction, type DunningStep } from '../../core/dunning.ts'
import { AppError, validationError } from '../../core/errors.ts'
import { DAY_MS } from '../../core/periods.ts'
import type { Actor, Scope } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import { recordEvent } from '../../infra/outbox.ts'
import type { Progress } from '../../infra/scheduler.ts'
import { sendDunningReminder } from '../communications/service.ts'
import { retryProviderPayment } from '../integrations/service.ts'
import { cancelSubscription } from '../invoicing/changes/cancel.ts'
import { resolveDunning, setDunningState } from '../invoicing/invoices/dunning-state.ts'
import { lockInvoice, requireInvoice, type InvoiceRow } from '../invoicing/invoices/read.ts'
import { systemActor, transaction } from '../records/service.ts'
import { inReach } from '../customers/reach.ts'
import { toWire } from '../records/wire.ts'
import { suspendEntitlements } from '../subscriptions/suspension.ts'
import * as store from './store.ts'

const BATCH = 200

// ---- settings -----------------------------------------------------------------------------------------

export interface SettingsView {
  enabled: boolean
  steps: DunningStep[]
  enabled_at: Date | null
  updated_at: Date | null
}

export interface SettingsInput {
  enabled?: boolean
  /** One of DUNNING_PRESETS, copied into steps; not with steps. */
  preset?: keyof typeof DUNNING_PRESETS
  steps?: DunningStep[]
}

const settingsOf = async (deps: Deps, scope: Scope): Promise<SettingsView> =>
  (await store.settingsOf(deps.sql, scope)) ?? { enabled: false, steps: [], enabled_at: null, updated_at: null }

export const getSettings = (deps: Deps, actor: Actor): Promise<SettingsView> => settingsOf(deps, actor)

export const presets = (): typeof DUNNING_PRESETS => DUNNING_PRESETS

/** Dunning off by default; turning it on needs steps, and sweeps in only invoices due from that moment. */
export async function updateSettings(deps: Deps, actor: Actor, input: SettingsInput): Promise<SettingsView> {
  if (input.preset && input.steps) throw validationError('preset', 'give a preset or steps, not both')
  const current = await settingsOf(deps, actor)
  const steps = input.preset ? DUNNING_PRESETS[input.preset] : input.steps ? checkSteps(input.steps) : current.steps
  const enabled = input.enabled ?? current.enabled
  if (enabled && steps.length === 0) throw validationError('steps', 'dunning needs at least one step to be enabled (or a preset)')
  const now = deps.clock.now()
  const enabled_at = enabled ? (current.enabled ? current.enabled_at : now) : null
  await store.saveSettings(deps.sql, actor, { enabled, steps, enabled_at }, now, actor.keyId)
  return settingsOf(deps, actor)
}

// ---- an invoice's dunning -------------------------------------------------------------------------------

export interface InvoiceDunning {
  invoice_id: string
  dunning_status: InvoiceRow['dunning_status']
  next_step: (DunningStep & { step: number; at: Date }) | null
  steps_run: store.StepRunRow[]
}

export async function invoiceDunning(deps: Deps, actor: Actor, invoiceId: string): Promise<InvoiceDunning> {
  const invoice = await requireInvoice(deps.sql, actor, invoiceId)
  const { steps } = await settingsOf(deps, actor)
  const index = invoice.dunning_next_step
  const next = invoice.dunning_status === 'active' && index !== null && steps[index] && invoice.due_date ? { step: index, ...steps[index], at: stepAt(invoice.due_date, steps[index]) } : null
  return { invoice_id: invoice.id, dunning_status: invoice.dunning_status, next_step: next, steps_run: await store.runsOf(deps.sql, actor, invoiceId) }
}

// ---- the job ------------------------------------------------------------------------------------------

const audit = (at: Date) => ({ by: 'dunning', at })

/** An invoice enters its environment's schedule at step 0 (shown on the invoice from then on). */
async function enter(deps: Deps, scope: Scope, id: string, steps: DunningStep[]): Promise<void> {
  await transaction(deps, async (tx) => {
    const invoice = await lockInvoice(tx, scope, id)
    if (invoice.dunning_status !== null || !invoice.due_date) return
    const next = nextStep(invoice.due_date, steps, 0)!
    await setDunningState(tx, scope, audit(deps.clock.now()), id, { dunning_status: 'active', dunning_next_step: next.index, dunning_next_step_at: next.at })
  })
}

/** One action of a step: what it did, as a short outcome (a failure is an outcome too, so the others still run). */
async function act(deps: Deps, scope: Scope, invoice: InvoiceRow, action: DunningAction, step: number, now: Date): Promise<string> {
  const subscription = invoice.subscription_id
  try {
    switch (action) {
      case 'reminder_email': {
        const days = Math.floor((now.getTime() - invoice.due_date!.getTime()) / DAY_MS)
        return (await sendDunningReminder(deps, scope, invoice.id, step, days)) ?? 'skipped: dunning reminders are turned off (communications settings)'
      }
      case 'retry_payment':
        return await retryProviderPayment(deps, scope, invoice.id, `meterbill-${invoice.id}-dunning-${step}`)
      case 'mark_uncollectible':
        return 'marked uncollectible'
      case 'cancel_subscription':
        if (!subscription) return 'skipped: not a subscription invoice'
        await cancelSubscription(deps, systemActor(scope), subscription, { cancellation_type: 'end_of_period', reason: `dunning: invoice ${invoice.invoice_number ?? invoice.id} unpaid` })
        return `subscription ${subscription} cancels at the end of its period`
      case 'suspend_entitlements':
        if (!subscription) return 'skipped: not a subscription invoice'
        // Under the invoice's lock, so a payment committing now either comes first (nothing suspended) or lifts it.
        return await transaction(deps, async (tx) => {
          const locked = await lockInvoice(tx, scope, invoice.id)
          if (locked.amount_remaining.isZero()) return 'skipped: paid meanwhile'
          const suspended = await suspendEntitlements(tx, scope, subscription, invoice.id, now)
          return suspended ? `subscription ${subscription} entitlements suspended until paid` : `subscription ${subscription} was already suspended`
        })
    }
  } catch (err) {
    if (!(err instanceof AppError)) deps.logger.error({ err, invoice_id: invoice.id, action }, 'dunning action failed')
    return `failed: ${(err as Error).message}`
  }
}

type Outcome = 'resolved' | 'ran' | 'rescheduled'

async function advance(deps: Deps, scope: Scope, id: string, steps: DunningStep[], now: Date): Promise<Outcome> {
  const invoice = await requireInvoice(deps.sql, scope, id)
  if (invoice.invoice_status !== 'FINALIZED' || invoice.amount_remaining.isZero()) {
    await transaction(deps, async (tx) => resolveDunning(tx, scope, audit(now), await lockInvoice(tx, scope, id)))
    return 'resolved'
  }
  const from = invoice.dunning_next_step ?? 0
  const { run, skipped } = stepsDue(invoice.due_date!, steps, from, now)
  if (run === null) {
    // The steps changed since the invoice was scheduled: its next step is where the new schedule puts it.
    const next = nextStep(invoice.due_date!, steps, from)
    await transaction(deps, (tx) => setDunningState(tx, scope, audit(now), id, next ? { dunning_status: 'active', dunning_next_step: next.index, dunning_next_step_at: next.at } : { dunning_status: 'completed', dunning_next_step: null, dunning_next_step_at: null }))
    return 'rescheduled'
  }
  for (const s of skipped) await store.claimStep(deps.sql, scope, id, s, steps[s].actions, { skipped: `superseded by step ${run}, due at the same run` }, now)
  const { actions } = steps[run]
  // A step claimed before (a run stopped after its actions) is not run again: the invoice only moves on.
  const results: Record<string, string> = {}
  if (await store.claimStep(deps.sql, scope, id, run, actions, {}, now)) {
    for (const action of actions) results[action] = await act(deps, scope, invoice, action, run, now)
    await store.saveResults(deps.sql, id, run, results)
  }
  const last = run === steps.length - 1
  const next = last ? null : nextStep(invoice.due_date!, steps, run + 1)
  const status = !last ? 'active' : actions.includes('mark_uncollectible') ? 'uncollectible' : 'completed'
  await transaction(deps, async (tx) => {
    const locked = await lockInvoice(tx, scope, id)
    if (locked.dunning_status !== 'active') return
    const row = await setDunningState(tx, scope, audit(now), id, { dunning_status: status, dunning_next_step: next?.index ?? null, dunning_next_step_at: next?.at ?? null })
    await recordEvent(tx, scope, { eventType: 'invoice.dunning.step', entityType: 'invoice', entityId: id, payload: { invoice: toWire(row), step: run, days_after_due: steps[run].days_after_due, actions, results, skipped_steps: skipped } })
  })
  return 'ran'
}

/** The dunning job: invoices enter their schedules, then every due step runs. */
export async function runDunning(deps: Deps, progress: Progress = () => {}): Promise<Record<Outcome | 'entered' | 'attempted' | 'failed', number>> {
  const now = deps.clock.now()
  const settings = new Map<string, SettingsView>()
  const stepsOf = async (scope: Scope) => {
    const key = `${scope.tenantId}/${scope.environmentId}`
    if (!settings.has(key)) settings.set(key, await settingsOf(deps, scope))
    return settings.get(key)!.steps
  }
  const entering = await store.entering(deps.sql, BATCH, inReach(deps.sql, deps, 'i.customer_id'))
  for (const row of entering) {
    const scope = { tenantId: row.tenant_id, environmentId: row.environment_id }
    await enter(deps, scope, row.id, await stepsOf(scope))
  }
  const due = await store.due(deps.sql, now, BATCH, inReach(deps.sql, deps, 'i.customer_id'))
  const summary = { entered: entering.length, attempted: due.length, resolved: 0, ran: 0, rescheduled: 0, failed: 0 }
  for (const [i, row] of due.entries()) {
    const scope = { tenantId: row.tenant_id, environmentId: row.environment_id }
    try {
      summary[await advance(deps, scope, row.id, await stepsOf(scope), now)] += 1
    } catch (err) {
      // One invoice that cannot move on must not hold up the others; it is due again at the next run.
      deps.logger.error({ err, invoice_id: row.id }, 'a dunning step could not run')
      summary.failed += 1
    }
    progress(i + 1, due.length)
  }
  return summary
}
