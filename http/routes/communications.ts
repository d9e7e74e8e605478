import type { Route } from '../route.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { recordRoutes } from '../record-routes.ts'
import { settingsRoutes } from '../settings-routes.ts'
import * as service from '../../domains/communications/service.ts'

const email: JsonSchema = { type: 'string', format: 'email', maxLength: 320 }
const part: JsonSchema = { type: ['string', 'null'], minLength: 1, maxLength: 100_000 }
const template: JsonSchema = { type: 'object', additionalProperties: false, properties: { subject: { ...part, maxLength: 500 }, text: part, html: part } }
const byKind = (schema: JsonSchema): JsonSchema => ({ type: 'object', additionalProperties: false, properties: Object.fromEntries(service.KINDS.map((k) => [k, schema])) })

const settingsBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    from_email: email,
    from_name: { type: ['string', 'null'], maxLength: 200 },
    reply_to: { ...email, type: ['string', 'null'] },
    auto_send: byKind({ type: 'boolean' }),
    templates: byKind(template),
  },
}

// The settings paths come before the record routes' /v1/communications/{id}.
export const communicationRoutes: Route[] = [
  ...settingsRoutes<service.SettingsInput>({
    path: '/v1/communications/settings',
    tag: 'Communications',
    summary: {
      get: "The environment's email sender, which kinds are sent automatically, its template overrides, the built-in templates and their placeholders",
      put: 'Change the sender, automatic sending per kind, or template parts ({{placeholder}} syntax; null restores the built-in part)',
    },
    body: settingsBody,
    get: service.getSettings,
    update: service.updateSettings,
  }),
  ...recordRoutes({
    path: '/v1/communications',
    tag: 'Communications',
    noun: 'communication',
    sortable: ['created_at', 'updated_at'],
    filters: service.FILTERS,
    service: { list: service.listCommunications, get: service.getCommunication },
  }),
]
