// Each environment's usage-adjustment settings (GET/PUT /v1/usage-adjustments/settings): whether late usage and
// corrections of finalized periods are adjusted or ignored, how more usage is billed (a line on the subscription's next
// invoice, or an invoice of its own), the minimum amount issued, and how many periods back.
import { validationError } from '../../../core/errors.ts'
import { D } from '../../../core/money.ts'
import type { Actor } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import * as store from './store.ts'

export type SettingsView = store.SettingsRow

export interface SettingsInput {
  late_usage?: 'adjust' | 'ignore'
  method?: store.Method
  minimum_amount?: string
  horizon_periods?: number
}

export const getSettings = async (deps: Deps, actor: Actor): Promise<SettingsView> => (await store.settingsOf(deps.sql, actor)) ?? store.DEFAULT_SETTINGS

/** Changes what is given; the rest stays as it was (or the defaults: adjust, next_invoice, 0, 3 periods). */
export async function updateSettings(deps: Deps, actor: Actor, input: SettingsInput): Promise<SettingsView> {
  const current = await getSettings(deps, actor)
  const minimum = input.minimum_amount ?? current.minimum_amount
  if (!/^\d+(\.\d+)?$/.test(minimum)) throw validationError('minimum_amount', `must be a non-negative decimal amount, got ${JSON.stringify(minimum)}`)
  const next = { late_usage: input.late_usage ?? current.late_usage, method: input.method ?? current.method, minimum_amount: new D(minimum).toFixed(), horizon_periods: input.horizon_periods ?? current.horizon_periods }
  await store.saveSettings(deps.sql, actor, next, deps.clock.now(), actor.keyId)
  return getSettings(deps, actor)
}
