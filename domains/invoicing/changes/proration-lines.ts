// What a modification or cancellation tells its caller it will bill: one line per proration charge of
// the billing engine, and their total.
import { formatMoney, parseDecimal, sumMoney } from '../../../core/money.ts'
import type { SubscriptionRow } from '../../subscriptions/read.ts'
import type { ChangeCharge } from '../invoices/billing.ts'

export interface ProrationLine {
  line_item_id: string
  price_id: string
  description: string
  amount: string
}

/** Proration charges as an invoice would carry them: each rounded once to the currency's minor unit. */
export function prorationLines(sub: SubscriptionRow, charges: ChangeCharge[]): ProrationLine[] {
  return charges.map(({ row, charge }) => ({ line_item_id: row.id, price_id: row.price_id, description: charge.description!, amount: formatMoney(charge.amount!, sub.currency) }))
}

export const totalOf = (lines: ProrationLine[], currency: string): string => formatMoney(sumMoney(lines.map((l) => parseDecimal(l.amount))), currency)
