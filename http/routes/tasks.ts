// /v1/tasks (Flexprice's tasks): imports and exports as jobs with progress. The `{id}` routes never see
// `scheduled` or `result`: GET /v1/tasks/result is listed before them here, and api-routes.ts mounts the scheduled
// tasks' routes (/v1/tasks/scheduled…, scheduled-tasks.ts) before these.
import { createReadStream } from 'node:fs'
import type { JsonSchema } from '../../core/validate.ts'
import type { TaskStatus } from '../../domains/tasks/store.ts'
import { createTask, exportFile, getTask, listTasks, startTask, taskErrors, taskResult, updateTaskStatus, type CreateTaskInput } from '../../domains/tasks/service.ts'
import { MAX_IMPORT_BYTES } from '../../domains/tasks/source.ts'
import { toWire } from '../../domains/records/wire.ts'
import { listQuerySchema } from '../list.ts'
import { dateTime, fromListQuery, metadataSchema } from '../record-schema.ts'
import { defineRoute, type Route } from '../route.ts'

const STATUSES: readonly TaskStatus[] = ['PENDING', 'PROCESSING', 'COMPLETED', 'FAILED']

/** The request as sent: the window's instants as text. */
type CreateBody = Omit<CreateTaskInput, 'start_time' | 'end_time'> & { start_time?: string; end_time?: string }

const createBody: JsonSchema = {
  type: 'object',
  required: ['task_type', 'entity_type', 'file_type'],
  additionalProperties: false,
  properties: {
    task_type: { type: 'string', enum: ['IMPORT', 'EXPORT'] },
    entity_type: { type: 'string', minLength: 1, maxLength: 64, description: 'IMPORT: EVENTS, CUSTOMERS, PRICES, FEATURES; EXPORT: EVENTS, USAGE, INVOICES, CREDIT_NOTES, WALLET_TRANSACTIONS, ANALYTICS' },
    file_type: { type: 'string', minLength: 1, maxLength: 16, description: 'IMPORT: CSV or JSON (JSON Lines: one object per line); EXPORT: CSV or PARQUET' },
    file_url: { type: 'string', maxLength: 2048, description: `IMPORT: an http(s) URL of the file (at most ${MAX_IMPORT_BYTES / 1024 / 1024} MiB), fetched when the task runs from a public address (an internal host only as TASK_IMPORT_ALLOWED_HOSTS allows)` },
    file: { type: 'string', maxLength: 100 * 1024 * 1024, description: 'IMPORT: the file itself, instead of file_url (within the request size limit)' },
    file_name: { type: 'string', minLength: 1, maxLength: 255 },
    metadata: metadataSchema,
    start_time: { ...dateTime, description: 'EXPORT: rows from this instant (default: the earliest)' },
    end_time: { ...dateTime, description: 'EXPORT: rows before this instant (default: now)' },
    filters: { type: 'object', description: 'EXPORT: the entity\'s filters, as the exports engine takes them' },
  },
}

const toInput = (b: CreateBody): CreateTaskInput => ({
  ...b,
  start_time: b.start_time ? new Date(b.start_time) : undefined,
  end_time: b.end_time ? new Date(b.end_time) : undefined,
})

const listQuery = listQuerySchema(['created_at', 'updated_at'], {
  task_type: { type: 'string', enum: ['IMPORT', 'EXPORT'] },
  entity_type: { type: 'string', minLength: 1, maxLength: 64 },
  task_status: { type: 'string', enum: [...STATUSES] },
  created_by: { type: 'string', minLength: 1 },
  scheduled_task_id: { type: 'string', minLength: 1 },
  start_time: dateTime,
  end_time: dateTime,
  expand: { type: 'string', maxLength: 255 },
})

const pageQuery: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 }, offset: { type: 'integer', minimum: 0, default: 0 } },
}

