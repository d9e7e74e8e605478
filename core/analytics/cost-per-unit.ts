// The analytics answer's custom_analytics: one figure per feature, derived from its usage and cost — what a unit
// of the feature cost over the range (Flexprice's one rule, revenue per minute, is this for a feature counted in
// milliseconds; the spec does not say what the list holds, docs/decisions.md). The unit is the feature's
// reporting unit when it has one ("cost per M tokens"), else its own unit.
import { D, sumMoney, type Decimal } from '../money.ts'
import type { ReportingUnit } from '../reporting-unit.ts'

export interface FeatureFigures {
  featureId: string
  featureName: string
  unitSingular: string | null
  reportingUnit: ReportingUnit | null
  usage: string
  cost: Decimal
}

export interface CustomAnalytic {
  id: 'cost-per-unit'
  name: string
  feature_name: string
  type: 'feature'
  value: Decimal
}

/** Places kept: a cost per token is often a fraction of a cent. */
const PLACES = 10

/**
 * Per feature (its items added up, in the order first seen): total cost ÷ total usage in the feature's unit, half up
 * to 10 places. A feature without usage has no figure (there is nothing to divide by).
 */
export function costPerUnit(items: FeatureFigures[]): CustomAnalytic[] {
  const byFeature = new Map<string, FeatureFigures[]>()
  for (const item of items) byFeature.set(item.featureId, [...(byFeature.get(item.featureId) ?? []), item])
  return [...byFeature.values()].flatMap((group) => {
    const [first] = group
    const rate = first.reportingUnit ? new D(String(first.reportingUnit.conversion_rate)) : new D(1)
    const usage = sumMoney(group.map((g) => new D(g.usage))).div(rate)
    if (usage.isZero()) return []
    const unit = first.reportingUnit?.unit_singular ?? first.reportingUnit?.unit_plural ?? first.unitSingular ?? 'unit'
    const value = sumMoney(group.map((g) => g.cost)).div(usage).toDecimalPlaces(PLACES, D.ROUND_HALF_UP)
    return [{ id: 'cost-per-unit' as const, name: `Cost per ${unit}`, feature_name: first.featureName, type: 'feature' as const, value }]
  })
}
