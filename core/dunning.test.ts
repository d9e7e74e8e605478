import { describe, expect, it } from 'vitest'
import { checkSteps, DUNNING_PRESETS, nextStep, stepsDue, type DunningStep } from './dunning.ts'

const due = new Date('2026-03-10T00:00:00Z')
const steps: DunningStep[] = [
  { days_after_due: 1, actions: ['reminder_email'] },
  { days_after_due: 7, actions: ['reminder_email', 'retry_payment'] },
  { days_after_due: 14, actions: ['suspend_entitlements'] },
]

describe('dunning schedule', () => {
  it('places each step its days after the due date', () => {
    expect(nextStep(due, steps, 0)).toEqual({ index: 0, at: new Date('2026-03-11T00:00:00Z') })
    expect(nextStep(due, steps, 2)).toEqual({ index: 2, at: new Date('2026-03-24T00:00:00Z') })
    expect(nextStep(due, steps, 3)).toBeNull()
  })

  it('runs nothing before the first step, the step at its instant, and only the latest of several due', () => {
    expect(stepsDue(due, steps, 0, new Date('2026-03-10T23:59:59Z'))).toEqual({ run: null, skipped: [] })
    expect(stepsDue(due, steps, 0, new Date('2026-03-11T00:00:00Z'))).toEqual({ run: 0, skipped: [] })
    expect(stepsDue(due, steps, 1, new Date('2026-03-16T12:00:00Z'))).toEqual({ run: null, skipped: [] })
    expect(stepsDue(due, steps, 0, new Date('2026-03-30T00:00:00Z'))).toEqual({ run: 2, skipped: [0, 1] })
  })

  it('refuses steps out of order, empty or repeated actions, and a final action before the last step', () => {
    const fails = (s: DunningStep[], field: string) => expect(() => checkSteps(s)).toThrow(expect.objectContaining({ details: { [field]: expect.any(String) } }))
    fails([steps[1], steps[0]], 'steps[1].days_after_due')
    fails([{ days_after_due: 1.5, actions: ['reminder_email'] }], 'steps[0].days_after_due')
    fails([{ days_after_due: 1, actions: [] }], 'steps[0].actions')
    fails([{ days_after_due: 1, actions: ['reminder_email', 'reminder_email'] }], 'steps[0].actions')
    fails([{ days_after_due: 1, actions: ['mark_uncollectible'] }, steps[1]], 'steps[0].actions')
    fails([{ days_after_due: 1, actions: ['mark_uncollectible', 'cancel_subscription'] }], 'steps[0].actions')
  })

  it('ships presets that pass its own checks', () => {
    for (const preset of Object.values(DUNNING_PRESETS)) expect(checkSteps(preset)).toBe(preset)
  })
})
