// Wallets and invoices, both ways, always in the invoicing side's transaction. Credits pay invoices at
// finalization (what a PRE_PAID wallet holds, for the price types its config allows; the invoice engine
// spreads it over the lines) and come back when the invoice is voided. Credits bought by invoice are
// pending until the invoice is paid.
import { creditsToCurrency, type WalletBalance } from '../../../core/credits/ledger.ts'
import type { PriceType } from '../../../core/billing/invoice.ts'
import { invalidOperation } from '../../../core/errors.ts'
import { D, formatMoney, minorUnits, roundMoney, type Decimal } from '../../../core/money.ts'
import type { Actor, Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Tx } from '../../../infra/postgres.ts'
import type { Audit } from '../../../infra/records.ts'
import { appendCredit, appendDebit, balanceAt, balancesAt } from './ledger.ts'
import type { InvoiceRef } from '../../invoicing/invoices/prepaid.ts'
import { recordPayment } from '../../invoicing/invoices/payments.ts'
import { lockInvoice } from '../../invoicing/invoices/read.ts'
import { auditOf, transaction } from '../../records/service.ts'
import * as store from './store.ts'
import { settle } from './watch.ts'

const systemAudit = (deps: Deps): Audit => ({ by: 'system', at: deps.clock.now() })

/** The customer's PRE_PAID wallet that pays this invoice, locked for the caller's transaction. Credit purchases are paid in money. */
async function payingWallet(tx: Tx, scope: Scope, invoice: InvoiceRef): Promise<store.WalletRow | undefined> {
  if (invoice.invoice_type === 'CREDIT') return undefined
  const wallet = await store.lockActiveWallet(tx, scope, invoice.customer_id, invoice.currency)
  return wallet?.wallet_type === 'PRE_PAID' ? wallet : undefined
}

/**
 * The wallets that may pay many invoices (a finalization batch), locked, and their balances, read at once. A wallet
 * serves the first of its invoices only: that one's debit changes it, so a later one locks and reads it again.
 */
export interface PreparedWallets {
  wallets: Map<string, store.WalletRow>
  balances: Map<string, WalletBalance>
}

export async function prepareWallets(deps: Deps, tx: Tx, scope: Scope, invoices: InvoiceRef[]): Promise<PreparedWallets> {
  const wallets = await store.lockActiveWallets(tx, scope, invoices.filter((i) => i.invoice_type !== 'CREDIT').map((i) => ({ customerId: i.customer_id, currency: i.currency })))
  return { wallets, balances: await balancesAt(tx, [...wallets.values()].map((w) => w.id), deps.clock.now()) }
}

/** The paying wallet and its balance: from `prepared` for the first invoice of a wallet there, else read. */
async function payingBalance(deps: Deps, tx: Tx, scope: Scope, invoice: InvoiceRef, prepared?: PreparedWallets): Promise<{ wallet: store.WalletRow; balance: WalletBalance } | undefined> {
  const key = `${invoice.customer_id}|${invoice.currency}`
  const early = invoice.invoice_type === 'CREDIT' ? undefined : prepared?.wallets.get(key)
  if (early) prepared!.wallets.delete(key)
  const wallet = early ?? (await payingWallet(tx, scope, invoice))
  if (wallet?.wallet_type !== 'PRE_PAID') return undefined
  return { wallet, balance: early ? prepared!.balances.get(wallet.id)! : await balanceAt(tx, wallet.id, deps.clock.now()) }
}

/**
 * What the wallet can pay of the invoice, in its currency, and for which price types, with the wallet (locked) and
 * whether a debit may start an auto top-up by invoice; undefined when nothing.
 */
export async function walletCreditsFor(
  deps: Deps,
  tx: Tx,
  scope: Scope,
  invoice: InvoiceRef,
  prepared?: PreparedWallets,
): Promise<{ available: Decimal; allowed_price_types: (PriceType | 'ALL')[]; wallet: store.WalletRow; mayInvoice: boolean } | undefined> {
  const paying = await payingBalance(deps, tx, scope, invoice, prepared)
  if (!paying || paying.balance.credit_balance.isZero()) return undefined
  const { wallet } = paying
  const mayInvoice = wallet.auto_topup?.enabled === true && wallet.auto_topup.invoicing
  return { available: creditsToCurrency(paying.balance.credit_balance, wallet.conversion_rate), allowed_price_types: wallet.config.allowed_price_types, wallet, mayInvoice }
}

/**
 * Debits what the invoice engine applied (`amount`, in the invoice's currency) in consumption order, as one
 * INVOICE_PAYMENT transaction referencing the invoice; then the wallet's alerts and auto top-up. `from`: what
 * walletCreditsFor answered in this transaction, whose wallet is locked already.
 */
export async function applyWalletCredits(deps: Deps, tx: Tx, scope: Scope, invoice: InvoiceRef, amount: Decimal, from?: { wallet: unknown }): Promise<store.TransactionRow | undefined> {
  const wallet = (from?.wallet as store.WalletRow | undefined) ?? (await payingWallet(tx, scope, invoice))
  if (!wallet || !amount.gt(0)) return undefined
  const audit = systemAudit(deps)
  // The engine rounds down to the minor unit what the credits are worth: credits for it never exceed what is there.
  const credits = amount.div(wallet.conversion_rate).toDecimalPlaces(12, D.ROUND_UP)
  const debit = await appendDebit(tx, scope, audit, wallet, {
    credits,
    reason: 'INVOICE_PAYMENT',
    partial: true,
    reference_type: 'INVOICE',
    reference_id: invoice.id,
    description: `paid invoice ${invoice.id}`,
  })
  await settle(deps, tx, scope, audit, wallet)
  return debit
}

