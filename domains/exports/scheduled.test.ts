// Scheduled exports end to end on real engines and a real S3 protocol server (s3rver): windows from the watermark,
// one file per window in its day's partition, exactly once however often the job runs, incremental as time moves,
// retried after a failure, forced runs, pause, credentials sealed (on the task, or on an s3 connection it names, read
// at each run), bad input refused.
import { gunzipSync } from 'node:zlib'
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse } from 'csv-parse/sync'
import { parquetReadObjects } from 'hyparquet'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../core/clock.ts'
import { isSealed } from '../../infra/secrets.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { startS3, S3_CREDENTIALS, type S3Server } from '../../test/s3-server.ts'
import { send } from '../../test/usage-helpers.ts'
import { call, runNamedJob } from '../../test/wallets.ts'

const clock = fixedClock('2024-03-03T00:05:00Z')
let h: Harness
let s3: S3Server

beforeAll(async () => {
  s3 = await startS3(['warehouse', 'vault'])
  h = await startHarness({ clock, env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0' } })
  // Sent as of the last event's time (intake refuses events from the future), exported from an earlier one.
  clock.set('2024-03-03T02:00:00Z')
  await send(
    h,
    [
      { id: 'a1', at: '2024-03-01T00:10:00.000Z', props: { tokens: 10 } },
      { id: 'a2', at: '2024-03-01T05:00:00.500Z', props: { tokens: 2.5 } },
      { id: 'b1', at: '2024-03-01T23:59:59.999Z', customer: 'beta', props: { tokens: 0.25 } },
      { id: 'a3', at: '2024-03-02T12:00:00.000Z', props: { tokens: 7 } },
      { id: 'next', at: '2024-03-03T01:00:00.000Z', props: { tokens: 1000 } },
    ],
    { customer: 'acme', name: 'llm' },
  )
  clock.set('2024-03-03T00:05:00Z')
})
afterAll(async () => {
  await h?.stop()
  await s3?.stop()
})

const bucketTask = (over: Record<string, unknown> = {}) => ({
  entity_type: 'events',
  interval: 'daily',
  start_time: '2024-03-01T00:00:00Z',
  job_config: { bucket: 'warehouse', key_prefix: '/exports/', endpoint_url: s3.endpoint, use_path_style: true, region: 'us-east-1', format: 'parquet', ...S3_CREDENTIALS },
  ...over,
})

async function parquetOf(key: string): Promise<Record<string, unknown>[]> {
  const b = s3.read('warehouse', key)
  return parquetReadObjects({ file: b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer })
}
/** The task once no run of it is running: a forced run works in the request's process after the answer. */
async function settled(taskId: string): Promise<any> {
  for (let i = 0; i < 200; i++) {
    const task = await call(h, 'GET', `/v1/tasks/scheduled/${taskId}`)
    if (!task.runs.some((r: any) => r.run_status === 'running')) return task
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`a run of ${taskId} is still running`)
}
/** S3_CREDENTIALS as an s3 connection's secrets (Flexprice's field names). */
const S3_CREDENTIALS_AWS = { aws_access_key_id: S3_CREDENTIALS.access_key_id, aws_secret_access_key: S3_CREDENTIALS.secret_access_key }
const tokens = (rows: Record<string, unknown>[]) => rows.reduce((t, r) => t + (JSON.parse(r.properties as string) as { tokens: number }).tokens, 0)

describe('a daily Parquet export to a bucket', () => {
  let taskId: string

  it('keeps the credentials sealed and never shows them', async () => {
    const task = await call(h, 'POST', '/v1/tasks/scheduled', bucketTask(), 201)
    taskId = task.id
    expect(task).toMatchObject({ entity_type: 'events', interval: 'daily', enabled: true, connection_id: null, has_credentials: true, watermark: '2024-03-01T00:00:00.000Z' })
    expect(task.job_config).toEqual({ bucket: 'warehouse', key_prefix: 'exports', endpoint_url: s3.endpoint, use_path_style: true, region: 'us-east-1', format: 'parquet' })
    const [row] = await h.running.deps.sql`SELECT encrypted_secret_data, job_config FROM scheduled_tasks WHERE id = ${taskId}`
    expect(isSealed(row.encrypted_secret_data as string)).toBe(true)
    expect(JSON.stringify(row)).not.toContain('S3RVER')
  })

  it('writes one file per window in its day partition, rows and sums as stored, exactly once', async () => {
    expect(await runNamedJob(h, 'scheduled-exports')).toMatchObject({ planned: 2, completed: 2, failed: 0, rows: 4 })
    const keys = s3.keys('warehouse')
    expect(keys).toHaveLength(2)
    expect(keys[0]).toMatch(/^exports\/events\/date=2024-03-01\/strun_\w+\.parquet$/)
    expect(keys[1]).toMatch(/^exports\/events\/date=2024-03-02\/strun_\w+\.parquet$/)
    const day1 = await parquetOf(keys[0])
    expect(day1.map((r) => r.event_id).sort()).toEqual(['a1', 'a2', 'b1'])
    expect(tokens(day1)).toBe(12.75)
    expect((await parquetOf(keys[1])).map((r) => r.event_id)).toEqual(['a3'])

    // Again at the same time: nothing new planned or written.
    expect(await runNamedJob(h, 'scheduled-exports')).toMatchObject({ planned: 0, completed: 0 })
    expect(s3.keys('warehouse')).toHaveLength(2)

    const task = await call(h, 'GET', `/v1/tasks/scheduled/${taskId}`)
    expect(task.watermark).toBe('2024-03-03T00:00:00.000Z')
    expect(task.runs.map((r: any) => [r.window_start, r.run_status, r.row_count, r.attempts])).toEqual([
      ['2024-03-02T00:00:00.000Z', 'completed', 1, 1],
      ['2024-03-01T00:00:00.000Z', 'completed', 3, 1],
    ])
    expect(task.runs[1].location).toBe(`s3://warehouse/${keys[0]}`)
  })

  it('goes on from the watermark when the next window has ended', async () => {
    clock.set('2024-03-04T00:01:00Z')
    // The window ended a minute ago: not settled yet.
    expect(await runNamedJob(h, 'scheduled-exports')).toMatchObject({ planned: 0 })
    clock.set('2024-03-04T00:05:00Z')
    expect(await runNamedJob(h, 'scheduled-exports')).toMatchObject({ planned: 1, completed: 1, rows: 1 })
    const key = s3.keys('warehouse').find((k) => k.includes('date=2024-03-03'))!
    expect((await parquetOf(key)).map((r) => r.event_id)).toEqual(['next'])
  })

  it('pauses, refuses a forced run while paused, and runs a forced range per day', async () => {
    expect((await call(h, 'PUT', `/v1/tasks/scheduled/${taskId}`, { enabled: false })).enabled).toBe(false)
    clock.set('2024-03-06T00:05:00Z')
    expect(await runNamedJob(h, 'scheduled-exports')).toMatchObject({ planned: 0 })
    expect((await h.http('POST', `/v1/tasks/scheduled/${taskId}/run`, { body: {} })).status).toBe(400)
    await call(h, 'PUT', `/v1/tasks/scheduled/${taskId}`, { enabled: true })

    const forced = await call(h, 'POST', `/v1/tasks/scheduled/${taskId}/run`, { start_time: '2024-03-01T12:00:00Z', end_time: '2024-03-02T13:00:00Z' })
    expect(forced).toMatchObject({ mode: 'custom', start_time: '2024-03-01T12:00:00.000Z', end_time: '2024-03-02T13:00:00.000Z' })
    expect(forced.run_ids).toHaveLength(2)
    // The runs started in the request's process; the job finishes any left and the resumed task catches up.
    await settled(taskId)
    await runNamedJob(h, 'scheduled-exports')
    const task = await settled(taskId)
    const custom = task.runs.filter((r: any) => r.mode === 'custom')
    expect(custom.map((r: any) => [r.window_start, r.run_status, r.row_count])).toEqual([
      ['2024-03-02T00:00:00.000Z', 'completed', 1],
      ['2024-03-01T12:00:00.000Z', 'completed', 1],
    ])
    // Paused, then resumed: the days it missed are exported from the watermark.
    expect(task.watermark).toBe('2024-03-06T00:00:00.000Z')
    expect(task.runs.filter((r: any) => r.mode === 'automatic')).toHaveLength(5)
  })
})

describe('a 15-minute gzip CSV export to a directory', () => {
  it('retries a failed run with backoff, then writes the same window once', async () => {
    clock.set('2024-03-01T00:20:00Z')
    const task = await call(h, 'POST', '/v1/tasks/scheduled', { entity_type: 'events', interval: '15MIN', job_config: { local_directory: 'lake/raw', compression: 'gzip' } }, 201)
    expect(task.watermark).toBe('2024-03-01T00:15:00.000Z')
    // The first window from 00:00 was before the task: force it, then block its directory so the write fails.
    const root = join(h.config.dataDir, 'exports', 'lake')
    mkdirSync(join(h.config.dataDir, 'exports'), { recursive: true })
    writeFileSync(root, 'not a directory')
    await call(h, 'POST', `/v1/tasks/scheduled/${task.id}/run`, { start_time: '2024-03-01T00:00:00Z', end_time: '2024-03-01T00:15:00Z' })
    let [run] = (await settled(task.id)).runs
    expect(run).toMatchObject({ run_status: 'pending', attempts: 1 })
    expect(run.error).toMatch(/ENOTDIR|EEXIST/)
    expect(new Date(run.next_attempt_at).getTime()).toBe(clock.now().getTime() + 60_000)

    rmSync(root)
    expect(await runNamedJob(h, 'scheduled-exports')).toMatchObject({ completed: 0 }) // not due yet
    clock.advance(60_000)
    expect(await runNamedJob(h, 'scheduled-exports')).toMatchObject({ completed: 1 })
    ;[run] = (await call(h, 'GET', `/v1/tasks/scheduled/${task.id}`)).runs
    expect(run).toMatchObject({ run_status: 'completed', attempts: 2, row_count: 1, error: null })
    const dir = join(root, 'raw', 'events', 'date=2024-03-01')
    expect(readdirSync(dir)).toEqual([`${run.id}.csv.gz`])
    const rows = parse(gunzipSync(readFileSync(join(dir, `${run.id}.csv.gz`))).toString('utf8'), { columns: true }) as Record<string, string>[]
    expect(rows.map((r) => r.event_id)).toEqual(['a1'])
    await call(h, 'DELETE', `/v1/tasks/scheduled/${task.id}`, undefined, 204)
  })
})

describe('a bucket export with the credentials of an s3 connection', () => {
  const s3Connection = (secrets: Record<string, string>) => ({ name: 'vault', provider_type: 's3', encrypted_secret_data: { s3: secrets } })
  const connectionTask = (connectionId: string) => ({ connection_id: connectionId, entity_type: 'events', interval: 'daily', job_config: { bucket: 'vault', endpoint_url: s3.endpoint, use_path_style: true } })

  it('reads the keys at each run: a key rotated on the connection is used by the next attempt; the connection stays while a task uses it', async () => {
    clock.set('2024-03-05T12:00:00Z')
    // Keys the bucket does not know first: s3rver refuses them.
    const connection = await call(h, 'POST', '/v1/connections', s3Connection({ aws_access_key_id: 'AKIAOLD', aws_secret_access_key: 'old' }), 201)
    expect(connection).toMatchObject({ provider_type: 's3', name: 'vault' })
    expect(JSON.stringify(connection)).not.toMatch(/AKIAOLD|encrypted_secret_data/)
    const task = await call(h, 'POST', '/v1/tasks/scheduled', connectionTask(connection.id), 201)
    expect(task).toMatchObject({ connection_id: connection.id, has_credentials: false })

    await call(h, 'POST', `/v1/tasks/scheduled/${task.id}/run`, { start_time: '2024-03-01T00:00:00Z', end_time: '2024-03-02T00:00:00Z' })
    let [run] = (await settled(task.id)).runs
    expect(run).toMatchObject({ run_status: 'pending', attempts: 1 })
    expect(run.error).toMatch(/answered 403: InvalidAccessKeyId/)

    await call(h, 'PUT', `/v1/connections/${connection.id}`, { encrypted_secret_data: { s3: S3_CREDENTIALS_AWS } })
    clock.advance(60_000)
    expect(await runNamedJob(h, 'scheduled-exports')).toMatchObject({ completed: 1, rows: 3 })
    ;[run] = (await call(h, 'GET', `/v1/tasks/scheduled/${task.id}`)).runs
    expect(run).toMatchObject({ run_status: 'completed', attempts: 2, row_count: 3 })
    const [key] = s3.keys('vault')
    expect(run.location).toBe(`s3://vault/${key}`)
    expect(parse(s3.read('vault', key).toString('utf8'), { columns: true }).map((r: any) => r.event_id).sort()).toEqual(['a1', 'a2', 'b1'])

    const refused = await h.http('DELETE', `/v1/connections/${connection.id}`)
    expect([refused.status, refused.body.code, refused.body.details]).toEqual([400, 'invalid_operation', { connection_id: connection.id, scheduled_task_ids: [task.id] }])
    await call(h, 'DELETE', `/v1/tasks/scheduled/${task.id}`, undefined, 204)
    expect((await h.http('DELETE', `/v1/connections/${connection.id}`)).status).toBeLessThan(300)
  })

  it('refuses a connection_id that is no s3 connection of this environment, and a connection without its keys', async () => {
    const stripe = await call(h, 'POST', '/v1/connections', { name: 'pay', provider_type: 'stripe', encrypted_secret_data: { stripe: { secret_key: 'sk_test', webhook_secret: 'whsec' } } }, 201)
    const other = await h.newTenant()
    const theirs = await h.http('POST', '/v1/connections', { key: other.apiKey, body: s3Connection(S3_CREDENTIALS_AWS) })
    expect(theirs.status).toBe(201)
    const ours = await call(h, 'POST', '/v1/connections', s3Connection(S3_CREDENTIALS_AWS), 201)
    const cases: [Record<string, unknown>, number, string][] = [
      [connectionTask('conn_missing'), 404, 'connection_id'],
      [connectionTask(theirs.body.id), 404, 'connection_id'],
      [connectionTask(stripe.id), 400, 'connection_id'],
      [{ ...connectionTask(ours.id), job_config: { ...connectionTask(ours.id).job_config, ...S3_CREDENTIALS } }, 400, 'job_config.access_key_id'],
      [{ ...connectionTask(ours.id), job_config: { local_directory: 'x' } }, 400, 'connection_id'],
    ]
    for (const [body, status, field] of cases) {
      const res = await h.http('POST', '/v1/tasks/scheduled', { body })
      expect([res.status, Object.keys(res.body.details ?? {})], JSON.stringify(res.body)).toEqual([status, [field]])
    }
    const missing = await h.http('POST', '/v1/connections', { body: s3Connection({ aws_access_key_id: 'AKIA' }) })
    expect([missing.status, Object.keys(missing.body.details)]).toEqual([400, ['encrypted_secret_data.s3.aws_secret_access_key']])
  })
})

describe('the API', () => {
  it('refuses bad tasks naming the field, and creates nothing', async () => {
    const before = (await call(h, 'GET', '/v1/tasks/scheduled?limit=100')).pagination.total
    const cases: [Record<string, unknown>, string][] = [
      [bucketTask({ interval: 'custom' }), 'interval'],
      [bucketTask({ entity_type: 'customers' }), 'entity_type'],
      [bucketTask({ job_config: { bucket: 'warehouse', local_directory: 'x', ...S3_CREDENTIALS } }), 'job_config.bucket'],
      [bucketTask({ job_config: { bucket: 'warehouse' } }), 'job_config.access_key_id'],
      [bucketTask({ job_config: { local_directory: '../etc' } }), 'job_config.local_directory'],
      [bucketTask({ job_config: { local_directory: 'x', format: 'parquet', compression: 'gzip' } }), 'job_config.compression'],
      [bucketTask({ job_config: { local_directory: 'x', filters: { meter_ids: ['m'] } } }), 'job_config.filters.meter_ids'],
    ]
    for (const [body, field] of cases) {
      const res = await h.http('POST', '/v1/tasks/scheduled', { body })
      expect(res.status, field).toBe(400)
      expect(JSON.stringify(res.body.details), field).toContain(field)
    }
    expect((await call(h, 'GET', '/v1/tasks/scheduled?limit=100')).pagination.total).toBe(before)
  })

  it("hides one environment's tasks from another", async () => {
    const task = await call(h, 'POST', '/v1/tasks/scheduled', { entity_type: 'invoice', interval: 'hourly', job_config: { local_directory: 'inv' } }, 201)
    const other = await h.newTenant()
    expect((await h.http('GET', `/v1/tasks/scheduled/${task.id}`, { key: other.apiKey })).status).toBe(404)
    expect((await h.http('POST', `/v1/tasks/scheduled/${task.id}/run`, { key: other.apiKey, body: {} })).status).toBe(404)
  })
})
