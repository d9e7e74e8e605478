import { defineRoute, type Route } from '../route.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { DUNNING_ACTIONS, DUNNING_PRESETS } from '../../core/dunning.ts'
import { toWire } from '../../domains/records/wire.ts'
import * as service from '../../domains/dunning/service.ts'
import { settingsRoutes } from '../settings-routes.ts'

const step: JsonSchema = {
  type: 'object',
  required: ['days_after_due', 'actions'],
  additionalProperties: false,
  properties: {
    days_after_due: { type: 'integer', minimum: 0, maximum: 365 },
    actions: { type: 'array', minItems: 1, maxItems: DUNNING_ACTIONS.length, items: { type: 'string', enum: [...DUNNING_ACTIONS] } },
  },
}

export const dunningRoutes: Route[] = [
  ...settingsRoutes<service.SettingsInput>({
    path: '/v1/dunning/settings',
    tag: 'Dunning',
    summary: {
      get: "The environment's dunning schedule: on or off, and its steps (days after the due date, actions)",
      put: 'Turn dunning on or off, and set its steps or a preset (gentle, standard, strict); invoices due from when it is turned on enter it',
    },
    body: {
      type: 'object',
      additionalProperties: false,
      properties: { enabled: { type: 'boolean' }, preset: { type: 'string', enum: Object.keys(DUNNING_PRESETS) }, steps: { type: 'array', maxItems: 20, items: step } },
    },
    get: service.getSettings,
    update: service.updateSettings,
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/dunning/presets',
    tag: 'Dunning',
    summary: 'The documented presets, each a list of steps to copy into the settings',
    permission: 'read',
    handler: async () => service.presets(),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/invoices/{id}/dunning',
    tag: 'Dunning',
    summary: "Where an invoice stands in dunning: its status, the next step (when and what) and every step run with each action's outcome",
    permission: 'read',
    handler: async ({ deps, actor, params }) => toWire(await service.invoiceDunning(deps, actor, params.id)),
  }),
]
