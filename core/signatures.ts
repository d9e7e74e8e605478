// Signatures of inbound provider notifications, in Stripe's scheme: the header
// `Stripe-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>[,v1=…]` (several v1
// while a secret is rolled). A notification is accepted when one v1 matches (compared in constant time)
// and t lies within the tolerance of now, which bounds replays of a captured request.
import { createHmac, timingSafeEqual } from 'node:crypto'

const SIGNATURE_TOLERANCE_SECONDS = 300

export type SignatureCheck = { ok: true; timestamp: number } | { ok: false; reason: 'missing' | 'malformed' | 'mismatch' | 'stale' }

const sign = (secret: string, timestamp: number, body: string): Buffer => createHmac('sha256', secret).update(`${timestamp}.${body}`, 'utf8').digest()

/** The header a provider would send for `body` at `timestamp` (unix seconds). */
export function signatureHeader(secret: string, timestamp: number, body: string): string {
  return `t=${timestamp},v1=${sign(secret, timestamp, body).toString('hex')}`
}

/** Checks `header` against the raw body, the secret and now (unix seconds). */
export function verifySignature(header: string | undefined, body: string, secret: string, now: number, tolerance = SIGNATURE_TOLERANCE_SECONDS): SignatureCheck {
  if (!header) return { ok: false, reason: 'missing' }
  let timestamp: number | undefined
  const candidates: Buffer[] = []
  for (const part of header.split(',')) {
    const [key, value] = part.trim().split('=', 2)
    if (key === 't' && /^\d{1,12}$/.test(value ?? '')) timestamp = Number(value)
    else if (key === 'v1' && /^[0-9a-f]{64}$/i.test(value ?? '')) candidates.push(Buffer.from(value, 'hex'))
  }
  if (timestamp === undefined || candidates.length === 0) return { ok: false, reason: 'malformed' }
  const expected = sign(secret, timestamp, body)
  if (!candidates.some((c) => timingSafeEqual(c, expected))) return { ok: false, reason: 'mismatch' }
  // Checked after the signature, so an attacker learns nothing about the clock from an unsigned request.
  if (Math.abs(now - timestamp) > tolerance) return { ok: false, reason: 'stale' }
  return { ok: true, timestamp }
}
