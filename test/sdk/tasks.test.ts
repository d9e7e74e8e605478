// Flexprice's SDK driving /v1/tasks: an import from a URL and its per-row errors, an export downloaded, the status
// operations and the workflow result; and the scheduled tasks' paths answered by their own routes, not by /v1/tasks/{id}.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Flexprice } from '@flexprice/sdk'
import { twoTenants } from '../catalog.ts'
import { failure, sdk } from './client.ts'

// The test's file server listens on 127.0.0.1, an internal address the operator allows here.
const t = twoTenants({ env: { TASK_IMPORT_ALLOWED_HOSTS: '127.0.0.1' } })
let fp: Flexprice
let server: Server
let base: string

beforeAll(async () => {
  fp = sdk(t.h)
  const csv = 'external_id,name,email\nsdk-imp-1,First,one@first.test\nsdk-imp-2,Second,not-an-email-is-fine\n,Nameless,\n'
  server = createServer((req, res) => (req.url === '/customers.csv' ? res.writeHead(200, { 'content-type': 'text/csv' }).end(csv) : res.writeHead(404).end()))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

/** The task once it ended (tasks start at once in the API process). */
async function ended(id: string) {
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; ) {
    const task = await fp.tasks.getTask(id)
    if (task.taskStatus === 'COMPLETED' || task.taskStatus === 'FAILED') return task
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`task ${id} did not end`)
}

describe('tasks through the SDK', () => {
  it('imports customers from a URL, with the refused row readable from the task', async () => {
    const created = await fp.tasks.createTask({ taskType: 'IMPORT', entityType: 'CUSTOMERS', fileType: 'CSV', fileUrl: `${base}/customers.csv`, fileName: 'customers.csv' })
    expect(created).toMatchObject({ taskType: 'IMPORT', entityType: 'CUSTOMERS', fileUrl: `${base}/customers.csv`, workflowId: created.id })
    const task = await ended(created.id!)
    expect(task).toMatchObject({ taskStatus: 'COMPLETED', totalRecords: 3, processedRecords: 3, successfulRecords: 2, failedRecords: 1 })
    expect(task.errorSummary).toContain('1 of 3 records refused')
    const raw = await t.h.http('GET', `/v1/tasks/${created.id}`)
    expect(raw.body.row_errors).toEqual([{ row: 3, field: 'external_id', reason: 'is required' }])
    expect((await fp.customers.getCustomerByExternalId('sdk-imp-2')).name).toBe('Second')

    const result = await fp.tasks.getTaskResult(created.id!)
    expect(result).toMatchObject({ workflowId: created.id, message: expect.stringContaining('IMPORT of CUSTOMERS COMPLETED: 3 of 3 records processed, 2 succeeded, 1 failed') })
    const listed = await fp.tasks.listTasks({ taskType: 'IMPORT', entityType: 'CUSTOMERS', taskStatus: 'COMPLETED' })
    expect(listed.items!.map((i) => i.id)).toContain(created.id)
    expect((await fp.tasks.listTasks({ taskType: 'EXPORT' })).items!.map((i) => i.id)).not.toContain(created.id)
  })

  it('exports invoices to CSV and downloads the file', async () => {
    const customer = await fp.customers.createCustomer({ externalId: 'sdk-exp-1' })
    const invoice = await fp.invoices.createInvoice({ customerId: customer.id!, currency: 'USD', subtotal: '12.50', total: '12.50', amountDue: '12.50', lineItems: [{ displayName: 'Setup', amount: '12.50', quantity: '1' }] })
    await fp.invoices.finalizeInvoice(invoice.id!)
    const created = await fp.tasks.createTask({ taskType: 'EXPORT', entityType: 'INVOICES' as never, fileType: 'CSV', fileUrl: '' })
    const task = await ended(created.id!)
    expect(task).toMatchObject({ taskStatus: 'COMPLETED', errorSummary: undefined })
    expect(task.totalRecords).toBeGreaterThanOrEqual(1)

    // The SDK accepts only JSON: it is told where the file is.
    const link = await fp.tasks.downloadTaskExport(created.id!)
    expect(link).toMatchObject({ download_url: `${t.h.baseUrl}/v1/tasks/${created.id}/download`, content_type: 'text/csv; charset=utf-8' })
    const file = await fetch(link.download_url!, { headers: { 'x-api-key': t.h.key } })
    expect(file.status).toBe(200)
    expect(file.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    expect(file.headers.get('content-disposition')).toContain(`invoices-${created.id}.csv`)
    const text = await file.text()
    expect(text).toContain(invoice.id!)
    expect(text).toContain('12.5')
    // An import has no file.
    const imports = await fp.tasks.listTasks({ taskType: 'IMPORT' })
    expect((await failure(fp.tasks.downloadTaskExport(imports.items![0].id!))).statusCode).toBe(400)
  })

  it('exports to Parquet over a window given beside the SDK fields, streamed to a client that takes any type', async () => {
    const res = await t.h.http('POST', '/v1/tasks', { body: { task_type: 'EXPORT', entity_type: 'invoices', file_type: 'PARQUET', start_time: '2020-01-01T00:00:00Z', end_time: new Date(Date.now() + 60_000).toISOString() } })
    expect(res.status).toBe(202)
    expect(res.body).toMatchObject({ entity_type: 'INVOICES', start_time: '2020-01-01T00:00:00.000Z' })
    const task = await ended(res.body.id)
    expect(task.taskStatus).toBe('COMPLETED')
    const file = await fetch(`${t.h.baseUrl}/v1/tasks/${res.body.id}/download`, { headers: { 'x-api-key': t.h.key, accept: '*/*' } })
    expect(file.headers.get('content-type')).toBe('application/vnd.apache.parquet')
    const bytes = Buffer.from(await file.arrayBuffer())
    expect(bytes.subarray(0, 4).toString()).toBe('PAR1')
    expect(Number(file.headers.get('content-length'))).toBe(bytes.length)
  })

  it('runs a failed import again on request (PENDING), and refuses a status it cannot take', async () => {
    const created = await fp.tasks.createTask({ taskType: 'IMPORT', entityType: 'EVENTS', fileType: 'JSON', fileUrl: `${base}/missing.jsonl` })
    const task = await ended(created.id!)
    expect(task).toMatchObject({ taskStatus: 'FAILED', errorSummary: 'file_url answered HTTP 404' })
    expect(await fp.tasks.updateTaskStatus(created.id!, { taskStatus: 'PENDING' })).toMatchObject({ message: expect.stringContaining('runs again') })
    expect(await ended(created.id!)).toMatchObject({ taskStatus: 'FAILED', errorSummary: 'file_url answered HTTP 404' })
    const refused = await failure(fp.tasks.updateTaskStatus(created.id!, { taskStatus: 'COMPLETED' }))
    expect(refused.statusCode).toBe(400)
    expect(JSON.parse(refused.body)).toMatchObject({ code: 'invalid_operation', details: { task_status: 'COMPLETED', current: 'FAILED' } })
  })

  it('refuses a bad task at creation with the field named, recording nothing', async () => {
    const before = (await fp.tasks.listTasks({})).pagination!.total
    for (const [body, field] of [
      [{ taskType: 'IMPORT', entityType: 'INVOICES', fileType: 'CSV', fileUrl: `${base}/x.csv` }, 'entity_type'],
      [{ taskType: 'IMPORT', entityType: 'EVENTS', fileType: 'XML', fileUrl: `${base}/x.csv` }, 'file_type'],
      [{ taskType: 'IMPORT', entityType: 'EVENTS', fileType: 'CSV', fileUrl: 'file:///etc/passwd' }, 'file_url'],
      [{ taskType: 'EXPORT', entityType: 'INVOICES', fileType: 'JSON', fileUrl: '' }, 'file_type'],
    ] as const) {
      const err = await failure(fp.tasks.createTask(body as never))
      expect(err.statusCode).toBe(400)
      expect(JSON.parse(err.body)).toMatchObject({ code: 'validation_error', details: { [field]: expect.any(String) } })
    }
    expect((await fp.tasks.listTasks({})).pagination!.total).toBe(before)
  })

  it('leaves /v1/tasks/scheduled and /v1/tasks/result to their own routes', async () => {
    const scheduled = await fp.scheduledTasks.listScheduledTasks({})
    expect(Array.isArray(scheduled.items)).toBe(true)
    const missing = await failure(fp.tasks.getTaskResult('task_none'))
    expect(missing.statusCode).toBe(404)
    expect((await fp.tasks.listTasks({ limit: 1 })).items).toHaveLength(1)
  })
})
