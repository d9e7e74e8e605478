// Balances that move without a ledger change: the ongoing balance falls as usage is metered and invoices
// are issued. The wallet-balance-alerts job judges it every minute for each active wallet: the wallet's
// ongoing-balance alert (wallet.ongoing_balance.dropped / .recovered) and the alerts of the features its
// customer is entitled to (feature.wallet_balance.alert), each state change one event. The balance is read
// first (ClickHouse, other domains), then the states move in one short transaction under the wallet lock.
import { nextAlertState } from '../../../core/credits/alerts.ts'
import { AppError } from '../../../core/errors.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Audit } from '../../../infra/records.ts'
import { toWire } from '../../records/wire.ts'
import { systemActor, transaction } from '../../records/service.ts'
import { inReach } from '../../customers/reach.ts'
import { customerEntitlements } from '../../subscriptions/entitlements.ts'
import { anyFeatureAlerts, type FeatureRow } from '../../catalog/features/service.ts'
import { ongoingOf } from './realtime.ts'
import * as store from './store.ts'
import { alertSettingsOf, announceAlert, moveAlert, ONGOING_BALANCE, type Judged } from './watch.ts'

const BATCH = 100

/** Features the customer is entitled to that watch wallet balances. */
async function watchingFeatures(deps: Deps, scope: Scope, customerId: string): Promise<FeatureRow[]> {
  let entitled
  try {
    entitled = await customerEntitlements(deps, systemActor(scope), { id: customerId }, {})
  } catch (err) {
    // A customer without live subscriptions is entitled to nothing.
    if (err instanceof AppError && err.code === 'not_found') return []
    throw err
  }
  return entitled.features.filter((f) => f.entitlement.is_enabled && f.feature.alert_settings?.alert_enabled).map((f) => f.feature)
}

async function judgeWallet(deps: Deps, wallet: store.WalletRow, audit: Audit, featureAlerts: (scope: Scope) => Promise<boolean>): Promise<number> {
  const scope: Scope = { tenantId: wallet.tenant_id, environmentId: wallet.environment_id }
  const features = (await featureAlerts(scope)) ? await watchingFeatures(deps, scope, wallet.customer_id) : []
  if (!wallet.alert_settings?.alert_enabled && wallet.ongoing_alert_state === 'ok' && features.length === 0) return 0
  const o = await ongoingOf(deps, scope, wallet, audit.at)
  const judged: Judged = { credits: o.ongoing_credits, current: o.ongoing, balance: o.balance, held: o.held }
  return transaction(deps, async (tx) => {
    const locked = await store.lockWallet(tx, scope, wallet.id)
    if (!locked || locked.wallet_status !== 'active') return 0
    let events = (await moveAlert(tx, scope, audit, locked, ONGOING_BALANCE, judged)).ongoing_alert_state !== locked.ongoing_alert_state ? 1 : 0
    for (const feature of features) {
      const previous = await store.featureAlertState(tx, feature.id, wallet.id)
      const next = nextAlertState(alertSettingsOf(feature.alert_settings as store.AlertSettingsRow), previous, judged.credits)
      if (next.state === previous) continue
      await store.setFeatureAlertState(tx, feature.id, wallet.id, next.state, audit.at)
      const alert = { alert_settings: feature.alert_settings, alert_type: 'feature_wallet_balance', state: next.state }
      await announceAlert(tx, scope, 'feature.wallet_balance.alert', locked, judged, alert, { feature: toWire(feature) })
      events++
    }
    return events
  })
}

/** The wallet-balance-alerts job. */
export async function checkBalanceAlerts(deps: Deps, now: Date = deps.clock.now()): Promise<{ wallets: number; state_changes: number; failed: number }> {
  const audit: Audit = { by: 'system', at: now }
  const summary = { wallets: 0, state_changes: 0, failed: 0 }
  // Per scope, once a run: with no feature watching balances, a customer's entitlements need not be read.
  const known = new Map<string, Promise<boolean>>()
  const featureAlerts = (scope: Scope) => {
    const key = `${scope.tenantId}/${scope.environmentId}`
    if (!known.has(key)) known.set(key, anyFeatureAlerts(deps.sql, scope))
    return known.get(key)!
  }
  for (let after = ''; ; ) {
    const wallets = await store.activeWalletsAfter(deps.sql, after, BATCH, inReach(deps.sql, deps, 'wallets.customer_id'))
    for (const wallet of wallets) {
      try {
        summary.state_changes += await judgeWallet(deps, wallet, audit, featureAlerts)
        summary.wallets++
      } catch (err) {
        // One wallet whose usage cannot be read (a meter still backfilling, an engine down) keeps its state until the next run.
        deps.logger.warn({ err, wallet_id: wallet.id }, 'wallet balance alerts not judged')
        summary.failed++
      }
    }
    if (wallets.length < BATCH) return summary
    after = wallets[wallets.length - 1].id
  }
}
