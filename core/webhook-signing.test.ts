import { describe, expect, it } from 'vitest'
import { newSigningSecret, secretKey, sign, signedHeaders, verify } from './webhook-signing.ts'

// Key bytes 00 01 … 1f. Expected value computed in the shell:
//   printf '%s' 'evt_0001.1700000000.{"event_type":"customer.created","customer":{"id":"cus_1"}}' \
//     | openssl dgst -sha256 -mac HMAC -macopt hexkey:000102…1f -binary | base64
const SECRET = 'whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8='
const BODY = '{"event_type":"customer.created","customer":{"id":"cus_1"}}'
const SIGNATURE = 'v1,JpiyYg6KgYmmUVN3Keynj0zz3mI+lVOTlr0toSa74L0='
const AT = new Date(1_700_000_000 * 1000)

describe('webhook signing', () => {
  it('signs "id.timestamp.body" with the decoded secret bytes', () => {
    expect(sign(SECRET, 'evt_0001', 1_700_000_000, BODY)).toBe(SIGNATURE)
  })

  it('matches the published Standard Webhooks example, so Svix and standard-webhooks libraries verify it', () => {
    expect(sign('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}')).toBe(
      'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    )
  })

  it('sends webhook-* and svix-* headers; during a rotation one signature per secret', () => {
    const other = 'whsec_' + Buffer.alloc(32, 7).toString('base64')
    const headers = signedHeaders([SECRET, other], 'evt_0001', 1_700_000_000, BODY)
    expect(headers['webhook-id']).toBe('evt_0001')
    expect(headers['webhook-timestamp']).toBe('1700000000')
    expect(headers['webhook-signature']).toBe(`${SIGNATURE} ${sign(other, 'evt_0001', 1_700_000_000, BODY)}`)
    expect(headers['svix-signature']).toBe(headers['webhook-signature'])
    const received = { id: 'evt_0001', timestamp: '1700000000', signature: headers['webhook-signature'] }
    expect(verify(SECRET, received, BODY, AT)).toBe(true)
    expect(verify(other, received, BODY, AT)).toBe(true)
  })

  it.each([
    ['a changed body', { id: 'evt_0001', timestamp: '1700000000', signature: SIGNATURE }, BODY.replace('cus_1', 'cus_2'), AT],
    ['another id', { id: 'evt_0002', timestamp: '1700000000', signature: SIGNATURE }, BODY, AT],
    ['another timestamp', { id: 'evt_0001', timestamp: '1700000001', signature: SIGNATURE }, BODY, new Date(1_700_000_001_000)],
    ['a replay 301 s later', { id: 'evt_0001', timestamp: '1700000000', signature: SIGNATURE }, BODY, new Date(1_700_000_301_000)],
    ['an unknown version', { id: 'evt_0001', timestamp: '1700000000', signature: SIGNATURE.replace('v1,', 'v2,') }, BODY, AT],
    ['a timestamp that is no number', { id: 'evt_0001', timestamp: '17e8', signature: SIGNATURE }, BODY, AT],
  ])('refuses %s', (_case, headers, body, now) => {
    expect(verify(SECRET, headers, body, now)).toBe(false)
  })

  it('accepts a delivery within the five-minute tolerance', () => {
    expect(verify(SECRET, { id: 'evt_0001', timestamp: '1700000000', signature: SIGNATURE }, BODY, new Date(1_700_000_300_000))).toBe(true)
  })

  it('makes 32-byte secrets and refuses keys that are not 24 to 64 base64 bytes', () => {
    const secret = newSigningSecret()
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
    expect(secretKey(secret)).toHaveLength(32)
    expect(newSigningSecret()).not.toBe(secret)
    expect(() => secretKey('whsec_' + Buffer.alloc(16).toString('base64'))).toThrow(RangeError)
    expect(() => secretKey('whsec_not base64!')).toThrow(RangeError)
  })
})
