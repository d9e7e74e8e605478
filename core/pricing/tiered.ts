// TIERED: tiers are consecutive ranges of quantity. Tier i covers (up_to[i-1], up_to[i]]
// (the first starts at 0), so `up_to` is inclusive: 100 units with up_to 100 fall in that
// tier, and 100.5 units do not. The last tier, up_to null, has no upper bound.
//
// Quantity 0 costs 0 in both modes, even when the first tier has a flat_amount: no usage,
// no charge. A tier's flat_amount is billed only when some quantity falls in it.
import { D, parseNonNegative, sumMoney, type Decimal } from '../money.ts'

export type Tier = { up_to: number | null; unit_amount: string; flat_amount?: string | null }
export type TierMode = 'VOLUME' | 'SLAB'

/** One priced tier; amounts unrounded. `index` is the tier's position in the price's tiers. */
export type TierLine = { index: number; quantity: Decimal; unit_amount: Decimal; flat_amount: Decimal; amount: Decimal }

type ParsedTier = { up_to: number | null; unit_amount: Decimal; flat_amount: Decimal }

/** Checks the tiers and parses their amounts; a RangeError names the first bad tier. */
export function parseTiers(tiers: Tier[] | undefined): ParsedTier[] {
  if (!Array.isArray(tiers) || tiers.length === 0) throw new RangeError('tiers: at least one tier is required')
  let prev = 0
  return tiers.map((t, i) => {
    const last = i === tiers.length - 1
    if (t.up_to === null) {
      if (!last) throw new RangeError(`tiers[${i}]: only the last tier may have up_to null`)
    } else {
      if (last) throw new RangeError(`tiers[${i}]: the last tier must have up_to null, so every quantity has a price`)
      if (!Number.isInteger(t.up_to) || t.up_to <= prev) throw new RangeError(`tiers[${i}]: up_to must be an integer greater than ${prev}`)
      prev = t.up_to
    }
    return {
      up_to: t.up_to,
      unit_amount: parseNonNegative(t.unit_amount, `tiers[${i}].unit_amount`),
      flat_amount: t.flat_amount == null ? new D(0) : parseNonNegative(t.flat_amount, `tiers[${i}].flat_amount`),
    }
  })
}

function line(index: number, t: ParsedTier, quantity: Decimal): TierLine {
  return { index, quantity, unit_amount: t.unit_amount, flat_amount: t.flat_amount, amount: t.unit_amount.times(quantity).plus(t.flat_amount) }
}

export function tieredAmount(tiers: Tier[] | undefined, mode: TierMode | undefined, quantity: Decimal): { amount: Decimal; tiers: TierLine[] } {
  const parsed = parseTiers(tiers)
  const q = new D(quantity)
  const lines: TierLine[] = []
  if (mode === 'VOLUME') {
    // The whole quantity at the one tier it falls in.
    const i = parsed.findIndex((t) => t.up_to === null || q.lte(t.up_to))
    if (q.gt(0)) lines.push(line(i, parsed[i], q))
  } else if (mode === 'SLAB') {
    // Each tier prices only the part of the quantity inside its range.
    let from = new D(0)
    for (const [i, t] of parsed.entries()) {
      if (q.lte(from)) break
      const to = t.up_to === null ? q : D.min(q, t.up_to)
      lines.push(line(i, t, to.minus(from)))
      from = to
    }
  } else {
    throw new RangeError("tier_mode must be 'VOLUME' or 'SLAB'")
  }
  return { amount: sumMoney(lines.map((l) => l.amount)), tiers: lines }
}
