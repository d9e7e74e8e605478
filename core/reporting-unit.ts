// A feature's reporting unit (`reporting_unit {unit_singular, unit_plural, conversion_rate}`): usage shown in
// a bigger unit people read, e.g. 1500000 tokens with conversion_rate 1000000 and unit "M tokens" as
// "1.5 M tokens". Display only: billing keeps counting the meter's own quantity.
import { D, type Decimal } from './money.ts'

export interface ReportingUnit {
  unit_singular?: string
  unit_plural?: string
  conversion_rate: number
}

/** Places kept: a millionth of the reporting unit, so usage counted in whole units stays exact up to a conversion rate of 1000000. */
const PLACES = 6

/**
 * quantity ÷ conversion_rate, half-up to at most 6 places with trailing zeros dropped, then the unit's name:
 * singular for exactly 1, plural otherwise (each falls back to the other; neither gives the bare number).
 */
export function inReportingUnit(quantity: Decimal, unit: ReportingUnit): string {
  // The rate arrives as a JSON number; its shortest decimal text is what the user wrote (1000000, 0.001).
  const value = new D(quantity).div(new D(String(unit.conversion_rate))).toDecimalPlaces(PLACES, D.ROUND_HALF_UP)
  const name = value.eq(1) ? (unit.unit_singular ?? unit.unit_plural) : (unit.unit_plural ?? unit.unit_singular)
  const text = value.isZero() ? '0' : value.toFixed()
  return name ? `${text} ${name}` : text
}
