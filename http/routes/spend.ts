// Spend control: the entitlement check SDKs call before each request (with an optional reservation),
// releasing a reservation, and a subscription's spending limit.
import { defineRoute, type Route } from '../route.ts'
import { nonNegativeDecimal } from '../record-schema.ts'
import { toWire } from '../../domains/records/wire.ts'
import { checkEntitlementOf, MAX_RESERVATION_SECONDS, releaseReservationOf, type CheckRequest } from '../../domains/credits/spend/check.ts'
import { getSpendingLimit, putSpendingLimit } from '../../domains/credits/spend/spending-limit.ts'

const TAG = 'Spend control'

export const spendRoutes: Route[] = [
  defineRoute<CheckRequest>({
    method: 'POST',
    path: '/v1/customers/{id}/entitlements/check',
    tag: TAG,
    summary: 'May the customer use `quantity` more of a feature now? Hard limits count stored usage, usage in flight and active reservations; a spending limit refuses once reached. `reserve` holds the quantity until it expires or is released',
    permission: 'read',
    body: {
      type: 'object',
      required: ['quantity'],
      additionalProperties: false,
      properties: {
        feature_id: { type: 'string', minLength: 1 },
        feature_lookup_key: { type: 'string', minLength: 1 },
        quantity: { anyOf: [{ type: 'number', minimum: 0 }, nonNegativeDecimal] },
        reserve: { type: 'boolean' },
        reservation_expires_in_seconds: { type: 'integer', minimum: 1, maximum: MAX_RESERVATION_SECONDS },
      },
    },
    handler: async ({ deps, actor, params, body }) => toWire(await checkEntitlementOf(deps, actor, params.id, body)),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/entitlements/reservations/{id}/release',
    tag: TAG,
    summary: 'Free a reservation made by a check before it expires (its usage event was sent, or the work failed)',
    permission: 'write',
    handler: async ({ deps, actor, params }) => toWire(await releaseReservationOf(deps, actor, params.id)),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/subscriptions/{id}/spending-limit',
    tag: TAG,
    summary: "The subscription's spending limit for its current period, and the accrued charges and holds that count against it",
    permission: 'read',
    handler: async ({ deps, actor, params }) => toWire(await getSpendingLimit(deps, actor, params.id)),
  }),
  defineRoute<{ spending_limit: string | null }>({
    method: 'PUT',
    path: '/v1/subscriptions/{id}/spending-limit',
    tag: TAG,
    summary: "Set the subscription's spending limit per period, in its currency; null removes it",
    permission: 'write',
    body: { type: 'object', required: ['spending_limit'], additionalProperties: false, properties: { spending_limit: { anyOf: [nonNegativeDecimal, { type: 'null' }] } } },
    handler: async ({ deps, actor, params, body }) => toWire(await putSpendingLimit(deps, actor, params.id, body)),
  }),
]
