// The ongoing ("real-time") balance of GET /v1/wallets/{id}/balance/real-time: the wallet's balance less
// what the customer already owes, priced now. core/credits/realtime.ts does the arithmetic; this gathers
// the inputs through the other domains' services. Credits held by active holds count as spent. It reads ClickHouse, so it runs outside any ledger
// transaction (the embedded Postgres serves one connection, which a transaction holds).
import { creditsToCurrency, type WalletBalance } from '../../../core/credits/ledger.ts'
import { ongoingBalance, type UnpaidInvoice } from '../../../core/credits/realtime.ts'
import { D, formatMoney, sumMoney, type Decimal } from '../../../core/money.ts'
import { priceAmount, type PriceInput } from '../../../core/pricing/index.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import { requireRecord } from '../../../infra/records.ts'
import { everyItem, systemActor } from '../../records/service.ts'
import { listInvoices } from '../../invoicing/invoices/read.ts'
import { listSubscriptions, searchLineItems, type LineItemRow, type SubscriptionView } from '../../subscriptions/read.ts'
import { meterUsage } from '../../usage/queries/service.ts'
import { availableCredits } from '../../../core/credits/holds.ts'
import { heldOn } from './holds-store.ts'
import { balanceAt } from './ledger.ts'
import * as store from './store.ts'
import { ReadCache } from '../../../infra/read-cache.ts'
import { present, type WalletView } from './view.ts'

const UNPAID = ['INITIATED', 'PENDING', 'PROCESSING', 'FAILED']

/** The customer's active subscriptions in `currency` and their usage lines live at `at` (with a meter). */
export async function usageLinesOf(deps: Deps, scope: Scope, customerId: string, currency: string, at: Date): Promise<{ subs: SubscriptionView[]; lines: LineItemRow[] }> {
  const actor = systemActor(scope)
  const subs = await everyItem((params) => listSubscriptions(deps, actor, { params, filters: { customer_id: customerId, currency, subscription_status: ['active'] } }))
  if (subs.length === 0) return { subs, lines: [] }
  const filters = { subscription_ids: subs.map((s) => s.id), price_type: 'USAGE', active_at: at.toISOString() }
  const lines = await everyItem((params) => searchLineItems(deps, actor, { params, filters }))
  return { subs, lines: lines.filter((l) => l.meter_id) }
}

/** Each line's usage charge from the start of its subscription's current period (or of the line, if later) to `at`, unrounded. */
export function lineCharges(deps: Deps, scope: Scope, customerId: string, subs: SubscriptionView[], lines: LineItemRow[], at: Date): Promise<Decimal[]> {
  const periods = new Map(subs.map((s) => [s.id, s.current_period_start]))
  return Promise.all(
    lines.map(async (line) => {
      const periodStart = periods.get(line.subscription_id)!
      const start = line.start_date > periodStart ? line.start_date : periodStart
      if (start >= at) return new D(0)
      const usage = await meterUsage(deps, scope, { meterId: line.meter_id!, customerId, start, end: at, billed: true })
      return priceAmount(line.price as unknown as PriceInput, usage.value).amount
    }),
  )
}

/**
 * Usage charges of the customer's active subscriptions in the wallet's currency, from the start of each
 * current period (or of the line, if later) to `at`, one unrounded amount per usage line.
 */
export async function unbilledUsage(deps: Deps, scope: Scope, wallet: store.WalletRow, at: Date): Promise<Decimal[]> {
  const { subs, lines } = await usageLinesOf(deps, scope, wallet.customer_id, wallet.currency, at)
  return lineCharges(deps, scope, wallet.customer_id, subs, lines, at)
}

export interface Ongoing {
  /** In the wallet's currency, unrounded. */
  ongoing: Decimal
  /** The same in credits. */
  ongoing_credits: Decimal
  usage: Decimal
  /** What the customer's unpaid invoices still ask for (credit purchases left out). */
  unpaid: Decimal
  balance: WalletBalance
  /** Credits held by active holds: the ongoing balance leaves them out, as spent. */
  held: Decimal
}

/** Finalized invoices of the customer in the wallet's currency with something still to pay. */
export async function unpaidInvoices(deps: Deps, scope: Scope, wallet: store.WalletRow): Promise<UnpaidInvoice[]> {
  const filters = { customer_id: wallet.customer_id, currency: wallet.currency, invoice_status: ['FINALIZED'], payment_status: UNPAID }
  const invoices = await everyItem((params) => listInvoices(deps, systemActor(scope), { params, filters }))
  return invoices.map((i) => ({ amount_remaining: i.amount_remaining, invoice_type: i.invoice_type }))
}

export async function ongoingOf(deps: Deps, scope: Scope, wallet: store.WalletRow, at: Date): Promise<Ongoing> {
  const [balance, held, usage, unpaid] = await Promise.all([balanceAt(deps.sql, wallet.id, at), heldOn(deps.sql, wallet.id, at), unbilledUsage(deps, scope, wallet, at), unpaidInvoices(deps, scope, wallet)])
  const ongoing = ongoingBalance(creditsToCurrency(availableCredits(balance.credit_balance, held), wallet.conversion_rate), usage, unpaid)
  const owed = sumMoney(unpaid.filter((i) => i.invoice_type !== 'CREDIT').map((i) => i.amount_remaining))
  return { ongoing, ongoing_credits: ongoing.div(wallet.conversion_rate).toDecimalPlaces(12), usage: sumMoney(usage), unpaid: owed, balance, held }
}

export interface OngoingView extends WalletView {
  real_time_balance: string
  real_time_credit_balance: Decimal
  current_period_usage: string
  unpaid_invoices_amount: string
  balance_updated_at: Date
}

const cache = new WeakMap<Deps, ReadCache<OngoingView>>()

/** SDKs gate on this: answered from memory for up to READ_CACHE_MS, never across a write of this process (usage included within that bound). */
export function ongoingBalanceOf(deps: Deps, actor: Actor, id: string): Promise<OngoingView> {
  let mine = cache.get(deps)
  if (!mine) cache.set(deps, (mine = new ReadCache()))
  return mine.read(JSON.stringify([actor.tenantId, actor.environmentId, id]), deps.clock.now(), () => readOngoingBalance(deps, actor, id))
}

async function readOngoingBalance(deps: Deps, actor: Actor, id: string): Promise<OngoingView> {
  const at = deps.clock.now()
  const wallet = await requireRecord<store.WalletRow>(deps.sql, store.WALLETS, actor, id)
  const o = await ongoingOf(deps, actor, wallet, at)
  return {
    ...present(wallet, o.balance, o.held),
    real_time_balance: formatMoney(o.ongoing, wallet.currency),
    real_time_credit_balance: o.ongoing_credits,
    current_period_usage: formatMoney(o.usage, wallet.currency),
    unpaid_invoices_amount: formatMoney(o.unpaid, wallet.currency),
    balance_updated_at: at,
  }
}