/**
 * A voided invoice gives back what it took: each credit it consumed is restored as a new credit with the
 * same reason, expiry and priority, naming it (parent_transaction_id). A purchase it was buying fails.
 * Safe to call twice: what was given back is not given again.
 */
export async function returnWalletCredits(deps: Deps, tx: Tx, scope: Scope, invoiceId: string): Promise<store.TransactionRow[]> {
  const audit = systemAudit(deps)
  const referring = await store.transactionsReferring(tx, scope, 'INVOICE', invoiceId)
  const returned = new Set(referring.filter((t) => t.parent_transaction_id).map((t) => t.parent_transaction_id))
  const restored: store.TransactionRow[] = []
  for (const debit of referring.filter((t) => t.transaction_reason === 'INVOICE_PAYMENT')) {
    const wallet = (await store.lockWallet(tx, scope, debit.wallet_id))!
    const originals = new Map((await store.transactionsById(tx, (debit.consumption_breakdown ?? []).map((c) => c.credit_id))).map((t) => [t.id, t]))
    for (const part of debit.consumption_breakdown ?? []) {
      if (returned.has(part.credit_id)) continue
      const original = originals.get(part.credit_id)!
      restored.push(
        await appendCredit(tx, scope, audit, wallet, {
          credits: new D(part.credits),
          reason: original.transaction_reason as store.CreditReason,
          expiry_date: original.expiry_date,
          priority: original.priority,
          parent_transaction_id: original.id,
          reference_type: 'INVOICE',
          reference_id: invoiceId,
          description: `returned: invoice ${invoiceId} voided`,
        }),
      )
    }
    await settle(deps, tx, scope, audit, wallet)
  }
  for (const purchase of referring.filter((t) => t.transaction_status === 'pending')) await store.settlePending(tx, purchase.id, 'failed', audit.at)
  return restored
}

/** A paid purchase invoice makes its pending credits count; the wallet's alerts and auto top-up follow (rule 10). */
export async function walletPurchasePaid(deps: Deps, tx: Tx, scope: Scope, invoiceId: string): Promise<void> {
  const audit = systemAudit(deps)
  for (const purchase of await store.transactionsReferring(tx, scope, 'INVOICE', invoiceId)) {
    if (purchase.transaction_status !== 'pending') continue
    const wallet = (await store.lockWallet(tx, scope, purchase.wallet_id))!
    await store.settlePending(tx, purchase.id, 'completed', audit.at)
    await settle(deps, tx, scope, audit, wallet)
  }
}

/**
 * POST /v1/invoices/{id}/payment/attempt (Flexprice's attemptInvoicePayment): pays what a finalized
 * invoice still owes from the customer's PRE_PAID wallet, as far as its credits reach — one INVOICE_PAYMENT
 * debit and one payment on the invoice (PENDING when partial, SUCCEEDED when whole), in one transaction.
 * Only a wallet whose credits pay every price type pays this way: which lines the rest is owed on is not kept.
 */
export async function payInvoiceFromWallet(deps: Deps, actor: Actor, invoiceId: string): Promise<{ message: string; amount_paid: string }> {
  const audit = auditOf(deps, actor)
  return transaction(deps, async (tx) => {
    const invoice = await lockInvoice(tx, actor, invoiceId)
    if (invoice.invoice_status !== 'FINALIZED') throw invalidOperation(`invoice ${invoiceId} is ${invoice.invoice_status}: only a finalized invoice is paid`, { invoice_status: invoice.invoice_status })
    if (!invoice.amount_remaining.gt(0)) throw invalidOperation(`invoice ${invoiceId} owes nothing`, { amount_remaining: invoice.amount_remaining.toFixed() })
    const credits = await walletCreditsFor(deps, tx, actor, invoice)
    if (!credits) throw invalidOperation(`customer ${invoice.customer_id} has no ${invoice.currency} prepaid wallet with credits`, { currency: invoice.currency })
    if (!credits.allowed_price_types.includes('ALL')) throw invalidOperation('the wallet pays only some price types; it pays invoices at their finalization', { allowed_price_types: credits.allowed_price_types })
    const amount = D.min(roundMoney(credits.available.toDecimalPlaces(minorUnits(invoice.currency), D.ROUND_DOWN), invoice.currency), invoice.amount_remaining)
    if (!amount.gt(0)) throw invalidOperation(`the wallet's credits are worth less than the smallest ${invoice.currency} amount`)
    await applyWalletCredits(deps, tx, actor, invoice, amount, credits)
    const paid = await recordPayment(deps, tx, actor, audit, invoiceId, { payment_status: amount.eq(invoice.amount_remaining) ? 'SUCCEEDED' : 'PENDING', amount: amount.toFixed() }, { method: 'CREDITS', reference: null })
    return { message: `${formatMoney(amount, invoice.currency)} paid from the wallet; ${formatMoney(paid.amount_remaining, invoice.currency)} remains`, amount_paid: amount.toFixed() }
  })
}
