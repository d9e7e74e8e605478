// Prepaid credits at finalization come from the customer's wallet. Wallets belong to the credits domain,
// above this one (its purchases and auto top-ups make invoices), so it plugs its wallet in here when it
// loads (usePrepaidWallet): finalization asks what the wallet can pay, the engine spreads it over the
// lines and the wallet is debited what was applied; voiding gives it back; a paid CREDIT invoice makes
// the credits it bought count. With no wallet plugged in, finalizing fails rather than ignore credits.
import type { InvoiceInput } from '../../../core/billing/invoice.ts'
import type { Decimal } from '../../../core/money.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Tx } from '../../../infra/postgres.ts'
import type { InvoiceRow } from './store.ts'

/** The invoice as a wallet sees it. */
export type InvoiceRef = Pick<InvoiceRow, 'id' | 'customer_id' | 'currency' | 'invoice_type'>

/**
 * What a wallet may pay of an invoice (the engine's prepaid input), and the wallet as read, locked, to take it from;
 * `mayInvoice`: taking from it may start an auto top-up by invoice, which takes a number of the invoices' sequence.
 */
export type PrepaidCredits = NonNullable<InvoiceInput['prepaid']> & { wallet: unknown; mayInvoice: boolean }

export interface PrepaidWallet {
  /** What creditsFor reads for many invoices, read at once (a finalization batch); creditsFor is given it back. */
  prepare(deps: Deps, tx: Tx, scope: Scope, invoices: InvoiceRef[]): Promise<unknown>
  /** The wallet's credits that may pay the invoice, its wallet locked; undefined when none apply. */
  creditsFor(deps: Deps, tx: Tx, scope: Scope, invoice: InvoiceRef, prepared?: unknown): Promise<PrepaidCredits | undefined>
  /** Takes what the engine applied from the wallet creditsFor read, in the same (finalizing) transaction. */
  take(deps: Deps, tx: Tx, scope: Scope, invoice: InvoiceRef, amount: Decimal, from: PrepaidCredits): Promise<unknown>
  /** Gives back what a voided invoice took. */
  giveBack(deps: Deps, tx: Tx, scope: Scope, invoiceId: string): Promise<unknown>
  /** A paid credit purchase: its credits enter the wallet. */
  purchasePaid(deps: Deps, tx: Tx, scope: Scope, invoiceId: string): Promise<void>
}

let plugged: PrepaidWallet | undefined

export function usePrepaidWallet(wallet: PrepaidWallet): void {
  plugged = wallet
}

function wallet(): PrepaidWallet {
  if (!plugged) throw new Error('no prepaid wallet is plugged into invoicing: load domains/credits/wallets/service.ts')
  return plugged
}

export const preparePrepaid = (deps: Deps, tx: Tx, scope: Scope, invoices: InvoiceRow[]): Promise<unknown> => wallet().prepare(deps, tx, scope, invoices)

export const prepaidCredits = (deps: Deps, tx: Tx, scope: Scope, invoice: InvoiceRow, prepared?: unknown): Promise<PrepaidCredits | undefined> => wallet().creditsFor(deps, tx, scope, invoice, prepared)

export async function takePrepaidCredits(deps: Deps, tx: Tx, scope: Scope, invoice: InvoiceRow, amount: Decimal, from: PrepaidCredits): Promise<void> {
  await wallet().take(deps, tx, scope, invoice, amount, from)
}

export async function returnPrepaidCredits(deps: Deps, tx: Tx, scope: Scope, invoice: InvoiceRow): Promise<void> {
  await wallet().giveBack(deps, tx, scope, invoice.id)
}

const PAID = ['SUCCEEDED', 'OVERPAID']

export async function purchasePaid(deps: Deps, tx: Tx, scope: Scope, invoice: InvoiceRow): Promise<void> {
  if (invoice.invoice_type === 'CREDIT' && PAID.includes(invoice.payment_status)) await wallet().purchasePaid(deps, tx, scope, invoice.id)
}
