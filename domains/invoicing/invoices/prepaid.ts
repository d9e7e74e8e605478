// Prepaid credits at finalization come from the customer's wallet (api/wallets): finalization asks what
// the wallet can pay, the engine spreads it over the lines and the wallet is debited what was applied;
// voiding gives it back. A paid CREDIT invoice makes the wallet credits it bought count.
import type { InvoiceInput } from '../../../core/billing/invoice.ts'
import type { Decimal } from '../../../core/money.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Tx } from '../../../infra/postgres.ts'
import { applyWalletCredits, returnWalletCredits, walletCreditsFor, walletPurchasePaid } from '../../credits/wallets/service.ts'
import type { InvoiceRow } from './store.ts'

/** The wallet's credits that may pay the invoice; undefined when none apply. */
export function prepaidCredits(deps: Deps, tx: Tx, scope: Scope, invoice: InvoiceRow): Promise<InvoiceInput['prepaid']> {
  return walletCreditsFor(deps, tx, scope, invoice)
}

/** Takes from the wallet what the engine applied, in the finalizing transaction. */
export async function takePrepaidCredits(deps: Deps, tx: Tx, scope: Scope, invoice: InvoiceRow, amount: Decimal): Promise<void> {
  await applyWalletCredits(deps, tx, scope, invoice, amount)
}

/** Gives back to the wallet what a voided invoice took from it. */
export async function returnPrepaidCredits(deps: Deps, tx: Tx, scope: Scope, invoice: InvoiceRow): Promise<void> {
  await returnWalletCredits(deps, tx, scope, invoice.id)
}

const PAID = ['SUCCEEDED', 'OVERPAID']

/** A paid credit purchase: its credits enter the wallet. */
export async function purchasePaid(deps: Deps, tx: Tx, scope: Scope, invoice: InvoiceRow): Promise<void> {
  if (invoice.invoice_type === 'CREDIT' && PAID.includes(invoice.payment_status)) await walletPurchasePaid(deps, tx, scope, invoice.id)
}
