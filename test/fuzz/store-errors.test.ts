// The net under validation: what Postgres itself refuses (real errors from the harness's engine) reaches
// the client as a 4xx with the error body when a value caused it, 409 when requests collided, 503 when the
// engine is away, and a 500 that quotes only the request id for our own mistakes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Context } from 'koa'
import { errorHandler } from '../../http/errors.ts'
import { startHarness, type Harness } from '../harness.ts'

let h: Harness

beforeAll(async () => {
  h = await startHarness({ roles: ['api'] })
})
afterAll(() => h?.stop())

/** What the error handler answers when a request fails with the error `work` throws. */
async function answer(work: () => Promise<unknown>): Promise<{ status: number; body: any; headers: Record<string, string> }> {
  const headers: Record<string, string> = {}
  const ctx = { status: 404, body: undefined as unknown, state: { requestId: 'req-1' }, req: { complete: true }, set: (k: string, v: string) => void (headers[k] = v) }
  await errorHandler(h.running.deps.logger)(ctx as unknown as Context, async () => {
    await work()
  })
  return { status: ctx.status, body: ctx.body, headers }
}

const sql = () => h.running.deps.sql

describe('Postgres refusals as answers', () => {
  it.each([
    ['a NUL character in text', () => sql()`SELECT ${'a\u0000b'}::text AS t`],
    ['an integer out of range', () => sql()`SELECT ${'2147483648'}::int AS n`],
    ['text that is no number', () => sql()`SELECT ${'12abc'}::numeric AS n`],
    ['a number beyond double precision', () => sql()`SELECT ${'1e400'}::float8 AS f`],
  ])('answers %s with 400 validation_error naming a field', async (_, work) => {
    const res = await answer(work)
    expect(res.status).toBe(400)
    expect(res.body).toMatchObject({ code: 'validation_error', http_status_code: 400 })
    expect(Object.keys(res.body.details)).toHaveLength(1)
  })

  it('answers a unique clash nobody reported as 409 already_exists', async () => {
    const res = await answer(() =>
      sql().begin(async (tx) => {
        await tx`CREATE TEMP TABLE clash (k text PRIMARY KEY) ON COMMIT DROP`
        await tx`INSERT INTO clash VALUES ('a'), ('a')`
      }),
    )
    expect([res.status, res.body.code]).toEqual([409, 'already_exists'])
  })

  it('answers an engine that went away with 503 and Retry-After', async () => {
    const res = await answer(() => Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })))
    expect([res.status, res.body.code, res.headers['Retry-After']]).toEqual([503, 'service_unavailable', '1'])
  })

  it('answers our own SQL mistake with 500 quoting the request id, not the driver', async () => {
    const res = await answer(() => sql()`SELECT no_such_column FROM environments`)
    expect(res.status).toBe(500)
    expect(res.body).toEqual({
      code: 'internal_error',
      message: 'internal error; quote request id req-1',
      http_status_code: 500,
      details: { request_id: 'req-1' },
      // Flexprice's SDK reads these (docs/compatibility.md).
      success: false,
      error: { message: 'internal error; quote request id req-1', internal_error: 'internal_error: {"request_id":"req-1"}' },
    })
  })
})
