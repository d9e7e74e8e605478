// Auto top-up decision, evaluated after every change of the credit balance (payments included). Pure.
import { D, type Decimal } from '../money.ts'

/** threshold and amount are in credits, like credit_balance. */
export interface AutoTopup {
  enabled: boolean
  threshold: Decimal
  amount: Decimal
  /** true: an invoice (billing reason WALLET_AUTO_TOPUP) whose payment adds the credits; false: add them directly. */
  invoicing: boolean
}
export type TopupAction = { kind: 'none' | 'direct' | 'invoice'; amount: Decimal }

const NONE: TopupAction = { kind: 'none', amount: new D(0) }

/**
 * Top up `amount` when the balance is at or below the threshold. It is judged on the level, not on a crossing,
 * so a balance still low after a top-up (or a paid top-up invoice) tops up again at the next change. Rule 10:
 * while a finalized unpaid auto top-up invoice exists, invoicing mode starts no other.
 */
export function autoTopup(settings: AutoTopup | null | undefined, creditBalance: Decimal, unpaidTopupInvoice: boolean): TopupAction {
  if (!settings?.enabled) return NONE
  if (!settings.amount.gt(0)) throw new RangeError(`auto_topup.amount must be greater than 0, got ${settings.amount.toFixed()}`)
  if (creditBalance.gt(settings.threshold)) return NONE
  if (!settings.invoicing) return { kind: 'direct', amount: settings.amount }
  return unpaidTopupInvoice ? NONE : { kind: 'invoice', amount: settings.amount }
}
