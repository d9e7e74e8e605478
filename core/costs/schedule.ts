// Which unit cost is in force when: a cost sheet's prices each hold from start_date (null: always) until end_date
// (null: for good). For one meter at one instant the price in force is, of those holding then, the one that starts
// latest (a price added later with a start date supersedes the one before it without touching it), the newest on a
// tie. A range is cut where any meter's price changes: each part is priced by the prices in force throughout it.

export interface DatedPrice {
  id: string
  meter_id: string | null
  start_date: Date | null
  end_date: Date | null
  created_at: Date
}

export interface CostPart<P extends DatedPrice> {
  start: Date
  end: Date
  /** The price in force per meter id; a meter without one costs nothing in this part. */
  prices: Map<string, P>
}

const startOf = (p: DatedPrice) => p.start_date?.getTime() ?? -Infinity
const holds = (p: DatedPrice, t: number) => startOf(p) <= t && t < (p.end_date?.getTime() ?? Infinity)

/** Whether `a` is preferred over `b` at an instant both hold: the later start, then the newer price. */
const supersedes = (a: DatedPrice, b: DatedPrice) => startOf(a) > startOf(b) || (startOf(a) === startOf(b) && (a.created_at.getTime() > b.created_at.getTime() || (a.created_at.getTime() === b.created_at.getTime() && a.id > b.id)))

/** The prices in force at instant `t`, per meter. */
export function pricesAt<P extends DatedPrice>(prices: readonly P[], t: number): Map<string, P> {
  const out = new Map<string, P>()
  for (const p of prices) {
    if (!p.meter_id || !holds(p, t)) continue
    const current = out.get(p.meter_id)
    if (!current || supersedes(p, current)) out.set(p.meter_id, p)
  }
  return out
}

const sameChoice = <P extends DatedPrice>(a: Map<string, P>, b: Map<string, P>) => a.size === b.size && [...a].every(([m, p]) => b.get(m)?.id === p.id)

/** [start, end) cut where any meter's price in force changes; adjacent parts with the same prices are one. */
export function costParts<P extends DatedPrice>(prices: readonly P[], start: Date, end: Date): CostPart<P>[] {
  const s = start.getTime()
  const e = end.getTime()
  if (!(e > s)) throw new RangeError('costParts: end must be after start')
  const cuts = new Set<number>([s, e])
  for (const p of prices) for (const d of [p.start_date, p.end_date]) if (d && d.getTime() > s && d.getTime() < e) cuts.add(d.getTime())
  const points = [...cuts].sort((a, b) => a - b)
  const parts: CostPart<P>[] = []
  for (let i = 0; i + 1 < points.length; i++) {
    const chosen = pricesAt(prices, points[i])
    const last = parts.at(-1)
    if (last && sameChoice(last.prices, chosen)) last.end = new Date(points[i + 1])
    else parts.push({ start: new Date(points[i]), end: new Date(points[i + 1]), prices: chosen })
  }
  return parts
}
