// Credits bought by invoice: a CREDIT invoice, created and finalized through the invoicing service in the
// caller's transaction, and a pending credit naming it. The credits count once the invoice is paid
// (invoices.ts walletPurchasePaid); a voided invoice fails the purchase.
import { validationError } from '../../../core/errors.ts'
import { roundMoney, type Decimal } from '../../../core/money.ts'
import type { Scope } from '../../../core/scope.ts'
import type { Deps } from '../../../infra/deps.ts'
import type { Tx } from '../../../infra/postgres.ts'
import type { Audit } from '../../../infra/records.ts'
import { createCreditPurchaseInvoice } from '../../invoicing/invoices/service.ts'
import { appendCredit, type CreditInput } from './ledger.ts'
import type * as store from './store.ts'

export type PurchaseInput = Omit<CreditInput, 'reason' | 'transaction_status' | 'reference_type' | 'reference_id'> & { credits: Decimal }

export async function purchaseByInvoice(deps: Deps, tx: Tx, scope: Scope, audit: Audit, wallet: store.WalletRow, input: PurchaseInput): Promise<store.TransactionRow> {
  const amount = roundMoney(input.credits.times(wallet.topup_conversion_rate), wallet.currency)
  if (!amount.gt(0)) throw validationError('credits_to_add', `cost less than the smallest amount of ${wallet.currency} an invoice can ask for`)
  const description = input.auto_topup ? `Wallet auto top-up: ${input.credits.toFixed()} credits` : `Wallet credits: ${input.credits.toFixed()}`
  const invoice = await createCreditPurchaseInvoice(deps, tx, scope, audit, {
    customer_id: wallet.customer_id,
    currency: wallet.currency,
    amount,
    billing_reason: input.auto_topup ? 'WALLET_AUTO_TOPUP' : 'MANUAL',
    description,
    metadata: { wallet_id: wallet.id },
  })
  return appendCredit(tx, scope, audit, wallet, {
    ...input,
    reason: 'PURCHASED_CREDIT_INVOICED',
    transaction_status: 'pending',
    reference_type: 'INVOICE',
    reference_id: invoice.id,
    description: input.description ?? description,
  })
}
