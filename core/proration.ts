// Proration of a fixed price paid in advance. Pure: every instant comes from the caller.
// Amounts are unrounded; each returned line is rounded once when it goes on an invoice.
import { D, type Decimal } from './money.ts'
import { DAY_MS } from './periods.ts'

type ProrationMode = 'day' | 'second'

export type ProrateInput = {
  amount: Decimal
  periodStart: Date
  periodEnd: Date
  /** The part of the period being billed, [from, to); clamped into the period. */
  from: Date
  to: Date
  /** 'day' (default) or 'second'. */
  mode?: ProrationMode
  /** Day mode only: day counts the caller computed in the customer's time zone; used instead of UTC days. */
  days?: { used: number; total: number }
}

export type ProrationLine = { description: string; amount: Decimal }

const utcMidnight = (d: Date): number => Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate())
export const utcDays = (a: Date, b: Date): number => Math.floor((utcMidnight(b) - utcMidnight(a)) / DAY_MS)
const wholeSeconds = (a: Date, b: Date): number => Math.floor(b.getTime() / 1000) - Math.floor(a.getTime() / 1000)

/** Counts the used and total units (days or seconds) of the period. */
function units(input: ProrateInput): { used: number; total: number } {
  const { periodStart, periodEnd, mode = 'day', days } = input
  if (mode !== 'day' && mode !== 'second') throw new RangeError("mode must be 'day' or 'second'")
  if ([periodStart, periodEnd, input.from, input.to].some((d) => Number.isNaN(d.getTime()))) throw new RangeError('invalid date')
  if (periodStart.getTime() >= periodEnd.getTime()) throw new RangeError('periodStart must be before periodEnd')
  if (days) {
    if (mode !== 'day') throw new RangeError("days can only be given with mode 'day'")
    if (!Number.isInteger(days.used) || !Number.isInteger(days.total) || days.total < 1 || days.used < 0 || days.used > days.total)
      throw new RangeError('days must be integers with 0 <= used <= total and total >= 1')
    return days
  }
  const from = new Date(Math.max(input.from.getTime(), periodStart.getTime()))
  const to = new Date(Math.min(input.to.getTime(), periodEnd.getTime()))
  const count = mode === 'day' ? utcDays : wholeSeconds
  const total = count(periodStart, periodEnd)
  // A period inside one UTC day has no whole day to divide by.
  if (total < 1) throw new RangeError(`the period is shorter than one ${mode}`)
  return { used: from.getTime() < to.getTime() ? count(from, to) : 0, total }
}

/** factor = used / total; amount = amount × used / total, multiplied before dividing so the only inexact step is the last. */
export function prorate(input: ProrateInput): { factor: Decimal; amount: Decimal } {
  const { used, total } = units(input)
  return { factor: new D(used).div(total), amount: new D(input.amount).times(used).div(total) }
}

export type ChangeInput = {
  /** The fixed price for the whole period. */
  amount: Decimal
  periodStart: Date
  periodEnd: Date
  /** The instant of the change (upgrade, downgrade or cancellation). */
  at: Date
  /** Names the plan or price on the line, e.g. "Pro plan". */
  label: string
  mode?: ProrationMode
  /** Day mode only: the local days of [at, end) and of the period, as in ProrateInput. */
  days?: { used: number; total: number }
}

const remaining = (c: ChangeInput) => prorate({ ...c, from: c.at, to: c.periodEnd })
const day = (d: Date) => d.toISOString().slice(0, 10)

/** Gives back the unused part [at, end) of a price paid in advance: a negative line. For a cancellation, or the old price of a change. */
export function prorationCredit(c: ChangeInput): ProrationLine {
  // 0 minus, not neg(), so that nothing left to credit is 0 rather than -0.
  return { description: `Unused time on ${c.label} from ${day(c.at)}`, amount: new D(0).minus(remaining(c).amount) }
}

/** Charges the new price for the rest of the period [at, end). */
export function prorationCharge(c: ChangeInput): ProrationLine {
  return { description: `Remaining time on ${c.label} from ${day(c.at)}`, amount: remaining(c).amount }
}
