// Balance alert state machine for wallets (credit balance, ongoing balance) and features. Pure.
//
// A level is entered when the balance is strictly beyond its threshold ("below 10": < 10) and left when it is
// strictly back ("rises back above" 10: > 10). Exactly at the threshold the level stays as it was: that is the
// hysteresis, so 10, 9.99, 10, 9.99 enters once and never leaves, and a balance must pass through the
// threshold again for the next event.
import type { Decimal } from '../money.ts'

type AlertCondition = 'above' | 'below'
export type AlertLevel = { condition: AlertCondition; threshold: Decimal }
export interface AlertSettings {
  alert_enabled: boolean
  info?: AlertLevel | null
  warning?: AlertLevel | null
  critical?: AlertLevel | null
}
export type AlertState = 'ok' | 'info' | 'warning' | 'in_alarm'
/** dropped: the state became more severe (wallet.*.dropped); recovered: less severe (wallet.*.recovered). */
export type AlertEvent = 'dropped' | 'recovered'

const SEVERITY: readonly AlertState[] = ['ok', 'info', 'warning', 'in_alarm']
const LEVELS = [
  ['info', 'info'],
  ['warning', 'warning'],
  ['critical', 'in_alarm'],
] as const

function isActive(level: AlertLevel, balance: Decimal, wasActive: boolean): boolean {
  const beyond = balance.cmp(level.threshold) * (level.condition === 'below' ? -1 : 1)
  return beyond > 0 || (beyond === 0 && wasActive)
}

/**
 * The state after the balance became `balance`: the most severe active level, or ok. One state change gives
 * one event, even when it jumps several levels at once. Disabled alerts reset to ok silently.
 */
export function nextAlertState(settings: AlertSettings, previous: AlertState, balance: Decimal): { state: AlertState; event?: AlertEvent } {
  if (!settings.alert_enabled) return { state: 'ok' }
  const before = SEVERITY.indexOf(previous)
  if (before < 0) throw new RangeError(`unknown alert_state: ${JSON.stringify(previous)}`)
  let state: AlertState = 'ok'
  for (const [key, levelState] of LEVELS) {
    const level = settings[key]
    // With thresholds in severity order, a state at or past this level means this level was active.
    if (level && isActive(level, balance, before >= SEVERITY.indexOf(levelState))) state = levelState
  }
  const after = SEVERITY.indexOf(state)
  return after === before ? { state } : { state, event: after > before ? 'dropped' : 'recovered' }
}
