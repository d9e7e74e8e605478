// POST /v1/jobs/{name}/run: an admin runs a scheduled job now (under the same lease as the scheduler,
// so it never runs twice at once) and gets its summary.
import { notFound } from '../../core/errors.ts'
import { jobs } from '../../worker/jobs.ts'
import { runJob } from '../../infra/scheduler.ts'
import { defineRoute, type Route } from '../route.ts'

export const jobRoutes: Route[] = [
  defineRoute({
    method: 'POST',
    path: '/v1/jobs/{name}/run',
    tag: 'Jobs',
    summary: `Run a scheduled job now and return its summary (${jobs.map((j) => j.name).join(', ')})`,
    permission: 'admin',
    handler: async ({ deps, params }) => {
      const job = jobs.find((j) => j.name === params.name)
      if (!job) throw notFound('job', params.name)
      return { job: job.name, summary: await runJob(deps, job) }
    },
  }),
]
