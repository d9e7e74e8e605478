// Event properties keep numbers exact. JSON.parse turns every number into a double, which is exact for
// at most 15 significant digits; a body holding a longer number is parsed again losslessly, and such
// numbers are kept as decimal strings (meters read numeric strings like numbers).
import { isSafeNumber, parse } from 'lossless-json'

// A run of 16 or more digits (a dot allowed among them) or an exponent: a number JSON.parse may round.
const RISKY = /\d(?:\.?\d){15}|\d[eE]/

export function exactJson(raw: string | undefined, parsed: unknown): unknown {
  if (raw === undefined || !RISKY.test(raw)) return parsed
  return parse(raw, null, (text: string) => (isSafeNumber(text) ? Number(text) : text))
}
