// The usage-adjustments settings of the key's environment (docs/invoicing.md "Late usage and corrections settle
// themselves"); the job itself runs every 5 minutes and on POST /v1/jobs/usage-adjustments/run.
import { defineRoute, type Route } from '../route.ts'
import { toWire } from '../../domains/records/wire.ts'
import { settingsRoutes } from '../settings-routes.ts'
import { decimalSchema } from '../../core/validate.ts'
import * as settings from '../../domains/invoicing/adjustments/settings.ts'
import { listAdjustments, type ListAdjustmentsQuery } from '../../domains/invoicing/adjustments/service.ts'

export const usageAdjustmentRoutes: Route[] = [
  defineRoute<unknown, ListAdjustmentsQuery>({
    method: 'GET',
    path: '/v1/usage-adjustments',
    tag: 'Usage adjustments',
    summary: 'Adjustments of finalized periods, newest first: amounts, how and on which document each was issued (or the next invoice it waits for), and the corrections and late events it settles',
    permission: 'read',
    query: {
      type: 'object',
      additionalProperties: false,
      properties: {
        invoice_id: { type: 'string', description: 'the adjusted invoice, or the invoice that issued or carries the adjustment' },
        customer_id: { type: 'string' },
        status: { type: 'string', enum: ['pending', 'scheduled', 'issued'] },
        method: { type: 'string', enum: ['next_invoice', 'own_invoice', 'credit_note'] },
        limit: { type: 'integer', minimum: 1, maximum: 1000, default: 50 },
        offset: { type: 'integer', minimum: 0, default: 0 },
      },
    },
    handler: async ({ deps, actor, query }) => toWire(await listAdjustments(deps, actor, query)),
  }),
  ...settingsRoutes<settings.SettingsInput>({
    path: '/v1/usage-adjustments/settings',
    tag: 'Usage adjustments',
    summary: {
      get: 'Whether finalized periods are adjusted for late usage and corrections, how more usage is billed, the minimum amount issued and the horizon in periods',
      put: 'Set late_usage (adjust or ignore), method (next_invoice: a line on the subscription\'s next invoice; own_invoice: a USAGE_ADJUSTMENT invoice), minimum_amount (below it a difference waits for the next run) and horizon_periods',
    },
    body: {
      type: 'object',
      additionalProperties: false,
      properties: {
        late_usage: { type: 'string', enum: ['adjust', 'ignore'] },
        method: { type: 'string', enum: ['next_invoice', 'own_invoice'] },
        minimum_amount: decimalSchema(false),
        horizon_periods: { type: 'integer', minimum: 1, maximum: 24 },
      },
    },
    get: settings.getSettings,
    update: settings.updateSettings,
  }),
]
