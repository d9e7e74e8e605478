// Outbound webhooks, the pure part: the event types the service announces and the Standard Webhooks
// signature (the scheme Svix signs with, so Flexprice clients verify with the library they have):
// `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, keyed with the base64-decoded bytes of `whsec_…`.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

/** The event_type values of the specification's Events section; endpoint filters and settings are checked against it. */
export const EVENT_TYPES: readonly string[] = [
  'subscription.created', 'subscription.draft.created', 'subscription.activated', 'subscription.updated', 'subscription.paused',
  'subscription.cancelled', 'subscription.resumed', 'subscription.renewal.due',
  'subscription.phase.created', 'subscription.phase.updated', 'subscription.phase.deleted',
  'feature.created', 'feature.updated', 'feature.deleted', 'feature.wallet_balance.alert',
  'entitlement.created', 'entitlement.updated', 'entitlement.deleted',
  'wallet.created', 'wallet.updated', 'wallet.terminated', 'wallet.transaction.created', 'wallet.credit_balance.dropped',
  'wallet.credit_balance.recovered', 'wallet.ongoing_balance.dropped', 'wallet.ongoing_balance.recovered',
  // Spend control (issue 35): credit holds and the spending limit.
  'wallet.hold.created', 'wallet.hold.settled', 'wallet.hold.released', 'wallet.hold.expired', 'subscription.spending_limit.reached',
  'payment.created', 'payment.updated', 'payment.failed', 'payment.success', 'payment.pending',
  'customer.created', 'customer.updated', 'customer.deleted',
  'invoice.update.finalized', 'invoice.update.payment', 'invoice.update.voided', 'invoice.update', 'invoice.payment.overdue',
  'invoice.communication.triggered', 'invoice.dunning.step', 'invoice.dunning.resolved',
  'credit_note.created', 'credit_note.updated',
]

const PREFIX = 'whsec_'

/** A new signing secret: 256 random bits. */
export const newSigningSecret = (): string => PREFIX + randomBytes(32).toString('base64')

/** The HMAC key of a secret: the bytes its base64 part decodes to (Standard Webhooks allows 24 to 64). */
export function secretKey(secret: string): Buffer {
  const encoded = secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret
  const key = Buffer.from(encoded, 'base64')
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || key.length < 24 || key.length > 64) {
    throw new RangeError('a webhook secret is whsec_ followed by 24 to 64 base64-encoded bytes')
  }
  return key
}

const digest = (key: Buffer, id: string, timestamp: number, body: string): Buffer =>
  createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest()

/** One signature entry: `v1,<base64>`. `timestamp` is in whole seconds since the epoch. */
export const sign = (secret: string, id: string, timestamp: number, body: string): string =>
  `v1,${digest(secretKey(secret), id, timestamp, body).toString('base64')}`

/**
 * The headers of one delivery. Several secrets (during a rotation) give several space-separated
 * signatures; a receiver accepts any. The svix-* twins let receivers verify with the Svix library.
 */
export function signedHeaders(secrets: readonly string[], id: string, timestamp: number, body: string): Record<string, string> {
  const signature = secrets.map((s) => sign(s, id, timestamp, body)).join(' ')
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signature,
    'svix-id': id,
    'svix-timestamp': String(timestamp),
    'svix-signature': signature,
  }
}

/**
 * What a receiver does: the timestamp lies within `toleranceSeconds` of `now` (replays are refused)
 * and one `v1` entry matches, compared in constant time.
 */
export function verify(
  secret: string,
  headers: { id: string; timestamp: string; signature: string },
  body: string,
  now: Date,
  toleranceSeconds = 300,
): boolean {
  if (!/^\d{1,12}$/.test(headers.timestamp)) return false
  const timestamp = Number(headers.timestamp)
  if (Math.abs(now.getTime() / 1000 - timestamp) > toleranceSeconds) return false
  const expected = digest(secretKey(secret), headers.id, timestamp, body)
  return headers.signature.split(' ').some((entry) => {
    const [version, value] = entry.split(',', 2)
    const given = Buffer.from(value ?? '', 'base64')
    return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected)
  })
}
