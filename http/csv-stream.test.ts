// sendCsv on a started Koa server with the service's error handler, driven by a real HTTP client: rows arrive as CSV,
// a slow reader holds the source back, a client that leaves aborts the source, errors before and after the first byte.
import { request, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import Koa from 'koa'
import { parse } from 'csv-parse/sync'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AppError } from '../core/errors.ts'
import { csvPieces, type CsvValue } from '../core/csv.ts'
import { createLogger } from '../infra/logger.ts'
import { createMetrics } from '../infra/metrics.ts'
import { errorHandler } from './errors.ts'
import { sendCsv } from './csv-stream.ts'

const deps = { logger: createLogger('silent'), metrics: createMetrics() }
const columns = [{ name: 'n', kind: 'number' as const }, { name: 'text' }]

/** What the endless source did: rows made, whether its signal aborted, whether it finished. */
const endless = { made: 0, aborted: false, done: false }

const sources: Record<string, (signal: AbortSignal) => AsyncIterable<CsvValue[]>> = {
  async *small() {
    yield [1, 'plain']
    yield [-2.5, 'a, "quoted"\nline']
    yield [3, '=SUM(A1)']
  },
  async *endless(signal) {
    try {
      for (;;) {
        if (signal.aborted) {
          endless.aborted = true
          return
        }
        endless.made++
        // A real source waits on its engine now and then.
        if (endless.made % 1000 === 0) await new Promise((r) => setImmediate(r))
        yield [endless.made, 'x'.repeat(100)]
      }
    } finally {
      endless.done = true
    }
  },
  // eslint-disable-next-line require-yield
  async *refused() {
    throw new AppError('validation_error', 'end_time: must be after start_time', { end_time: 'must be after start_time' })
  },
  async *broken() {
    for (let i = 0; i < 20_000; i++) yield [i, 'row']
    throw new Error('the engine went away')
  },
}

let server: ReturnType<Koa['listen']>
let base: string

beforeAll(async () => {
  const app = new Koa()
  app.silent = true // the client that leaves resets its connection: Koa would print that
  app.use(errorHandler(deps.logger))
  app.use(async (ctx) => sendCsv(ctx, deps, { filename: 'usage 2026:01.csv', columns, pieces: (signal) => csvPieces(columns, sources[ctx.path.slice(1)](signal)) }))
  server = app.listen(0, '127.0.0.1')
  await new Promise((r) => server.once('listening', r))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => new Promise((r) => server.close(r)))

const counted = async (outcome: string) => (await deps.metrics.csvExports.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0
/** The server counts an export once its source is done with, which may be just after the client saw the end. */
async function countedSoon(outcome: string, expected: number): Promise<number> {
  for (let i = 0; i < 50 && (await counted(outcome)) !== expected; i++) await new Promise((r) => setTimeout(r, 20))
  return counted(outcome)
}

describe('sendCsv', () => {
  it('answers text/csv as an attachment: the header and every row, RFC 4180 quoted and neutralized', async () => {
    const res = await fetch(`${base}/small`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="usage 2026:01\.csv"/)
    expect(res.headers.get('transfer-encoding')).toBe('chunked')
    const text = await res.text()
    expect(text.startsWith('n,text\r\n')).toBe(true)
    expect(parse(text)).toEqual([
      ['n', 'text'],
      ['1', 'plain'],
      ['-2.5', 'a, "quoted"\nline'],
      ['3', "'=SUM(A1)"],
    ])
  })

  it('pulls rows only as fast as the client reads, and a client that leaves aborts the source', async () => {
    const before = await counted('aborted')
    const res = await new Promise<IncomingMessage>((resolve) => request(`${base}/endless`, resolve).end())
    expect(res.statusCode).toBe(200)
    res.pause()
    // Buffers fill (the socket's, the response's, a few 64 KiB pieces), then the source waits: its count stops moving.
    let held = -1
    for (let i = 0; i < 25 && endless.made !== held; i++) {
      held = endless.made
      await new Promise((r) => setTimeout(r, 200))
    }
    expect(endless.made).toBe(held)
    expect(held).toBeLessThan(100_000) // rows of ~105 bytes: a few MB at most, of an endless source
    res.destroy()
    for (let i = 0; i < 50 && !endless.done; i++) await new Promise((r) => setTimeout(r, 20))
    expect(endless.done).toBe(true)
    expect(endless.made).toBeLessThan(held + 2000)
    expect(await countedSoon('aborted', before + 1)).toBe(before + 1)
  })

  it('an error before the first row is the usual error body and status', async () => {
    const res = await fetch(`${base}/refused`)
    expect(res.status).toBe(400)
    expect(res.headers.get('content-type')).toMatch(/json/)
    expect(await res.json()).toMatchObject({ code: 'validation_error', http_status_code: 400, details: { end_time: 'must be after start_time' } })
  })

  it('an error after the first byte cuts the transfer, so the file cannot pass for complete', async () => {
    const before = await counted('failed')
    const res = await fetch(`${base}/broken`)
    expect(res.status).toBe(200)
    await expect(res.text()).rejects.toThrow()
    expect(await countedSoon('failed', before + 1)).toBe(before + 1)
  })
})
