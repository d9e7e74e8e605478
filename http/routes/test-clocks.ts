// Test clocks (sandbox environments): create, list, get, advance, and delete with their customers
// (docs/test-clocks.md). An advance runs the worker's jobs that act on customers' records.
import { jobs } from '../../worker/jobs.ts'
import * as service from '../../domains/clocks/service.ts'
import { toWire } from '../../domains/records/wire.ts'
import { recordRoutes } from '../record-routes.ts'
import { dateTime, metadataSchema } from '../record-schema.ts'
import { defineRoute, type Route } from '../route.ts'

const PATH = '/v1/test_clocks'
const clockJobs: service.ClockJobs = jobs.filter((job) => job.onTestClocks)

export const testClockRoutes: Route[] = [
  ...recordRoutes<service.ClockView>({
    path: PATH,
    tag: 'Test clocks',
    noun: 'test clock',
    sortable: ['created_at', 'updated_at', 'name', 'frozen_time'],
    filters: {},
    createBody: {
      type: 'object',
      required: ['name', 'frozen_time'],
      additionalProperties: false,
      properties: { name: { type: 'string', minLength: 1, maxLength: 255 }, frozen_time: dateTime, metadata: metadataSchema },
    },
    service: { create: service.createClock, get: service.getClock, list: service.listClocks },
  }),
  defineRoute<{ frozen_time: string }>({
    method: 'POST',
    path: `${PATH}/{id}/advance`,
    tag: 'Test clocks',
    summary: `Move the clock forward (at most two years a call); the scheduled jobs run for its customers (${clockJobs.map((j) => j.name).join(', ')}). Answers at once, status advancing`,
    permission: 'write',
    body: { type: 'object', required: ['frozen_time'], additionalProperties: false, properties: { frozen_time: dateTime } },
    handler: async ({ deps, actor, params, body }) => toWire(await service.advanceClock(deps, actor, params.id, body, clockJobs)),
  }),
  defineRoute({
    method: 'DELETE',
    path: `${PATH}/{id}`,
    tag: 'Test clocks',
    summary: "Delete the clock with its customers and everything of theirs, for good (their reads answer 404)",
    permission: 'write',
    body: { type: 'object', additionalProperties: false, properties: {} },
    status: 204,
    handler: async ({ deps, actor, params, ctx }) => {
      await service.deleteClock(deps, actor, params.id)
      ctx.status = 204
      return undefined
    },
  }),
]
