// The usage-adjustments settings of the key's environment (docs/invoicing.md "Late usage and corrections settle
// themselves"); the job itself runs every 5 minutes and on POST /v1/jobs/usage-adjustments/run.
import { defineRoute, type Route } from '../route.ts'
import { toWire } from '../../domains/records/wire.ts'
import * as settings from '../../domains/invoicing/adjustments/settings.ts'

export const usageAdjustmentRoutes: Route[] = [
  defineRoute({
    method: 'GET',
    path: '/v1/usage-adjustments/settings',
    tag: 'Usage adjustments',
    summary: 'Whether finalized periods are adjusted for late usage and corrections, the minimum amount issued and the horizon in periods',
    permission: 'read',
    handler: async ({ deps, actor }) => toWire(await settings.getSettings(deps, actor)),
  }),
  defineRoute<settings.SettingsInput>({
    method: 'PUT',
    path: '/v1/usage-adjustments/settings',
    tag: 'Usage adjustments',
    summary: 'Set late_usage (adjust or ignore), minimum_amount (below it a difference waits for the next run) and horizon_periods',
    permission: 'write',
    body: {
      type: 'object',
      additionalProperties: false,
      properties: {
        late_usage: { type: 'string', enum: ['adjust', 'ignore'] },
        minimum_amount: { type: 'string', pattern: '^[0-9]+(\\.[0-9]+)?$', maxLength: 30 },
        horizon_periods: { type: 'integer', minimum: 1, maximum: 24 },
      },
    },
    handler: async ({ deps, actor, body }) => toWire(await settings.updateSettings(deps, actor, body)),
  }),
]
