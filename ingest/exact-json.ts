// Event properties keep numbers exact. JSON.parse turns every number into a double, which is exact for
// at most 15 significant digits; a body holding a longer number is parsed again losslessly, and such
// numbers are kept as decimal strings (meters read numeric strings like numbers).
import { isSafeNumber, parse } from 'lossless-json'

// A number JSON.parse may round: 16 or more digits (a dot allowed among them) or an exponent. Tried only where a
// number can start (after `:`, `[` or `,`): the scan costs less than half as much, and long digit runs inside
// strings (ids) no longer send a body down the slow path.
const RISKY = /[:,[]\s*-?\d(?:\.?\d){15}|[:,[]\s*-?\d+(?:\.\d*)?[eE]/

export function exactJson(raw: string | undefined, parsed: unknown): unknown {
  if (raw === undefined || !RISKY.test(raw)) return parsed
  return parse(raw, null, (text: string) => (isSafeNumber(text) ? Number(text) : text))
}
