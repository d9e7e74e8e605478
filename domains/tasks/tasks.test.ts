import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Actor } from '../../core/scope.ts'
import { twoTenants } from '../../test/catalog.ts'
import { readyMeter, usage } from '../../test/usage-helpers.ts'
import { createTask, getTask, taskErrors, updateTaskStatus } from './service.ts'
import { runTask } from './run.ts'

// The test's file server listens on 127.0.0.1, an internal address the operator allows here.
const t = twoTenants({ env: { KAFKA_BROKERS: '', TASK_IMPORT_ALLOWED_HOSTS: '127.0.0.1' } })
let actor: Actor
let server: Server
let base: string
const served = new Map<string, { status?: number; headers?: Record<string, string>; body: string }>()

beforeAll(async () => {
  actor = { tenantId: t.h.tenant.tenantId, environmentId: t.h.tenant.environments.production, keyId: 'tasks-test', roles: ['admin'] }
  server = createServer((req, res) => {
    const file = served.get(req.url ?? '')
    if (!file) return res.writeHead(404).end('no such file')
    if (file.status === 302) return res.writeHead(302, { location: file.body }).end()
    res.writeHead(file.status ?? 200, file.headers ?? {})
    // A file announced larger than it is sent: the headers go, the body never comes.
    if (file.headers?.['content-length']) {
      res.flushHeaders()
      return void setTimeout(() => res.destroy(), 2000)
    }
    res.end(file.body)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

const deps = () => t.h.running.deps
const later = (minutes: number) => new Date(Date.now() + minutes * 60_000)
const customerRows = async (prefix: string) =>
  deps().sql<{ external_id: string; name: string; version: number }[]>`SELECT external_id, name, version FROM customers
    WHERE tenant_id = ${actor.tenantId} AND external_id LIKE ${prefix + '%'} ORDER BY external_id`

describe('importing customers', () => {
  it('upserts by external_id and reports each refused record by row and field, writing the rest', async () => {
    await t.h.http('POST', '/v1/customers', { body: { external_id: 'imp-a', name: 'Old name' } })
    const csv = [
      'external_id,name,email,address_country,metadata.segment',
      'imp-a,"Acme, Inc.",ap@acme.test,de,enterprise',
      'imp-b,Beta,,XX,',
      ',No id,,,',
      'imp-c,Gamma,,,smb',
    ].join('\r\n')
    const task = await createTask(deps(), actor, { task_type: 'IMPORT', entity_type: 'customers', file_type: 'CSV', file: csv })
    expect(task).toMatchObject({ task_status: 'PENDING', entity_type: 'CUSTOMERS', processed_records: 0, total_records: 4 })
    await runTask(deps(), task.id)

    expect(await getTask(deps(), actor, task.id)).toMatchObject({
      task_status: 'COMPLETED',
      total_records: 4,
      processed_records: 4,
      successful_records: 2,
      failed_records: 2,
      error_summary: expect.stringContaining('2 of 4 records refused'),
      row_errors: [
        { row: 2, field: 'address_country', reason: expect.stringContaining('ISO 3166-1') },
        { row: 3, field: 'external_id', reason: 'is required' },
      ],
    })
    expect((await taskErrors(deps(), actor, task.id, { limit: 1, offset: 1 })).items).toEqual([{ row: 3, field: 'external_id', reason: 'is required' }])
    expect(await customerRows('imp-')).toEqual([
      { external_id: 'imp-a', name: 'Acme, Inc.', version: 2 },
      { external_id: 'imp-c', name: 'Gamma', version: 1 },
    ])
    const [acme] = await deps().sql`SELECT email, address_country, metadata FROM customers WHERE tenant_id = ${actor.tenantId} AND external_id = 'imp-a'`
    expect(acme).toEqual({ email: 'ap@acme.test', address_country: 'DE', metadata: { segment: 'enterprise' } })
  })

  it('resumes after a stop between checkpoints: every record written once, none lost', async () => {
    const csv = ['external_id,name', ...Array.from({ length: 10 }, (_, i) => `res-${String(i + 1).padStart(2, '0')},Customer ${i + 1}`)].join('\n')
    const task = await createTask(deps(), actor, { task_type: 'IMPORT', entity_type: 'CUSTOMERS', file_type: 'CSV', file: csv })
    // Batches of 3: rows 1-6 are checkpointed; rows 7-9 are written when the process "dies", before their checkpoint.
    await runTask(deps(), task.id, { batchSize: 3, stopAfterRow: 7 })
    expect(await getTask(deps(), actor, task.id)).toMatchObject({ task_status: 'PROCESSING', processed_records: 6, successful_records: 6 })
    expect(await customerRows('res-')).toHaveLength(6)

    // Another run does not take it while the first one's heartbeat is fresh…
    await runTask(deps(), task.id, { batchSize: 3 })
    expect((await getTask(deps(), actor, task.id)).processed_records).toBe(6)
    // …and takes it over once the heartbeat is stale, from the checkpoint.
    await runTask(deps(), task.id, { batchSize: 3, now: later(10) })
    expect(await getTask(deps(), actor, task.id)).toMatchObject({ task_status: 'COMPLETED', total_records: 10, processed_records: 10, successful_records: 10, failed_records: 0 })
    const rows = await customerRows('res-')
    expect(rows.map((r) => r.external_id)).toEqual(Array.from({ length: 10 }, (_, i) => `res-${String(i + 1).padStart(2, '0')}`))
    // Version 1 each: no record was written twice.
    expect(rows.every((r) => r.version === 1)).toBe(true)
  })

  it('a stopped task is not worked; set PENDING again it runs from its checkpoint', async () => {
    const task = await createTask(deps(), actor, { task_type: 'IMPORT', entity_type: 'CUSTOMERS', file_type: 'CSV', file: 'external_id\nstop-1\nstop-2' })
    expect(await updateTaskStatus(deps(), actor, task.id, 'FAILED')).toEqual({ message: `task ${task.id} stopped`, start: false })
    await runTask(deps(), task.id)
    expect(await getTask(deps(), actor, task.id)).toMatchObject({ task_status: 'FAILED', error_summary: 'stopped by tasks-test', processed_records: 0 })
    expect(await customerRows('stop-')).toEqual([])
    await expect(updateTaskStatus(deps(), actor, task.id, 'COMPLETED')).rejects.toMatchObject({ code: 'invalid_operation' })
    expect((await updateTaskStatus(deps(), actor, task.id, 'PENDING')).start).toBe(true)
    await runTask(deps(), task.id)
    expect(await getTask(deps(), actor, task.id)).toMatchObject({ task_status: 'COMPLETED', successful_records: 2, error_summary: null })
  })

  it('refuses a file in the request that cannot be read, and fails one at a URL before writing any record', async () => {
    const broken = 'external_id,name\nbad-1,One\nbad-2,"Two'
    await expect(createTask(deps(), actor, { task_type: 'IMPORT', entity_type: 'CUSTOMERS', file_type: 'CSV', file: broken })).rejects.toMatchObject({
      code: 'validation_error',
      details: { file: expect.stringContaining('quoted field') },
    })
    served.set('/broken.csv', { body: broken })
    const task = await createTask(deps(), actor, { task_type: 'IMPORT', entity_type: 'CUSTOMERS', file_type: 'CSV', file_url: `${base}/broken.csv` })
    await runTask(deps(), task.id, { batchSize: 1 })
    expect(await getTask(deps(), actor, task.id)).toMatchObject({ task_status: 'FAILED', processed_records: 0, error_summary: expect.stringContaining('quoted field') })
    expect(await customerRows('bad-')).toEqual([])
  })
})

describe('importing events', () => {
  it('sends them through intake with ids fixed by task and row, so a resumed import counts each once', async () => {
    const eventName = `imp-evt-${Date.now()}`
    const meterId = await readyMeter(t.h, { name: eventName, event_name: eventName, aggregation: { type: 'SUM', field: 'tokens' } })
    await t.h.http('POST', '/v1/customers', { body: { external_id: 'evt-cust' } })
    const at = new Date(Date.now() - 3_600_000).toISOString()
    const lines = Array.from({ length: 10 }, (_, i) => JSON.stringify({ event_name: eventName, external_customer_id: 'evt-cust', timestamp: at, properties: { tokens: i + 1 } }))
    lines.splice(4, 0, '{"event_name": "broken"', JSON.stringify({ event_name: eventName, timestamp: at }))
    served.set('/events.jsonl', { body: lines.join('\n') + '\n' })
    const task = await createTask(deps(), actor, { task_type: 'IMPORT', entity_type: 'EVENTS', file_type: 'JSON', file_url: `${base}/events.jsonl` })
    await runTask(deps(), task.id, { batchSize: 4, stopAfterRow: 9 })
    expect((await getTask(deps(), actor, task.id)).processed_records).toBe(8)
    // The file changes at its URL: a resumed run reads the copy its first run fetched.
    served.set('/events.jsonl', { body: '' })
    await runTask(deps(), task.id, { batchSize: 4, now: later(10) })
    expect(await getTask(deps(), actor, task.id)).toMatchObject({
      task_status: 'COMPLETED',
      total_records: 12,
      successful_records: 10,
      failed_records: 2,
      row_errors: [
        { row: 5, field: 'row', reason: 'is not valid JSON' },
        { row: 6, field: 'external_customer_id', reason: 'is required' },
      ],
    })
    const window = { meter_id: meterId, external_customer_id: 'evt-cust', start_time: new Date(Date.now() - 86_400_000).toISOString(), end_time: new Date().toISOString() }
    expect((await usage(t.h, window)).value).toBe('55')
    const ids = await t.h.http('POST', '/v1/events/query', { body: { external_customer_id: 'evt-cust', event_name: eventName } })
    expect(ids.body.events.map((e: { id: string }) => e.id).sort()).toContain(`${task.id}-1`)
  })

  it('fails a URL that answers an error, or announces a file too large, with the reason', async () => {
    const missing = await createTask(deps(), actor, { task_type: 'IMPORT', entity_type: 'EVENTS', file_type: 'CSV', file_url: `${base}/missing.csv` })
    await runTask(deps(), missing.id)
    expect(await getTask(deps(), actor, missing.id)).toMatchObject({ task_status: 'FAILED', error_summary: 'file_url answered HTTP 404', processed_records: 0 })
    served.set('/huge.csv', { headers: { 'content-length': String(500 * 1024 * 1024) }, body: '' })
    const huge = await createTask(deps(), actor, { task_type: 'IMPORT', entity_type: 'EVENTS', file_type: 'CSV', file_url: `${base}/huge.csv` })
    await runTask(deps(), huge.id)
    expect(await getTask(deps(), actor, huge.id)).toMatchObject({ task_status: 'FAILED', error_summary: expect.stringContaining('more than the 100 MiB') })
  })
})

describe('file_url on an internal network', () => {
  it('fails the task naming file_url, writing nothing, for a loopback host not allowed: by address, by name, or redirected to', async () => {
    served.set('/internal.csv', { body: 'external_id\nssrf-1' })
    const allowance = deps().config.taskImportAllowedHosts
    deps().config.taskImportAllowedHosts = []
    const outcome = async (fileUrl: string) => {
      const task = await createTask(deps(), actor, { task_type: 'IMPORT', entity_type: 'CUSTOMERS', file_type: 'CSV', file_url: fileUrl })
      await runTask(deps(), task.id)
      return getTask(deps(), actor, task.id)
    }
    try {
      expect(await outcome(`${base}/internal.csv`)).toMatchObject({
        task_status: 'FAILED',
        processed_records: 0,
        error_summary: 'file_url must name a public host: 127.0.0.1 is a loopback address (an operator allows an internal host with TASK_IMPORT_ALLOWED_HOSTS)',
      })
      // A name is resolved and each of its addresses checked; the IPv4-mapped form of 127.0.0.1 is loopback too.
      expect((await outcome(`${base.replace('127.0.0.1', 'localhost')}/internal.csv`)).error_summary).toMatch(/^file_url must name a public host: localhost resolves to (127\.0\.0\.1|::1), which is a loopback address/)
      expect((await outcome(`${base.replace('127.0.0.1', '[::ffff:127.0.0.1]')}/internal.csv`)).error_summary).toContain('[::ffff:7f00:1] is a loopback address')
    } finally {
      deps().config.taskImportAllowedHosts = allowance
    }
    // An allowed host that redirects to one not allowed is refused at the redirect.
    served.set('/moved.csv', { status: 302, body: `${base.replace('127.0.0.1', 'localhost')}/internal.csv` })
    expect((await outcome(`${base}/moved.csv`)).error_summary).toContain('file_url must name a public host: localhost resolves to')
    expect(await customerRows('ssrf-')).toEqual([])
    // The allowed host itself is read.
    expect(await outcome(`${base}/internal.csv`)).toMatchObject({ task_status: 'COMPLETED', successful_records: 1 })
  })
})

describe('importing prices and features', () => {
  it('creates them, refusing a lookup_key already taken per record', async () => {
    const plan = await t.h.http('POST', '/v1/plans', { body: { name: 'Imported prices' } })
    const prices = [
      { plan_id: plan.body.id, currency: 'USD', type: 'FIXED', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', amount: '9.99', lookup_key: 'imp-basic' },
      { plan_id: plan.body.id, currency: 'USD', type: 'FIXED', billing_model: 'FLAT_FEE', billing_period: 'MONTHLY', amount: '5', lookup_key: 'imp-basic' },
    ]
    const task = await createTask(deps(), actor, { task_type: 'IMPORT', entity_type: 'PRICES', file_type: 'JSON', file: prices.map((p) => JSON.stringify(p)).join('\n') })
    await runTask(deps(), task.id)
    expect(await getTask(deps(), actor, task.id)).toMatchObject({ task_status: 'COMPLETED', successful_records: 1, failed_records: 1, row_errors: [{ row: 2, field: 'lookup_key' }] })
    const features = await createTask(deps(), actor, { task_type: 'IMPORT', entity_type: 'FEATURES', file_type: 'CSV', file: 'name,type,lookup_key\nSeats,static,imp-seats\nSSO,boolean,' })
    await runTask(deps(), features.id)
    expect(await getTask(deps(), actor, features.id)).toMatchObject({ task_status: 'COMPLETED', successful_records: 2 })
  })
})
