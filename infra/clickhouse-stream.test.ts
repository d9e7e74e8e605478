// ClickHouse.streamRows and streamCsv: a SELECT's rows (or its CSV) as they come. chdb/connection answers
// `client.query(...).stream()` from a result it has read whole, so an export of millions of rows would sit in memory; these
// read chunk by chunk, stop the query when the reader stops or aborts, and leave the other connections free meanwhile.
import { ClickHouseError } from '@clickhouse/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { testConfig } from '../test/harness.ts'
import { openClickHouse, type ClickHouse } from './clickhouse.ts'

let ch: ClickHouse
beforeAll(async () => {
  ch = await openClickHouse(testConfig())
  await ch.client.command({ query: 'CREATE TABLE IF NOT EXISTS stream_rows (k String, n UInt64) ENGINE = MergeTree ORDER BY k' })
})
afterAll(() => ch?.close())

describe('streamRows', () => {
  it('yields every row of a result larger than one chunk, 64-bit integers as text', async () => {
    let count = 0
    let total = 0n
    for await (const row of ch.streamRows<{ n: string }>({ query: 'SELECT number AS n FROM numbers(300000)' })) {
      count++
      total += BigInt(row.n)
    }
    expect(count).toBe(300_000)
    expect(total).toBe((299_999n * 300_000n) / 2n)
  })

  it('binds query parameters: strings, arrays and instants', async () => {
    const rows = []
    for await (const row of ch.streamRows<{ s: string; a: string[]; t: string }>({
      query: "SELECT {s:String} AS s, {a:Array(String)} AS a, toString({t:DateTime64(3, 'UTC')}) AS t",
      query_params: { s: "it's", a: ['x', 'y\\z'], t: '2024-03-01 10:00:00.123' },
    })) rows.push(row)
    expect(rows).toEqual([{ s: "it's", a: ['x', 'y\\z'], t: '2024-03-01 10:00:00.123' }])
  })

  it('streams a result it could never hold: leaving the loop stops the query', async () => {
    const started = performance.now()
    let count = 0
    // A trillion rows: a result read whole would never come back.
    for await (const _row of ch.streamRows({ query: 'SELECT number FROM numbers(1000000000000)' })) {
      if (++count === 200_000) break
    }
    expect(count).toBe(200_000)
    expect(performance.now() - started).toBeLessThan(20_000)
    // The engine is free again.
    expect(await (await ch.client.query({ query: 'SELECT 1 AS one', format: 'JSONEachRow' })).json()).toEqual([{ one: 1 }])
  })

  it('stops on abort with an AbortError, the query with it', async () => {
    const abort = new AbortController()
    let count = 0
    const reading = (async () => {
      for await (const _row of ch.streamRows({ query: 'SELECT number FROM numbers(1000000000000)', signal: abort.signal })) {
        if (++count === 100_000) abort.abort()
      }
    })()
    await expect(reading).rejects.toMatchObject({ name: 'AbortError' })
    // The reader stops at once, the row after the abort never comes.
    expect(count).toBe(100_000)
    // An already aborted signal starts nothing.
    const done = new AbortController()
    done.abort()
    await expect((async () => {
      for await (const _row of ch.streamRows({ query: 'SELECT 1', signal: done.signal })) void 0
    })()).rejects.toMatchObject({ name: 'AbortError' })
  })

  it('leaves the other connections free while a stream waits for its reader', async () => {
    const rows = ch.streamRows<{ n: string }>({ query: 'SELECT number AS n FROM numbers(1000000)' })[Symbol.asyncIterator]()
    expect((await rows.next()).value).toEqual({ n: '0' })
    // Inserts and reads go on while the stream is open and paused.
    await ch.insertRaw({ table: 'stream_rows', format: 'JSONEachRow', rows: '{"k":"a","n":1}', settings: {} })
    const read = await (await ch.client.query({ query: 'SELECT toString(count()) AS c FROM stream_rows', format: 'JSONEachRow' })).json()
    expect(read).toEqual([{ c: '1' }])
    expect((await rows.next()).value).toEqual({ n: '1' })
    await rows.return?.(undefined)
  })

  it("reports an error raised while streaming as a ClickHouseError with ClickHouse's code", async () => {
    const reading = (async () => {
      for await (const _row of ch.streamRows({ query: "SELECT throwIf(number = 150000, 'boom') FROM numbers(300000)" })) void 0
    })()
    const err = await reading.catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ClickHouseError)
    expect(err).toMatchObject({ code: '395' })
    const bad = await (async () => {
      for await (const _row of ch.streamRows({ query: 'SELECT nope FROM numbers(1)' })) void 0
    })().catch((e: unknown) => e)
    expect(bad).toBeInstanceOf(ClickHouseError)
    expect(bad).toMatchObject({ code: '47' })
  })
})

describe('streamCsv', () => {
  it("passes ClickHouse's CSV through: strings quoted, CRLF, ISO instants, exact row counts across chunks", async () => {
    const decoder = new TextDecoder()
    let text = ''
    let rows = 0
    let pieces = 0
    for await (const piece of ch.streamCsv({
      query: "SELECT number AS n, if(number = 1, 'a \"q\"\r\nb', 'x') AS s, formatDateTime(toDateTime64('2024-03-01 10:00:00.5', 3, 'UTC'), '%Y-%m-%dT%H:%i:%S.%fZ') AS t FROM numbers({count:UInt64})",
      query_params: { count: 300000 },
    })) {
      text += decoder.decode(piece.bytes, { stream: true })
      rows += piece.rows
      pieces++
    }
    expect(rows).toBe(300_000)
    expect(pieces).toBeGreaterThan(1)
    expect(text.startsWith('0,"x","2024-03-01T10:00:00.500Z"\r\n1,"a ""q""\r\nb","2024-03-01T10:00:00.500Z"\r\n2,')).toBe(true)
    expect(text.endsWith('299999,"x","2024-03-01T10:00:00.500Z"\r\n')).toBe(true)
  })

  it('stops on abort', async () => {
    const abort = new AbortController()
    let pieces = 0
    const read = (async () => {
      for await (const _ of ch.streamCsv({ query: 'SELECT number FROM numbers(1000000000000)', signal: abort.signal })) if (++pieces === 3) abort.abort()
    })()
    await expect(read).rejects.toThrow()
    expect(pieces).toBe(3)
  })
})
