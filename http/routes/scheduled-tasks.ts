// Scheduled exports, Flexprice's scheduled tasks (/v1/tasks/scheduled): create, list, get (with its runs), pause or
// resume, delete, force a run; and Flexprice's schedule-update-billing-period, which runs the subscription lifecycle
// job now.
import type { JsonSchema } from '../../core/validate.ts'
import { EXPORT_INTERVALS } from '../../core/export-windows.ts'
import * as service from '../../domains/exports/service.ts'
import { TASK_ENTITIES } from '../../domains/exports/task-entities.ts'
import { toWire } from '../../domains/records/wire.ts'
import { runJobIfFree } from '../../infra/scheduler.ts'
import { jobs } from '../../worker/jobs.ts'
import { recordRoutes } from '../record-routes.ts'
import { dateTime, metadataSchema, versionField } from '../record-schema.ts'
import { defineRoute, type Route } from '../route.ts'

const text = (maxLength = 1024): JsonSchema => ({ type: 'string', minLength: 1, maxLength })

const jobConfig: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  description: 'Flexprice S3JobConfig, plus format, local_directory, filters and, without a connection_id, the bucket credentials (sealed, never returned)',
  properties: {
    bucket: text(63),
    key_prefix: { type: 'string', maxLength: 512 },
    region: text(64),
    endpoint_url: text(),
    use_path_style: { type: 'boolean' },
    compression: { type: 'string', enum: ['none', 'gzip'] },
    encryption: { type: 'string', enum: ['AES256', 'aws:kms', 'aws:kms:dsse'] },
    format: { type: 'string', enum: ['csv', 'parquet'] },
    local_directory: { ...text(512), description: 'a directory under DATA_DIR/exports, instead of a bucket' },
    filters: { type: 'object', description: "the export's filters, as the entity takes them (docs/exports.md)" },
    access_key_id: text(256),
    secret_access_key: text(256),
    session_token: text(4096),
  },
}

const SDK_JOB = 'subscription-lifecycle'

export const scheduledTaskRoutes: Route[] = [
  defineRoute({
    method: 'POST',
    path: '/v1/tasks/scheduled/schedule-update-billing-period',
    tag: 'Scheduled tasks',
    summary: `Moves every subscription due now to its next billing period (runs the ${SDK_JOB} job, which the worker also runs every minute)`,
    permission: 'admin',
    body: { type: 'object', additionalProperties: false, properties: {} },
    handler: async ({ deps }) => {
      const job = jobs.find((j) => j.name === SDK_JOB)!
      const summary = await runJobIfFree(deps, job)
      return { job: SDK_JOB, ran: summary !== undefined, summary: summary ?? null }
    },
  }),
  ...recordRoutes({
    path: '/v1/tasks/scheduled',
    tag: 'Scheduled tasks',
    noun: 'scheduled task',
    sortable: ['created_at', 'updated_at'],
    filters: service.FILTERS,
    createBody: {
      type: 'object',
      required: ['entity_type', 'interval', 'job_config'],
      additionalProperties: false,
      properties: {
        connection_id: { type: 'string', minLength: 1, maxLength: 255, description: "an s3 connection of this environment whose credentials the bucket export uses (read at each run); else give them in job_config" },
        entity_type: { type: 'string', enum: Object.keys(TASK_ENTITIES) },
        interval: { type: 'string', enum: [...EXPORT_INTERVALS, 'custom'], description: 'custom is refused: it carries no schedule' },
        enabled: { type: 'boolean' },
        job_config: jobConfig,
        start_time: { ...dateTime, description: 'the first window starts here (a backfill); default the current window' },
        metadata: metadataSchema,
      },
    },
    updateBody: { type: 'object', required: ['enabled'], additionalProperties: false, properties: { enabled: { type: 'boolean' }, version: versionField } },
    deleted: 'no_content',
    service: {
      create: service.createScheduledTask,
      get: service.getScheduledTask,
      list: service.listScheduledTasks,
      update: service.updateScheduledTask,
      remove: service.deleteScheduledTask,
    },
  }),
  defineRoute<service.ForceRunInput>({
    method: 'POST',
    path: '/v1/tasks/scheduled/{id}/run',
    tag: 'Scheduled tasks',
    summary: 'Runs a scheduled export now: a range (one run per day of it), or every window from the watermark to now',
    permission: 'write',
    body: { type: 'object', additionalProperties: false, properties: { start_time: dateTime, end_time: dateTime } },
    handler: async ({ deps, actor, params, body }) => toWire(await service.triggerScheduledTaskRun(deps, actor, params.id, body ?? {})),
  }),
]
