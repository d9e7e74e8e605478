// Dunning schedules, pure: which step of an environment's schedule an overdue invoice is at, when its next one is
// due, and which steps a run takes when it arrives late. Steps are days after the invoice's due date.
import { DAY_MS } from './periods.ts'
import { validationError } from './errors.ts'

/** What a step may do; the last three end the schedule and stand only on its last step, one of them at most. */
export const DUNNING_ACTIONS = ['reminder_email', 'retry_payment', 'mark_uncollectible', 'cancel_subscription', 'suspend_entitlements'] as const
export type DunningAction = (typeof DUNNING_ACTIONS)[number]
const FINAL_ACTIONS: readonly DunningAction[] = ['mark_uncollectible', 'cancel_subscription', 'suspend_entitlements']

export interface DunningStep {
  days_after_due: number
  actions: DunningAction[]
}

/** Documented starting points (docs/invoicing.md "Dunning"); an environment copies one and edits it. */
export const DUNNING_PRESETS: Record<'gentle' | 'standard' | 'strict', DunningStep[]> = {
  gentle: [
    { days_after_due: 3, actions: ['reminder_email'] },
    { days_after_due: 14, actions: ['reminder_email'] },
    { days_after_due: 30, actions: ['reminder_email', 'mark_uncollectible'] },
  ],
  standard: [
    { days_after_due: 1, actions: ['reminder_email', 'retry_payment'] },
    { days_after_due: 7, actions: ['reminder_email', 'retry_payment'] },
    { days_after_due: 14, actions: ['reminder_email', 'retry_payment'] },
    { days_after_due: 21, actions: ['reminder_email', 'cancel_subscription'] },
  ],
  strict: [
    { days_after_due: 1, actions: ['reminder_email', 'retry_payment'] },
    { days_after_due: 3, actions: ['reminder_email', 'retry_payment'] },
    { days_after_due: 7, actions: ['reminder_email', 'suspend_entitlements'] },
  ],
}

/** Steps in strictly increasing days (0 to 365), each with distinct actions; a final action only on the last step. */
export function checkSteps(steps: DunningStep[]): DunningStep[] {
  steps.forEach((step, i) => {
    if (!Number.isInteger(step.days_after_due) || step.days_after_due < 0 || step.days_after_due > 365) throw validationError(`steps[${i}].days_after_due`, 'must be a whole number of days from 0 to 365')
    if (i > 0 && step.days_after_due <= steps[i - 1].days_after_due) throw validationError(`steps[${i}].days_after_due`, `must be after the previous step's (${steps[i - 1].days_after_due})`)
    if (step.actions.length === 0) throw validationError(`steps[${i}].actions`, 'must name at least one action')
    if (new Set(step.actions).size !== step.actions.length) throw validationError(`steps[${i}].actions`, 'must not repeat an action')
    const finals = step.actions.filter((a) => FINAL_ACTIONS.includes(a))
    if (finals.length > 0 && i !== steps.length - 1) throw validationError(`steps[${i}].actions`, `${finals[0]} ends the schedule: it belongs on the last step`)
    if (finals.length > 1) throw validationError(`steps[${i}].actions`, `take one final action, not ${finals.join(' and ')}`)
  })
  return steps
}

/** When step `index` falls for an invoice due at `due`. */
export const stepAt = (due: Date, step: DunningStep): Date => new Date(due.getTime() + step.days_after_due * DAY_MS)

/** The step after `done` steps, and when it falls; null when none is left. */
export function nextStep(due: Date, steps: DunningStep[], done: number): { index: number; at: Date } | null {
  return done < steps.length ? { index: done, at: stepAt(due, steps[done]) } : null
}

/**
 * What a run at `now` does from step `from`: the latest step already due runs, the due ones before it are
 * skipped (a worker that was down does not send three reminders at once), later ones wait.
 */
export function stepsDue(due: Date, steps: DunningStep[], from: number, now: Date): { run: number | null; skipped: number[] } {
  let run: number | null = null
  for (let i = from; i < steps.length && stepAt(due, steps[i]) <= now; i++) run = i
  if (run === null) return { run, skipped: [] }
  return { run, skipped: Array.from({ length: run - from }, (_, k) => from + k) }
}
