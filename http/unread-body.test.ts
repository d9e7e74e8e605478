// A body far over MAX_BODY_BYTES: the client reads the 413, not EPIPE or a reset, whether it reads the answer while
// sending (Node's fetch) or only once it has written the whole body (a plain socket, as many simple clients do;
// without the drain of http/unread-body.ts it saw EPIPE and no answer at 60 MiB).
import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../test/harness.ts'

let h: Harness

beforeAll(async () => {
  h = await startHarness({ env: { MAX_BODY_BYTES: String(5 * 1024 * 1024) } })
})
afterAll(() => h?.stop())

const MiB = 1024 * 1024
let n = 0
const post = (bytes: number) =>
  fetch(`${h.baseUrl}/v1/customers`, {
    method: 'POST',
    headers: { 'x-api-key': h.key, 'content-type': 'application/json' },
    body: `{"external_id":"c-${++n}","name":"${'x'.repeat(bytes)}"}`,
  })

/** Writes the request and the whole body, then reads what came back until the server closes. */
const writeThenRead = (bytes: number) =>
  new Promise<string>((resolve, reject) => {
    const socket = connect(Number(new URL(h.baseUrl).port), '127.0.0.1')
    let answer = ''
    socket.on('data', (d) => (answer += d))
    socket.on('error', reject)
    socket.on('close', () => resolve(answer))
    socket.write(`POST /v1/customers HTTP/1.1\r\nhost: x\r\nx-api-key: ${h.key}\r\ncontent-type: application/json\r\ncontent-length: ${bytes}\r\n\r\n`)
    socket.write(Buffer.alloc(bytes, 'x'))
  })

describe('a body over the size limit', () => {
  it.each([6, 60])('answers 413 to a %i MiB body sent with fetch, and the service goes on answering', async (mib) => {
    const res = await post(mib * MiB)
    expect(res.status).toBe(413)
    expect(res.headers.get('connection')).toBe('close')
    expect(await res.json()).toMatchObject({ code: 'validation_error', http_status_code: 413, details: { body: 'exceeds the size limit' } })
    expect((await post(10)).status).toBe(201)
  })

  it('answers 413 to a client that writes all 60 MiB before reading', async () => {
    const answer = await writeThenRead(60 * MiB)
    expect(answer).toMatch(/^HTTP\/1\.1 413 /)
    expect(answer).toContain('"http_status_code":413')
  })
})
