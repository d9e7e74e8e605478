import { describe, expect, it } from 'vitest'
import { D } from '../money.ts'
import { nextAlertState, type AlertSettings, type AlertState } from './alerts.ts'

const below = (t: string) => ({ condition: 'below' as const, threshold: new D(t) })
const above = (t: string) => ({ condition: 'above' as const, threshold: new D(t) })
const THREE: AlertSettings = { alert_enabled: true, info: below('100'), warning: below('50'), critical: below('10') }

// Feeds the balances one after another; each step shows "state" or "state:event".
function run(settings: AlertSettings, start: AlertState, balances: string[]): string[] {
  let state = start
  return balances.map((b) => {
    const next = nextAlertState(settings, state, new D(b))
    state = next.state
    return next.event ? `${next.state}:${next.event}` : next.state
  })
}

describe('nextAlertState: one step (info < 100, warning < 50, critical < 10)', () => {
  // [previous, balance, result]
  it.each([
    ['ok', '100', 'ok'],
    ['ok', '99.99', 'info:dropped'],
    ['ok', '10', 'warning:dropped'], // at the critical threshold, not having been critical: not critical
    ['ok', '5', 'in_alarm:dropped'], // a jump over three levels is one event
    ['info', '100', 'info'], // at the threshold: stays
    ['info', '100.01', 'ok:recovered'],
    ['warning', '50', 'warning'],
    ['warning', '50.01', 'info:recovered'],
    ['in_alarm', '10', 'in_alarm'],
    ['in_alarm', '10.01', 'warning:recovered'],
    ['in_alarm', '1000', 'ok:recovered'],
    ['in_alarm', '-5', 'in_alarm'],
  ] as [AlertState, string, string][])('%s, balance %s: %s', (previous, balance, expected) => {
    expect(run(THREE, previous, [balance])).toEqual([expected])
  })
})

describe('nextAlertState: sequences', () => {
  // [name, settings, start, balances, states]
  it.each([
    [
      'hovering at the critical threshold: one dropped, one recovered',
      THREE,
      'warning',
      ['20', '10', '9.99', '10', '9.99', '10.01', '10', '10.01', '10'],
      ['warning', 'warning', 'in_alarm:dropped', 'in_alarm', 'in_alarm', 'warning:recovered', 'warning', 'warning', 'warning'],
    ],
    [
      'down through every level and back up',
      THREE,
      'ok',
      ['150', '100', '99', '50', '49', '10', '9', '10', '11', '50', '51', '100', '101'],
      ['ok', 'ok', 'info:dropped', 'info', 'warning:dropped', 'warning', 'in_alarm:dropped', 'in_alarm', 'warning:recovered', 'warning', 'info:recovered', 'info', 'ok:recovered'],
    ],
    [
      'every real crossing is an event',
      THREE,
      'warning',
      ['9.99', '10.01', '9.99'],
      ['in_alarm:dropped', 'warning:recovered', 'in_alarm:dropped'],
    ],
    ['only a critical level', { alert_enabled: true, critical: below('10') }, 'ok', ['9', '50', '10'], ['in_alarm:dropped', 'ok:recovered', 'ok']],
    ["condition 'above'", { alert_enabled: true, info: above('1000') }, 'ok', ['1000', '1000.01', '1000', '999.99'], ['ok', 'info:dropped', 'info', 'ok:recovered']],
    ['disabled: silently ok', { ...THREE, alert_enabled: false }, 'in_alarm', ['0', '-100'], ['ok', 'ok']],
  ] as [string, AlertSettings, AlertState, string[], string[]][])('%s', (_, settings, start, balances, expected) => {
    expect(run(settings, start, balances)).toEqual(expected)
  })

  it('rejects an unknown previous state', () => {
    expect(() => nextAlertState(THREE, 'alarm' as AlertState, new D(1))).toThrow(/unknown alert_state/)
  })
})
