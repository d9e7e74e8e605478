// The raw-events export over HTTP (POST and GET /v1/events/export) on a started service: every stored event of the
// range with its properties as JSON, filters, bad input, another tenant, and a client that leaves mid-export.
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { parse } from 'csv-parse/sync'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { leaveMidExport } from '../../../test/exports.ts'
import { readyMeter, send } from '../../../test/usage-helpers.ts'
import { csvCell } from '../../../core/csv.ts'

let h: Harness

const HEADER = ['event_id', 'timestamp', 'received_at', 'external_customer_id', 'customer_id', 'event_name', 'source', 'properties']

beforeAll(async () => {
  h = await startHarness({ env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0' } })
  await send(
    h,
    [
      { id: 'a1', at: '2024-03-01T00:10:00.000Z', props: { note: 'a, "quoted"\nnote', tokens: 10 } },
      { id: 'a2', at: '2024-03-01T05:00:00.500Z', props: { formula: '=1+2' } },
      { id: 'a3', at: '2024-03-02T00:00:00.000Z', name: 'search' },
      { id: 'late', at: '2024-03-05T00:00:00.000Z' },
      { id: 'b1', at: '2024-03-01T01:00:00.000Z', customer: 'beta' },
    ],
    { customer: 'acme', name: 'llm' },
  )
  const withSource = await h.http('POST', '/v1/events', { body: { event_id: 's1', event_name: 'llm', external_customer_id: 'acme', source: 'sdk-go', timestamp: '2024-03-01T02:00:00Z', properties: {} } })
  expect(withSource.status).toBe(202)
})
afterAll(() => h.stop())

const RANGE = { start_time: '2024-03-01T00:00:00Z', end_time: '2024-03-03T00:00:00Z' }

async function exported(body: Record<string, unknown>) {
  const res = await h.http('POST', '/v1/events/export', { body })
  expect(res.status, String(res.body)).toBe(200)
  const rows = parse(res.body as string) as string[][]
  expect(rows[0]).toEqual(HEADER)
  return { res, rows: rows.slice(1) }
}

describe('raw-events export', () => {
  it('streams every stored event of the range as CSV, in customer, name, time order, properties as their JSON', async () => {
    const { res, rows } = await exported(RANGE)
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="events-2024-03-01T000000.000Z-2024-03-03T000000.000Z.csv"')
    expect(rows.map((r) => [r[0], r[1], r[3], r[5], r[6]])).toEqual([
      ['a1', '2024-03-01T00:10:00.000Z', 'acme', 'llm', ''],
      ['s1', '2024-03-01T02:00:00.000Z', 'acme', 'llm', 'sdk-go'],
      ['a2', '2024-03-01T05:00:00.500Z', 'acme', 'llm', ''],
      ['a3', '2024-03-02T00:00:00.000Z', 'acme', 'search', ''],
      ['b1', '2024-03-01T01:00:00.000Z', 'beta', 'llm', ''],
    ])
    expect(JSON.parse(rows[0][7])).toEqual({ note: 'a, "quoted"\nnote', tokens: 10 })
    // The JSON text is data: a cell starting with `{` needs no neutralizing; received_at is the intake's instant.
    expect(rows[2][7]).toBe('{"formula":"=1+2"}')
    expect(Number.isNaN(Date.parse(rows[0][2]))).toBe(false)
  })

  it('neutralizes text cells a spreadsheet would run as formulas, as core/csv.ts does', async () => {
    const nasty = { event_id: '-5', event_name: '@sum', external_customer_id: '=HYPERLINK("http://x")', source: '+1', timestamp: '2024-03-01T00:00:00Z', properties: { a: '=1' } }
    expect((await h.http('POST', '/v1/events', { body: nasty })).status).toBe(202)
    const { res, rows } = await exported({ ...RANGE, external_customer_id: nasty.external_customer_id })
    const cells = [nasty.event_id, nasty.external_customer_id, nasty.event_name, nasty.source]
    expect([rows[0][0], rows[0][3], rows[0][5], rows[0][6]]).toEqual(cells.map((c) => (parse(csvCell(c)) as string[][])[0][0]))
    expect([rows[0][0], rows[0][3], rows[0][5], rows[0][6]]).toEqual(["'-5", '\'=HYPERLINK("http://x")', "'@sum", "'+1"])
    // RFC 4180 on the wire: CRLF after each record, quotes doubled.
    expect(res.body as string).toContain('"\'=HYPERLINK(""http://x"")"')
    expect((res.body as string).endsWith('\r\n')).toBe(true)
  })

  it('filters by customers, event names and sources; GET takes the same filters as query parameters', async () => {
    expect((await exported({ ...RANGE, external_customer_id: 'beta' })).rows.map((r) => r[0])).toEqual(['b1'])
    expect((await exported({ ...RANGE, external_customer_ids: ['beta', 'acme'], event_names: ['search'] })).rows.map((r) => r[0])).toEqual(['a3'])
    expect((await exported({ ...RANGE, sources: ['sdk-go'] })).rows.map((r) => r[0])).toEqual(['s1'])
    expect((await exported({ ...RANGE, sources: [''], event_names: ['llm'], external_customer_id: 'acme' })).rows.map((r) => r[0])).toEqual(['a1', 'a2'])
    const get = await h.http('GET', '/v1/events/export?start_time=2024-03-01T00:00:00Z&end_time=2024-03-10T00:00:00Z&event_names=llm&external_customer_ids=acme')
    expect(get.status).toBe(200)
    expect((parse(get.body as string) as string[][]).slice(1).map((r) => r[0])).toEqual(['a1', 's1', 'a2', 'late'])
  })

  it('refuses bad input with a 400 naming the field, before any byte of CSV', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ end_time: RANGE.end_time }, 'start_time'],
      [{ start_time: RANGE.start_time, end_time: 'yesterday' }, 'end_time'],
      [{ start_time: RANGE.end_time, end_time: RANGE.start_time }, 'end_time'],
      [{ ...RANGE, event_names: [] }, 'event_names'],
      [{ ...RANGE, customer: 'acme' }, 'customer'],
    ]
    for (const [body, field] of cases) {
      const res = await h.http('POST', '/v1/events/export', { body })
      expect(res.status, JSON.stringify(body)).toBe(400)
      expect(res.body.code).toBe('validation_error')
      expect(Object.keys(res.body.details)).toContain(field)
    }
    const get = await h.http('GET', '/v1/events/export?start_time=2024-03-01T00:00:00Z')
    expect(get.status).toBe(400)
    expect(Object.keys(get.body.details)).toContain('end_time')
  })

  it('is scoped to the key: another tenant, and the sandbox, export nothing', async () => {
    const other = await h.newTenant()
    const res = await h.http('POST', '/v1/events/export', { body: RANGE, key: other.apiKey })
    expect(res.status).toBe(200)
    expect(res.body).toBe(`${HEADER.join(',')}\r\n`)
    const sandbox = await h.http('POST', '/v1/secrets/api/keys', { body: { name: 'sandbox reader', roles: ['read'], environment_id: h.tenant.environments.sandbox } })
    expect(sandbox.status).toBe(201)
    expect((await h.http('POST', '/v1/events/export', { body: RANGE, key: sandbox.body.api_key })).body).toBe(`${HEADER.join(',')}\r\n`)
    const ingestOnly = await h.http('POST', '/v1/secrets/api/keys', { body: { name: 'sdk', roles: ['ingest'] } })
    expect((await h.http('POST', '/v1/events/export', { body: RANGE, key: ingestOnly.body.api_key })).status).toBe(403)
  })

  it('a client that leaves mid-export stops the query', async () => {
    // 300,000 stored events (~40 MB of CSV), written straight into the events table.
    const { tenantId, environments } = h.tenant
    await h.running.deps.ch.client.command({
      query: `INSERT INTO events (tenant_id, environment_id, external_customer_id, event_name, timestamp, id, customer_id, source, properties, received_at)
              SELECT '${tenantId}', '${environments.production}', 'bulk', 'llm', toDateTime64('2024-04-01 00:00:00', 3, 'UTC') + toIntervalMillisecond(number),
                     concat('bulk-', toString(number)), 'cus_bulk', '', '{"tokens":1,"model":"a-rather-long-model-name-to-fill-the-row"}', now64(3)
              FROM numbers(300000)`,
    })
    // A client reads the first chunk and leaves: the export stopped well before the end (the query was stopped, not drained).
    expect(await leaveMidExport(h, '/v1/events/export', { start_time: '2024-04-01T00:00:00Z', end_time: '2024-04-02T00:00:00Z' })).toBeLessThan(150_000)
    // And the service answers as before.
    expect((await h.http('GET', '/v1/health')).status).toBe(200)
    const whole = await exported({ start_time: '2024-04-01T00:00:00Z', end_time: '2024-04-01T00:00:01Z' })
    expect(whole.rows).toHaveLength(1000)
  })

  it('meterbill export writes the same CSV to stdout (raw, and the analytics export), with the rows counted on stderr', async () => {
    const run = (args: string[], env: Record<string, string> = {}) =>
      promisify(execFile)(process.execPath, ['bin/meterbill.js', 'export', ...args], { env: { ...process.env, ...env }, maxBuffer: 64 * 1024 * 1024 })
    const { stdout, stderr } = await run(['--raw', '--from', RANGE.start_time, '--to', RANGE.end_time, '--customer', 'acme', '--customer', 'beta', '--url', h.baseUrl], { METERBILL_API_KEY: h.key })
    const byHttp = await h.http('POST', '/v1/events/export', { body: { ...RANGE, external_customer_ids: ['acme', 'beta'] } })
    expect(stdout).toBe(byHttp.body)
    // Five events; the first holds a line break inside its quoted properties, counted as one row.
    expect(stderr).toMatch(/^5 rows · \d+(\.\d)? (B|KB) · [\d,]+ rows\/s\n$/)
    const { stdout: onlyLlm } = await run(['--raw', '--from', RANGE.start_time, '--to', RANGE.end_time, '--event', 'search', '--key', h.key, '--url', h.baseUrl])
    expect((parse(onlyLlm) as string[][]).slice(1).map((r) => r[0])).toEqual(['a3'])
    // A refused request: the service's message on stderr, exit code 1, nothing on stdout.
    const refused = await run(['--raw', '--from', RANGE.end_time, '--to', RANGE.start_time, '--key', h.key, '--url', h.baseUrl]).catch((err: { code: number; stdout: string; stderr: string }) => err)
    expect(refused).toMatchObject({ code: 1, stdout: '', stderr: '/v1/events/export: 400 end_time: must be after start_time\n' })
    // Without --raw: the analytics export (POST /v1/events/analytics/export with format csv), the same bytes as asked over HTTP.
    const meter = await readyMeter(h, { name: 'LLM calls', event_name: 'llm', aggregation: { type: 'COUNT' } })
    expect((await h.http('POST', '/v1/features', { body: { name: 'LLM calls', type: 'metered', meter_id: meter } })).status).toBe(201)
    expect((await h.http('POST', '/v1/customers', { body: { external_id: 'acme', name: 'Acme' } })).status).toBe(201)
    const analytics = await run(['--from', RANGE.start_time, '--to', RANGE.end_time, '--customer', 'acme', '--key', h.key, '--url', h.baseUrl])
    const analyticsByHttp = await h.http('POST', '/v1/events/analytics/export', { body: { ...RANGE, external_customer_id: 'acme', format: 'csv' } })
    expect(analyticsByHttp.status).toBe(200)
    expect(analytics.stdout).toBe(analyticsByHttp.body)
    const analyticsRows = (parse(analytics.stdout) as string[][]).length - 1
    expect(analyticsRows).toBeGreaterThan(0)
    expect(analytics.stderr.startsWith(`${analyticsRows} rows · `)).toBe(true)
    // Shaped: --window and --group-by are the analytics export's window_size and group_by.
    const shaped = await run(['--from', RANGE.start_time, '--to', RANGE.end_time, '--window', 'DAY', '--group-by', 'source', '--key', h.key, '--url', h.baseUrl])
    const shapedByHttp = await h.http('POST', '/v1/events/analytics/export', { body: { ...RANGE, window_size: 'DAY', group_by: ['source'], format: 'csv' } })
    expect(shaped.stdout).toBe(shapedByHttp.body)
    expect((parse(shaped.stdout) as string[][]).length).toBeGreaterThan(1)
    // An option it does not know: a usage error naming it (exit code 2), no stack trace.
    const unknown = await run(['--from', RANGE.start_time, '--to', RANGE.end_time, '--windw', 'DAY', '--key', h.key, '--url', h.baseUrl]).catch((err: { code: number; stderr: string }) => err)
    expect(unknown).toMatchObject({ code: 2, stderr: expect.stringMatching(/^Unknown option '--windw'.*\nusage: meterbill export /s) })
    expect((unknown as { stderr: string }).stderr).not.toMatch(/\s+at /)
    // No key: a usage error (exit code 2).
    const keyless = await run(['--raw', '--from', RANGE.start_time, '--to', RANGE.end_time, '--url', h.baseUrl], { METERBILL_API_KEY: '' }).catch((err: { code: number }) => err)
    expect(keyless).toMatchObject({ code: 2 })
    // Seven CLI processes and a meter's backfill: on CI's loaded server path, longer than the 60-s default.
  }, 120_000)
})
