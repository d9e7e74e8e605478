// Which rows an exact usage read takes from which source, pure: rollups of whole time units (coarsest first) read
// the units no slice boundary cuts, and a cut unit is read from the next finer source, down to raw rows, which take
// any instant. Every row of [first slice start, last slice end) is read from exactly one source, so states merged
// per slice equal a recount of raw rows at the millisecond. The same plan as the usage-by-meter query
// (docs/usage.md, "How a query is read"), for any list of rollups.
import { splitUnits, type Slice } from '../usage.ts'

/** [from, to) in epoch milliseconds. */
export type Range = [number, number]

/** Units starting at `starts`, each `unit` milliseconds long. */
interface Units {
  starts: Date[]
  unit: number
}

/**
 * Rows of one source with their time in one of `ranges`. A rollup source (`rollup`: its index in the rollups given)
 * reads whole units only. `within` (the units a coarser source left to this one) and `cut` (the units cut here, left
 * to the next) say the same as `ranges` in another form: a reader may use the overall bounds, `within` and `NOT IN cut`
 * when `ranges` are many (they plan faster than many OR'd ranges).
 */
export interface PlannedSource {
  rollup?: number
  ranges: Range[]
  within?: Units
  cut?: Units
}

/** Beyond this many cut units a rollup is skipped and the finer source reads its units (a long list costs more). */
const MAX_SPLITS = 64
/** A source added to a statement costs about as much as reading this many rows of the next finer one (chDB). */
const SOURCE_ROWS = 20_000
/** Raw rows counted, for that cost, as one per customer per second. */
const RAW_ROW_MS = 1000

/** `ranges` without the units starting at `cut` (sorted, each `unit` long). */
function withoutUnits(ranges: readonly Range[], cut: readonly Date[], unit: number): Range[] {
  const out: Range[] = []
  for (const [a, b] of ranges) {
    let from = a
    for (const c of cut) {
      const u = c.getTime()
      if (u + unit <= from || u >= b) continue
      if (u > from) out.push([from, u])
      from = Math.max(from, u + unit)
    }
    if (from < b) out.push([from, b])
  }
  return out
}

/** The parts of `ranges` within the units starting at `cut`, adjacent ones joined. */
function withinUnits(ranges: readonly Range[], cut: readonly Date[], unit: number): Range[] {
  const out: Range[] = []
  for (const [a, b] of ranges) {
    for (const c of cut) {
      const from = Math.max(a, c.getTime())
      const to = Math.min(b, c.getTime() + unit)
      if (from >= to) continue
      const last = out[out.length - 1]
      if (last && last[1] === from) last[1] = to
      else out.push([from, to])
    }
  }
  return out
}

/**
 * The sources of a read over `slices` (tiling the range in order) from rollups of the given units (milliseconds,
 * coarsest first, each a multiple of the next), then raw rows. A rollup is skipped, its units going to the next
 * source, when every unit it would read is cut, when more than MAX_SPLITS are, or when the finer rows it saves cost
 * less than a source of its own (`customers`: how many customers the read covers, Infinity for all of them or when a
 * rollup has no customer column).
 */
export function planSources(slices: readonly Slice[], units: readonly number[], customers: number): PlannedSource[] {
  const start = slices[0].start.getTime()
  const end = slices[slices.length - 1].end.getTime()
  const sources: PlannedSource[] = []
  let left: Units | undefined
  let ranges: Range[] = [[start, end]]
  for (const [i, unit] of units.entries()) {
    const cut = splitUnits(slices, unit)
    const count = left ? left.starts.length * (left.unit / unit) : Math.floor((end - 1) / unit) - Math.floor(start / unit) + 1
    const saved = (count - cut.length) * (unit / (units[i + 1] ?? RAW_ROW_MS) - 1) * customers
    if (cut.length === count || cut.length > MAX_SPLITS || (cut.length > 0 && saved < SOURCE_ROWS)) continue
    // Every range ends on a unit boundary or inside a cut unit: what is left holds whole units only. Nothing is left
    // when the coarser units reach outside the range and each unit inside it is cut (count counts whole units).
    const whole = withoutUnits(ranges, cut, unit)
    if (whole.length === 0) continue
    sources.push({ rollup: i, ranges: whole, within: left, cut: { starts: cut, unit } })
    if (cut.length === 0) return sources
    ranges = withinUnits(ranges, cut, unit)
    left = { starts: cut, unit }
  }
  sources.push({ ranges, within: left })
  return sources
}
