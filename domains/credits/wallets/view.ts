// How a wallet is shown: its row with the balances derived from the ledger at that instant.
import { balanceInCurrency, type WalletBalance } from '../../../core/credits/ledger.ts'
import { minorUnits, type Decimal } from '../../../core/money.ts'
import type { Db } from '../../../infra/postgres.ts'
import { balanceAt, balancesAt } from './ledger.ts'
import type { WalletRow } from './store.ts'

export interface WalletView extends WalletRow {
  /** In the wallet's currency: credit_balance × conversion_rate, rounded to the minor unit. */
  balance: string
  credit_balance: Decimal
  credits_available_breakdown: { free: Decimal; purchased: Decimal }
}

export function present(wallet: WalletRow, b: WalletBalance): WalletView {
  const balance = balanceInCurrency(b.credit_balance, wallet.conversion_rate, wallet.currency).toFixed(minorUnits(wallet.currency))
  return { ...wallet, balance, credit_balance: b.credit_balance, credits_available_breakdown: b.credits_available_breakdown }
}

export async function views(db: Db, wallets: WalletRow[], at: Date): Promise<WalletView[]> {
  const balances = await balancesAt(db, wallets.map((w) => w.id), at)
  return wallets.map((w) => present(w, balances.get(w.id)!))
}

export const viewOf = async (db: Db, wallet: WalletRow, at: Date): Promise<WalletView> => present(wallet, await balanceAt(db, wallet.id, at))
