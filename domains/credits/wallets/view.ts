// How a wallet is shown: its row with the balances derived from the ledger at that instant, and what its
// active holds keep from the balance (held_balance) and leave to spend (available_balance), both in credits.
import { balanceInCurrency, type WalletBalance } from '../../../core/credits/ledger.ts'
import { availableCredits } from '../../../core/credits/holds.ts'
import { D, minorUnits, type Decimal } from '../../../core/money.ts'
import type { Db } from '../../../infra/postgres.ts'
import { heldByWallet, heldOn } from './holds-store.ts'
import { balanceAt, balancesAt } from './ledger.ts'
import type { WalletRow } from './store.ts'

export interface WalletView extends WalletRow {
  /** In the wallet's currency: credit_balance × conversion_rate, rounded to the minor unit. */
  balance: string
  credit_balance: Decimal
  credits_available_breakdown: { free: Decimal; purchased: Decimal }
  held_balance: Decimal
  available_balance: Decimal
}

export function present(wallet: WalletRow, b: WalletBalance, held: Decimal): WalletView {
  const balance = balanceInCurrency(b.credit_balance, wallet.conversion_rate, wallet.currency).toFixed(minorUnits(wallet.currency))
  return {
    ...wallet,
    balance,
    credit_balance: b.credit_balance,
    credits_available_breakdown: b.credits_available_breakdown,
    held_balance: held,
    available_balance: availableCredits(b.credit_balance, held),
  }
}

export async function views(db: Db, wallets: WalletRow[], at: Date): Promise<WalletView[]> {
  const ids = wallets.map((w) => w.id)
  const [balances, held] = [await balancesAt(db, ids, at), await heldByWallet(db, ids, at)]
  return wallets.map((w) => present(w, balances.get(w.id)!, held.get(w.id) ?? new D(0)))
}

export const viewOf = async (db: Db, wallet: WalletRow, at: Date): Promise<WalletView> => present(wallet, await balanceAt(db, wallet.id, at), await heldOn(db, wallet.id, at))
