// What follows every ledger change, in the same transaction and under the same wallet lock: the auto
// top-up (core/credits/topup.ts, rule 10), then the alert states on the balance that results, less active holds. A state change
// is one outbox event; a balance that stays in its state (hovering at a threshold) records nothing.
import { nextAlertState, type AlertLevel, type AlertSettings, type AlertState } from '../../../core/credits/alerts.ts'
import { autoTopup, type AutoTopup } from '../../../core/credits/topup.ts'
import type { WalletBalance } from '../../../core/credits/ledger.ts'
import { D, type Decimal } from '../../../core/money.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import { recordEvent } from '../../../infra/outbox.ts'
import type { Tx } from '../../../infra/postgres.ts'
import { updateRecord, type Audit } from '../../../infra/records.ts'
import { customerViews } from '../../customers/service.ts'
import { toWire } from '../../records/wire.ts'
import { availableCredits } from '../../../core/credits/holds.ts'
import { heldOn } from './holds-store.ts'
import { appendCredit, balanceAt } from './ledger.ts'
import { purchaseByInvoice } from './purchase.ts'
import * as store from './store.ts'
import { present } from './view.ts'

const level = (l: store.AlertLevelSettings | undefined): AlertLevel | null =>
  l ? { condition: l.condition, threshold: new D(l.threshold) } : null

export function alertSettingsOf(s: store.AlertSettingsRow | null): AlertSettings {
  return { alert_enabled: s?.alert_enabled ?? false, info: level(s?.info), warning: level(s?.warning), critical: level(s?.critical) }
}

const autoTopupOf = (a: store.AutoTopupSettings | null): AutoTopup | null =>
  a && { enabled: a.enabled, invoicing: a.invoicing, threshold: new D(a.threshold), amount: new D(a.amount) }

/** The two balances a wallet's alert_settings watch, each with its own state column and events. */
export interface AlertKind {
  column: 'alert_state' | 'ongoing_alert_state'
  /** Event prefix: `<prefix>.dropped` / `<prefix>.recovered`. */
  events: string
  alert_type: string
}
const CREDIT_BALANCE: AlertKind = { column: 'alert_state', events: 'wallet.credit_balance', alert_type: 'low_credit_balance' }
export const ONGOING_BALANCE: AlertKind = { column: 'ongoing_alert_state', events: 'wallet.ongoing_balance', alert_type: 'low_ongoing_balance' }

/** A balance an alert judges: in credits (thresholds are in credits, like credit_balance) and in the wallet's currency. */
export interface Judged {
  credits: Decimal
  current: Decimal
  balance: WalletBalance
  held: Decimal
}

/** The event of an alert crossing: {customer, wallet, alert: {alert_settings, alert_type, credit_balance, current_balance, state}} and `extra`. */
export async function announceAlert(
  tx: Tx,
  scope: Scope,
  eventType: string,
  wallet: store.WalletRow,
  judged: Judged,
  alert: { alert_settings: unknown; alert_type: string; state: AlertState },
  extra: Record<string, unknown> = {},
): Promise<void> {
  const [customer] = await customerViews(tx, scope, [wallet.customer_id])
  await recordEvent(tx, scope, {
    eventType,
    entityType: 'wallet',
    entityId: wallet.id,
    payload: {
      customer: toWire(customer),
      wallet: toWire(present(wallet, judged.balance, judged.held)),
      ...extra,
      alert: { alert_settings: alert.alert_settings, alert_type: alert.alert_type, credit_balance: judged.credits.toNumber(), current_balance: judged.current.toNumber(), state: alert.state },
    },
  })
}

/** Moves one of the wallet's alert states for the balance judged; a change of state records its one event. */
export async function moveAlert(tx: Tx, scope: Scope, audit: Audit, wallet: store.WalletRow, kind: AlertKind, judged: Judged): Promise<store.WalletRow> {
  const previous: AlertState = wallet[kind.column]
  const next = nextAlertState(alertSettingsOf(wallet.alert_settings), previous, judged.credits)
  if (next.state === previous) return wallet
  const moved = await updateRecord<store.WalletRow>(tx, store.WALLETS, scope, wallet.id, { [kind.column]: next.state }, { audit })
  if (next.event) await announceAlert(tx, scope, `${kind.events}.${next.event}`, moved, judged, { alert_settings: wallet.alert_settings, alert_type: kind.alert_type, state: next.state })
  return moved
}

/**
 * Auto top-up, then alerts, after a ledger change. Returns the wallet as it now is. `known`: the balance and
 * held credits as the caller already read them under this lock, after its change (a hold changes no credit).
 */
export async function settle(deps: Deps, tx: Tx, scope: Scope, audit: Audit, wallet: store.WalletRow, known?: { balance: WalletBalance; held: Decimal }): Promise<store.WalletRow> {
  if (wallet.wallet_status !== 'active') return wallet
  // Nothing watches the balance (no auto top-up, alerts off) and the state is ok already: whatever the balance, it
  // stays so, and the balance need not be read (a ledger change of every invoice and grant comes here).
  if (!wallet.auto_topup?.enabled && !wallet.alert_settings?.alert_enabled && wallet.alert_state === 'ok') return wallet
  let balance = known?.balance ?? (await balanceAt(tx, wallet.id, audit.at))
  const held = known?.held ?? (await heldOn(tx, wallet.id, audit.at))
  const auto = autoTopupOf(wallet.auto_topup)
  const action = autoTopup(auto, availableCredits(balance.credit_balance, held), auto?.invoicing === true && (await store.pendingPurchases(tx, wallet.id)).some((t) => t.auto_topup))
  if (action.kind === 'direct') {
    await appendCredit(tx, scope, audit, wallet, { credits: action.amount, reason: 'PURCHASED_CREDIT_DIRECT', auto_topup: true, description: 'auto top-up' })
    balance = await balanceAt(tx, wallet.id, audit.at)
  } else if (action.kind === 'invoice') {
    await purchaseByInvoice(deps, tx, scope, audit, wallet, { credits: action.amount, auto_topup: true })
  }
  const available = availableCredits(balance.credit_balance, held)
  return moveAlert(tx, scope, audit, wallet, CREDIT_BALANCE, { credits: available, current: available.times(wallet.conversion_rate), balance, held })
}
