// Which slice of a read a row falls in, as ClickHouse SQL, for the usage and analytics stores. Slices of one length
// (UTC minutes, hours, days and weeks, bucket sizes, a range of whole windows) are found by arithmetic on the row's
// milliseconds: counting 31 DateTime64 literals per row was about 4 ms of a 9 ms month-by-day read on chDB, and a
// month of minutes needs no join. Other slicings (months, days across a DST change, a range cut mid-window) count
// the starts (up to INLINE_SLICES) or join them (ASOF) beyond.
import { sqlDateTimeArray } from './ch-literals.ts'

/** Up to this many uneven slices a row finds its slice by counting starts; beyond, by an ASOF JOIN. */
const INLINE_SLICES = 32

export interface SliceSql {
  /** The slice index (UInt32) of a row at time `t` (a DateTime64(3) column), t in [starts[0], end). */
  of: (t: string) => string
  /** What the FROM clause adds after the rows' subquery `u` (columns k = 1 and t) for `of` to work: '' or an ASOF JOIN as `b`. */
  join: string
}

/** Equal spacing of the starts, the last slice no longer than the others: its length in ms, else undefined. */
export function evenStep(starts: readonly Date[], end: Date): number | undefined {
  const step = starts[1].getTime() - starts[0].getTime()
  for (let i = 2; i < starts.length; i++) if (starts[i].getTime() - starts[i - 1].getTime() !== step) return undefined
  return end.getTime() - starts[starts.length - 1].getTime() <= step ? step : undefined
}

/** The slice SQL of slices starting at `starts` (ascending) and ending at `end`. */
export function sliceSql(starts: readonly Date[], end: Date): SliceSql {
  if (starts.length === 1) return { of: () => 'toUInt32(0)', join: '' }
  const step = evenStep(starts, end)
  if (step !== undefined) return { of: (t) => `toUInt32(intDiv(toUnixTimestamp64Milli(${t}) - ${starts[0].getTime()}, ${step}))`, join: '' }
  if (starts.length <= INLINE_SLICES) return { of: (t) => `toUInt32(arrayCount(s -> s <= ${t}, ${sqlDateTimeArray(starts)}) - 1)`, join: '' }
  return {
    of: () => 'b.slice',
    join: `ASOF INNER JOIN (SELECT 1 AS k, toUInt32(n - 1) AS slice, starts[n] AS s
                       FROM (SELECT ${sqlDateTimeArray(starts)} AS starts, arrayJoin(range(1, length(starts) + 1)) AS n)) AS b
        ON u.k = b.k AND u.t >= b.s`,
  }
}
