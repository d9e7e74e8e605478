// Flexprice's alert log search over the wallet and feature balance alerts this service raises (domains/webhooks/alert-log.ts).
import type { JsonSchema } from '../../core/validate.ts'
import { filterSpec } from '../../infra/records.ts'
import { defineRoute, type Route } from '../route.ts'
import { dateTime, fromSearchBody, searchBody } from '../record-schema.ts'
import { toWire } from '../../domains/records/wire.ts'
import { searchAlertLog, type AlertLogFilter } from '../../domains/webhooks/alert-log.ts'

const base = searchBody(['created_at'], filterSpec({})) as { properties: Record<string, JsonSchema> }
const id: JsonSchema = { type: 'string', minLength: 1 }

export const alertRoutes: Route[] = [
  defineRoute<Record<string, unknown>>({
    method: 'POST',
    path: '/v1/alerts/search',
    tag: 'Alerts',
    summary: "The log of wallet and feature balance alerts changing state, newest first: by entity, customer, alert type and status, and time",
    permission: 'read',
    body: {
      ...base,
      properties: {
        ...base.properties,
        entity_type: { type: 'string', enum: ['wallet', 'feature'] },
        entity_id: id,
        customer_id: id,
        alert_type: { type: 'string', enum: ['low_ongoing_balance', 'low_credit_balance', 'feature_wallet_balance'] },
        alert_status: { type: 'string', enum: ['ok', 'info', 'warning', 'in_alarm'] },
        start_time: dateTime,
        end_time: dateTime,
      },
    },
    handler: async ({ deps, actor, body }) => {
      const { params } = fromSearchBody(body)
      return toWire(await searchAlertLog(deps, actor, params, body as AlertLogFilter))
    },
  }),
]
