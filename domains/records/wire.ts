// The one place records become JSON: decimals as plain decimal strings (never exponent notation,
// which Decimal#toJSON gives for 1e-7), times as ISO 8601 UTC. Rows are snake_case already.
import { D } from '../../core/money.ts'

export type Wire = string | number | boolean | null | Wire[] | { [key: string]: Wire }

export function toWire(value: unknown): Wire {
  if (value === null || value === undefined) return null
  if (D.isDecimal(value)) return (value as InstanceType<typeof D>).toFixed()
  if (value instanceof Date) return value.toISOString()
  if (Array.isArray(value)) return value.map(toWire)
  if (typeof value === 'object') {
    const out: { [key: string]: Wire } = {}
    for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = toWire(v)
    return out
  }
  return value as Wire
}
