import { createHmac } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { signatureHeader, verifySignature } from './signatures.ts'

const SECRET = 'whsec_test_secret'
const BODY = '{"id":"evt_1","type":"invoice.paid"}'
const T = 1_715_342_400 // 2024-05-10T12:00:00Z

describe('signatureHeader', () => {
  it('is t=<seconds>,v1=<hex HMAC-SHA256 of "t.body">', () => {
    // Computed independently of the module: the HMAC over "1715342400.{body}".
    const hex = createHmac('sha256', SECRET).update(`${T}.${BODY}`).digest('hex')
    expect(signatureHeader(SECRET, T, BODY)).toBe(`t=${T},v1=${hex}`)
  })
})

describe('verifySignature', () => {
  const good = signatureHeader(SECRET, T, BODY)

  it.each<[string, string | undefined, string, string, number, unknown]>([
    ['a good signature now', good, BODY, SECRET, T, { ok: true, timestamp: T }],
    ['a good signature 300 s later (the tolerance)', good, BODY, SECRET, T + 300, { ok: true, timestamp: T }],
    ['a good signature 300 s early (clock skew)', good, BODY, SECRET, T - 300, { ok: true, timestamp: T }],
    ['301 s later: stale', good, BODY, SECRET, T + 301, { ok: false, reason: 'stale' }],
    ['no header', undefined, BODY, SECRET, T, { ok: false, reason: 'missing' }],
    ['an empty header', '', BODY, SECRET, T, { ok: false, reason: 'missing' }],
    ['no timestamp', good.replace(/^t=\d+,/, ''), BODY, SECRET, T, { ok: false, reason: 'malformed' }],
    ['no v1', `t=${T},v0=abc`, BODY, SECRET, T, { ok: false, reason: 'malformed' }],
    ['a changed body', good, BODY.replace('evt_1', 'evt_2'), SECRET, T, { ok: false, reason: 'mismatch' }],
    ['another secret', good, BODY, 'whsec_other', T, { ok: false, reason: 'mismatch' }],
    ['a changed timestamp', good.replace(`t=${T}`, `t=${T + 1}`), BODY, SECRET, T, { ok: false, reason: 'mismatch' }],
    ['a stale forgery is a mismatch, not stale', signatureHeader('whsec_other', T - 1000, BODY), BODY, SECRET, T, { ok: false, reason: 'mismatch' }],
  ])('%s', (_, header, body, secret, now, expected) => expect(verifySignature(header, body, secret, now)).toEqual(expected))

  it('accepts any one of several v1 signatures (a secret being rolled)', () => {
    const old = signatureHeader('whsec_old', T, BODY).split(',')[1]
    expect(verifySignature(`${good},${old}`, BODY, SECRET, T)).toEqual({ ok: true, timestamp: T })
    expect(verifySignature(`t=${T},${old}`, BODY, SECRET, T)).toEqual({ ok: false, reason: 'mismatch' })
  })
})
