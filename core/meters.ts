// Meters: which events a meter counts (event name and property filters) and the exact value each
// matching event contributes. Pure; the batch writer and the backfill both resolve events here, so a
// live event and a backfilled one yield the same row.
import { D, type Decimal } from './money.ts'
import { ExpressionSkip, meterExpression } from './meter-expression.ts'
import type { UsageEvent } from './events.ts'
import type { WindowSize } from './periods.ts'

export const AGGREGATION_TYPES = ['COUNT', 'SUM', 'AVG', 'MIN', 'MAX', 'COUNT_UNIQUE', 'LATEST', 'SUM_WITH_MULTIPLIER', 'WEIGHTED_SUM'] as const
export type AggregationType = (typeof AGGREGATION_TYPES)[number]

export interface MeterFilter {
  key: string
  values: string[]
}

interface Aggregation {
  type: AggregationType
  /** The property aggregated; required for every type but COUNT. */
  field?: string
  /** SUM_WITH_MULTIPLIER only, a decimal string. */
  multiplier?: string
  /** One property: values are aggregated per group, then the groups are summed. */
  groupBy?: string
  /** Aggregate per bucket of this size; a window's value is the sum of its buckets. */
  bucketSize?: WindowSize
  /** Computes each event's value from its properties instead of reading `field` (core/meter-expression.ts). */
  expression?: string
}

/** What resolution needs of a meter: its id, the revision of its filters, the rules. */
export interface MeterRules {
  id: string
  revision: number
  eventName: string
  filters: MeterFilter[]
  aggregation: Aggregation
}

export interface UsageRow {
  meterId: string
  revision: number
  /** Exact decimal string, at most VALUE_SCALE places. */
  value: string
  groupValue: string
  uniqueValue: string
}

/** meter_usage.value is Decimal(38, 12): 26 integer digits, 12 places. */
const VALUE_SCALE = 12
const VALUE_LIMIT = new D('1e26')
const NUMERIC = /^\s*-?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/

export const needsField = (type: AggregationType): boolean => type !== 'COUNT'
/** The types that aggregate a number per event, which an expression may compute. */
export const takesExpression = (type: AggregationType): boolean => type !== 'COUNT' && type !== 'COUNT_UNIQUE'

/** A property value as filters and group keys compare it: strings as they are, numbers and booleans as JSON writes them. */
function propertyText(value: unknown): string | undefined {
  if (typeof value === 'string') return value
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  return undefined
}

/** A JSON number or a numeric string as an exact Decimal; undefined when it is neither or does not fit storage. */
export function numericValue(value: unknown): Decimal | undefined {
  let d: Decimal
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return undefined
    d = new D(String(value))
  } else if (typeof value === 'string' && NUMERIC.test(value)) {
    d = new D(value.trim())
  } else return undefined
  if (d.abs().gte(VALUE_LIMIT) || d.decimalPlaces() > VALUE_SCALE) return undefined
  return d
}

export function matches(meter: Pick<MeterRules, 'eventName' | 'filters'>, event: Pick<UsageEvent, 'eventName' | 'properties'>): boolean {
  if (event.eventName !== meter.eventName) return false
  for (const f of meter.filters) {
    const text = propertyText(event.properties[f.key])
    if (text === undefined || !f.values.includes(text)) return false
  }
  return true
}

/** Built whole rather than spread from a shared base: this runs once per event and meter. */
const usageRow = (meter: MeterRules, groupValue: string, value: string, uniqueValue: string) => ({ row: { meterId: meter.id, revision: meter.revision, value, groupValue, uniqueValue } })

/**
 * The row a matching event contributes to a meter, or a reason it contributes none: an event without
 * the aggregated property (or with a value that is not a number) is counted by no value meter.
 */
export function resolveUsage(meter: MeterRules, event: Pick<UsageEvent, 'eventName' | 'properties'>): { row: UsageRow } | { skip: string } | undefined {
  if (!matches(meter, event)) return undefined
  const { type, field, groupBy } = meter.aggregation
  const groupValue = groupBy ? (propertyText(event.properties[groupBy]) ?? '') : ''
  if (type === 'COUNT') return usageRow(meter, groupValue, '1', '')
  if (meter.aggregation.expression !== undefined) return computedRow(meter, groupValue, event.properties)
  const raw = event.properties[field!]
  if (type === 'COUNT_UNIQUE') {
    const text = propertyText(raw)
    if (text === undefined) return { skip: `property ${field} is missing` }
    return usageRow(meter, groupValue, '1', text)
  }
  // Most usage values are integers, whose text is already exact: no Decimal on the batch writer's hot path.
  if (typeof raw === 'number' && Number.isSafeInteger(raw)) return usageRow(meter, groupValue, String(raw), '')
  const value = numericValue(raw)
  if (value === undefined) {
    return { skip: raw === undefined ? `property ${field} is missing` : `property ${field} is not a number with at most ${VALUE_SCALE} decimal places below 1e26` }
  }
  return usageRow(meter, groupValue, value.toFixed(), '')
}

/** The row of a meter whose expression computes the value; an event it yields no number for contributes none. */
function computedRow(meter: MeterRules, groupValue: string, properties: Record<string, unknown>): { row: UsageRow } | { skip: string } {
  let value: Decimal
  try {
    value = meterExpression(meter.aggregation.expression!)(properties)
  } catch (err) {
    if (err instanceof ExpressionSkip) return { skip: `expression: ${err.message}` }
    throw err
  }
  if (value.abs().gte(VALUE_LIMIT)) return { skip: 'expression: the value is not below 1e26' }
  return usageRow(meter, groupValue, value.toDecimalPlaces(VALUE_SCALE, D.ROUND_HALF_EVEN).toFixed(), '')
}

/** Every row one event contributes to the given meters. */
export function resolveEvent(meters: readonly MeterRules[], event: Pick<UsageEvent, 'eventName' | 'properties'>): { rows: UsageRow[]; skipped: { meterId: string; reason: string }[] } {
  const rows: UsageRow[] = []
  const skipped: { meterId: string; reason: string }[] = []
  for (const m of meters) {
    const r = resolveUsage(m, event)
    if (!r) continue
    if ('row' in r) rows.push(r.row)
    else skipped.push({ meterId: m.id, reason: r.skip })
  }
  return { rows, skipped }
}
