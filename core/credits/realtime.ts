// The "ongoing balance" of GET /wallets/{id}/balance/real-time: what the wallet keeps once it has paid what it
// already owes. Pure; amounts in the wallet's currency, unrounded (round with roundMoney to present).
import { D, sumMoney, type Decimal } from '../money.ts'

export interface UnpaidInvoice {
  /** What is still to pay (after partial payments and credits already applied). */
  amount_remaining: Decimal
  invoice_type: 'SUBSCRIPTION' | 'ONE_OFF' | 'CREDIT'
}

/**
 * wallet balance − current-period unbilled usage charges − unpaid invoices. No floor: a negative result says how
 * far usage has outrun the wallet, which alerts need to see. CREDIT invoices (credit purchases, auto top-ups) are
 * left out: they are paid into the wallet, not from it, and their credits are not in the balance yet.
 */
export function ongoingBalance(walletBalance: Decimal, unbilledUsage: readonly Decimal[], unpaidInvoices: readonly UnpaidInvoice[]): Decimal {
  const owed = unpaidInvoices.filter((i) => i.invoice_type !== 'CREDIT').map((i) => i.amount_remaining)
  return new D(walletBalance).minus(sumMoney([...unbilledUsage])).minus(sumMoney(owed))
}
