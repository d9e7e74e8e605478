// Flexprice's SDK against scheduled exports: the seven scheduledTasks methods. The SDK's S3JobConfig has no field for
// the bucket's credentials (Flexprice keeps them on a connection) nor for format: the task is created over plain HTTP
// with them, and the SDK's own create is refused naming the missing field. The rest goes through the SDK: list, get,
// a forced run whose Parquet file lands in a real S3 protocol server (s3rver), pause, delete, and the billing-period
// update.
import { parquetMetadata } from 'hyparquet'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { twoTenants } from '../catalog.ts'
import { startS3, S3_CREDENTIALS, type S3Server } from '../s3-server.ts'
import { send } from '../usage-helpers.ts'
import { call } from '../wallets.ts'
import { failure, sdk } from './client.ts'

const t = twoTenants({ env: { KAFKA_BROKERS: '' } })
const fp = () => sdk(t.h)
let s3: S3Server
const now = Date.now()
const hoursAgo = (n: number) => new Date(now - n * 3_600_000).toISOString()

beforeAll(async () => {
  s3 = await startS3(['lake'])
  await send(t.h, [{ id: 'e1', at: hoursAgo(3) }, { id: 'e2', at: hoursAgo(2) }, { id: 'e3', at: hoursAgo(1) }], { customer: 'acme', name: 'llm' })
})
afterAll(() => s3?.stop())

const jobConfig = () => ({ bucket: 'lake', keyPrefix: 'meterbill', endpointUrl: s3.endpoint, usePathStyle: true, region: 'eu-west-1' })

describe('scheduledTasks', () => {
  it('refuses a bucket task without credentials, naming the field', async () => {
    const err = await failure(fp().scheduledTasks.createScheduledTask({ connectionId: 'conn_s3', entityType: 'events', interval: 'hourly', jobConfig: jobConfig() }))
    expect(err.statusCode).toBe(400)
    expect(JSON.parse(err.body)).toMatchObject({ code: 'validation_error', details: { 'job_config.access_key_id': expect.any(String) } })
  })

  it('lists, reads, runs, pauses and deletes a task', async () => {
    const created = await call(t.h, 'POST', '/v1/tasks/scheduled', {
      connection_id: 'conn_s3',
      entity_type: 'events',
      interval: 'hourly',
      job_config: { bucket: 'lake', key_prefix: 'meterbill', endpoint_url: s3.endpoint, use_path_style: true, region: 'eu-west-1', format: 'parquet', ...S3_CREDENTIALS },
    }, 201)

    const listed = await fp().scheduledTasks.listScheduledTasks({ entityType: 'events', enabled: true, limit: 10 })
    expect(listed.items?.map((x) => x.id)).toEqual([created.id])
    const task = await fp().scheduledTasks.getScheduledTask(created.id)
    expect(task).toMatchObject({ id: created.id, connectionId: 'conn_s3', entityType: 'events', interval: 'hourly', enabled: true, status: 'published', jobConfig: jobConfig() })

    const run = await fp().scheduledTasks.triggerScheduledTaskRun(created.id, { startTime: hoursAgo(4), endTime: hoursAgo(0.5) })
    expect(run).toMatchObject({ mode: 'custom', startTime: hoursAgo(4), endTime: hoursAgo(0.5) })
    expect(run.workflowId).toMatch(/^strun_/)
    // The run works after the answer: wait for it, then read the file back from the bucket.
    let runs: any[] = []
    for (let i = 0; i < 200; i++) {
      runs = (await call(t.h, 'GET', `/v1/tasks/scheduled/${created.id}`)).runs
      if (runs.length > 0 && runs.every((r) => r.run_status === 'completed' || r.run_status === 'failed')) break
      await new Promise((r) => setTimeout(r, 50))
    }
    const rows = runs.reduce((n, r) => n + r.row_count, 0)
    expect(runs.every((r) => r.run_status === 'completed')).toBe(true)
    const keys = s3.keys('lake')
    expect(keys.length).toBe(runs.length)
    expect(keys.every((k) => /^meterbill\/events\/date=\d{4}-\d{2}-\d{2}\/strun_\w+\.parquet$/.test(k))).toBe(true)
    const fileRows = keys.reduce((n, k) => {
      const b = s3.read('lake', k)
      return n + Number(parquetMetadata(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer).num_rows)
    }, 0)
    expect([rows, fileRows]).toEqual([3, 3])

    expect(await fp().scheduledTasks.updateScheduledTask(created.id, { enabled: false })).toMatchObject({ id: created.id, enabled: false })
    expect((await failure(fp().scheduledTasks.triggerScheduledTaskRun(created.id, {}))).statusCode).toBe(400)
    expect((await failure(sdk(t.h, t.other).scheduledTasks.getScheduledTask(created.id))).statusCode).toBe(404)

    await fp().scheduledTasks.deleteScheduledTask(created.id)
    expect((await fp().scheduledTasks.getScheduledTask(created.id)).status).toBe('deleted')
    expect((await fp().scheduledTasks.listScheduledTasks({})).items).toEqual([])
  })

  it('moves due subscriptions to their next period on scheduleUpdateBillingPeriod', async () => {
    await expect(fp().scheduledTasks.scheduleUpdateBillingPeriod({})).resolves.toEqual({})
    // What it ran: the subscription lifecycle job, under its lease.
    const res = await t.h.http('POST', '/v1/tasks/scheduled/schedule-update-billing-period', { body: {} })
    expect(res.body).toMatchObject({ job: 'subscription-lifecycle', ran: true, summary: { advanced: 0 } })
  })
})