export const taskRoutes: Route[] = [
  defineRoute<CreateBody>({
    method: 'POST',
    path: '/v1/tasks',
    tag: 'Tasks',
    summary: 'Creates an import (events, customers, prices or features from CSV or JSON Lines, in the request or at file_url) or an export (to a file to download) and starts it; progress on GET /v1/tasks/{id}',
    permission: 'write',
    readsUsage: false,
    status: 202,
    body: createBody,
    handler: async ({ deps, actor, body }) => {
      const task = await createTask(deps, actor, toInput(body))
      startTask(deps, task.id)
      return task
    },
  }),
  defineRoute<Record<string, never>, Record<string, unknown>>({
    method: 'GET',
    path: '/v1/tasks',
    tag: 'Tasks',
    summary: 'Tasks, newest first, filtered by task_type, entity_type, task_status, created_by, scheduled_task_id and creation time',
    permission: 'read',
    readsUsage: false,
    query: listQuery,
    handler: async ({ deps, actor, query }) => listTasks(deps, actor, fromListQuery(query)),
  }),
  defineRoute<Record<string, never>, { workflow_id: string }>({
    method: 'GET',
    path: '/v1/tasks/result',
    tag: 'Tasks',
    summary: "A task's outcome in words (Flexprice's workflow result; workflow_id is the task's id)",
    permission: 'read',
    readsUsage: false,
    query: { type: 'object', required: ['workflow_id'], additionalProperties: false, properties: { workflow_id: { type: 'string', minLength: 1 } } },
    handler: async ({ deps, actor, query }) => taskResult(deps, actor, query.workflow_id),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/tasks/{id}',
    tag: 'Tasks',
    summary: 'A task: status, progress (total, processed, successful and failed records), error_summary and, for an import, its first 100 row errors',
    permission: 'read',
    readsUsage: false,
    handler: async ({ deps, actor, params }) => getTask(deps, actor, params.id),
  }),
  defineRoute<Record<string, never>, { limit: number; offset: number }>({
    method: 'GET',
    path: '/v1/tasks/{id}/errors',
    tag: 'Tasks',
    summary: "An import's refused records, by row: {row, field, reason}",
    permission: 'read',
    readsUsage: false,
    query: pageQuery,
    handler: async ({ deps, actor, params, query }) => toWire(await taskErrors(deps, actor, params.id, query)),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/tasks/{id}/download',
    tag: 'Tasks',
    summary: "A completed export's file, streamed as text/csv or Parquet; a client that accepts only JSON (Flexprice's SDK) gets {download_url, file_name, content_type} instead",
    permission: 'read',
    readsUsage: false,
    produces: 'application/octet-stream',
    handler: async ({ deps, actor, params, ctx }) => {
      const file = await exportFile(deps, actor, params.id)
      if (ctx.accepts(file.contentType.split(';')[0], 'application/json') === 'application/json') {
        return { download_url: `${ctx.protocol}://${ctx.host}/v1/tasks/${encodeURIComponent(params.id)}/download`, file_name: file.fileName, content_type: file.contentType }
      }
      ctx.status = 200
      ctx.type = file.contentType
      ctx.length = file.bytes
      ctx.attachment(file.fileName)
      ctx.body = createReadStream(file.path)
      return undefined
    },
  }),
  defineRoute<{ task_status: TaskStatus }>({
    method: 'PUT',
    path: '/v1/tasks/{id}/status',
    tag: 'Tasks',
    summary: 'FAILED stops a PENDING or PROCESSING task at its next checkpoint (the batch in hand undone, or for events already in intake, counted); PENDING runs a FAILED one again from its checkpoint',
    permission: 'write',
    readsUsage: false,
    body: { type: 'object', required: ['task_status'], additionalProperties: false, properties: { task_status: { type: 'string', enum: [...STATUSES] } } },
    handler: async ({ deps, actor, params, body }) => {
      const { message, start } = await updateTaskStatus(deps, actor, params.id, body.task_status)
      if (start) startTask(deps, params.id)
      return { message }
    },
  }),
]
