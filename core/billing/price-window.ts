// A price's start_date and end_date bound every line billed from it: a line bills only while both are in
// force. Where the price's date is what cuts the line inside a billing period, that time is prorated
// (create_prorations) whatever the subscription otherwise does with mid-period changes: the price was
// never in force outside its dates, so nothing of that time is owed.
import type { CycleLine } from './cycle.ts'

export interface PriceWindow {
  start_date: Date | null
  end_date: Date | null
}

/** The line within its price's dates; null when the two never overlap. */
export function withinPrice<L extends CycleLine>(line: L, price: PriceWindow | undefined): L | null {
  if (!price) return line
  const startCut = price.start_date !== null && price.start_date > line.start_date
  const endCut = price.end_date !== null && (line.end_date === null || price.end_date < line.end_date)
  const start_date = startCut ? price.start_date! : line.start_date
  const end_date = endCut ? price.end_date : line.end_date
  if (end_date !== null && end_date <= start_date) return null
  return {
    ...line,
    start_date,
    end_date,
    ...(startCut && { start_proration: 'create_prorations' }),
    ...(endCut && { end_proration: 'create_prorations' }),
  }
}
