// Flexprice's SDK against scheduled exports: the seven scheduledTasks methods. The SDK's S3JobConfig has no field for
// the bucket's credentials: Flexprice keeps them on an s3 connection, made here through the SDK's integrations and
// named by connectionId, and a forced run writes with them. The SDK has no format either: the Parquet task is created
// over plain HTTP with its credentials inline. The rest goes through the SDK: list, get, a forced run whose file lands
// in a real S3 protocol server (s3rver), pause, delete, and the billing-period update.
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
  s3 = await startS3(['lake', 'vault'])
  await send(t.h, [{ id: 'e1', at: hoursAgo(3) }, { id: 'e2', at: hoursAgo(2) }, { id: 'e3', at: hoursAgo(1) }], { customer: 'acme', name: 'llm' })
})
afterAll(() => s3?.stop())

const jobConfig = () => ({ bucket: 'lake', keyPrefix: 'meterbill', endpointUrl: s3.endpoint, usePathStyle: true, region: 'eu-west-1' })

/** The task's runs once none is pending or running: a forced run works after the answer. */
async function finishedRuns(taskId: string): Promise<any[]> {
  let runs: any[] = []
  for (let i = 0; i < 200; i++) {
    runs = (await call(t.h, 'GET', `/v1/tasks/scheduled/${taskId}`)).runs
    if (runs.length > 0 && runs.every((r) => r.run_status === 'completed' || r.run_status === 'failed')) return runs
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`the runs of ${taskId} did not finish: ${JSON.stringify(runs)}`)
}

describe('scheduledTasks', () => {
  it('creates a bucket task naming an s3 connection; a forced run writes the object with its keys', async () => {
    const connection = await fp().integrations.createOrUpdateIntegration('s3', { provider: 's3', name: 'vault', credentials: { aws_access_key_id: S3_CREDENTIALS.access_key_id, aws_secret_access_key: S3_CREDENTIALS.secret_access_key } })
    expect(connection).toMatchObject({ provider: 's3', name: 'vault' })
    const created = await fp().scheduledTasks.createScheduledTask({ connectionId: connection.id!, entityType: 'events', interval: 'hourly', jobConfig: { ...jobConfig(), bucket: 'vault' } })
    expect(created).toMatchObject({ connectionId: connection.id, enabled: true, jobConfig: { bucket: 'vault', keyPrefix: 'meterbill' } })

    await fp().scheduledTasks.triggerScheduledTaskRun(created.id!, { startTime: hoursAgo(4), endTime: hoursAgo(0.5) })
    const runs = await finishedRuns(created.id!)
    expect(runs.map((r) => r.run_status)).toEqual(runs.map(() => 'completed'))
    const keys = s3.keys('vault')
    expect(keys.map((k) => /^meterbill\/events\/date=\d{4}-\d{2}-\d{2}\/strun_\w+\.csv$/.test(k))).toEqual(runs.map(() => true))
    const lines = keys.reduce((n, k) => n + s3.read('vault', k).toString('utf8').trim().split('\n').length - 1, 0)
    expect(lines).toBe(3)

    await fp().scheduledTasks.deleteScheduledTask(created.id!)
    await fp().integrations.deleteIntegration(connection.id!)
  })

  it('lists, reads, runs, pauses and deletes a task', async () => {
    const created = await call(t.h, 'POST', '/v1/tasks/scheduled', {
      entity_type: 'events',
      interval: 'hourly',
      job_config: { bucket: 'lake', key_prefix: 'meterbill', endpoint_url: s3.endpoint, use_path_style: true, region: 'eu-west-1', format: 'parquet', ...S3_CREDENTIALS },
    }, 201)

    const listed = await fp().scheduledTasks.listScheduledTasks({ entityType: 'events', enabled: true, limit: 10 })
    expect(listed.items?.map((x) => x.id)).toEqual([created.id])
    const task = await fp().scheduledTasks.getScheduledTask(created.id)
    expect(task).toMatchObject({ id: created.id, entityType: 'events', interval: 'hourly', enabled: true, status: 'published', jobConfig: jobConfig() })

    const run = await fp().scheduledTasks.triggerScheduledTaskRun(created.id, { startTime: hoursAgo(4), endTime: hoursAgo(0.5) })
    expect(run).toMatchObject({ mode: 'custom', startTime: hoursAgo(4), endTime: hoursAgo(0.5) })
    expect(run.workflowId).toMatch(/^strun_/)
    // The run works after the answer: wait for it, then read the file back from the bucket.
    const runs = await finishedRuns(created.id)
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
