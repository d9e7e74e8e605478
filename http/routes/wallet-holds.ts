// Credit holds on wallets (issue 35): create, settle, release, read. Mounted with the wallet routes.
import { defineRoute, type Route } from '../route.ts'
import { metadataSchema, nonNegativeDecimal } from '../record-schema.ts'
import { toWire } from '../../domains/records/wire.ts'
import * as holds from '../../domains/credits/wallets/holds.ts'

const TAG = 'Wallets'

export const holdRoutes: Route[] = [
  defineRoute<holds.CreateHoldInput>({
    method: 'POST',
    path: '/v1/wallets/{id}/holds',
    tag: TAG,
    summary: "Hold credits for work in flight: `amount` in credits, or `feature_id` and `quantity` priced by the customer's price; refused when the available balance cannot cover it",
    permission: 'write',
    status: 201,
    body: {
      type: 'object',
      additionalProperties: false,
      properties: {
        amount: nonNegativeDecimal,
        feature_id: { type: 'string', minLength: 1 },
        quantity: nonNegativeDecimal,
        expires_in_seconds: { type: 'integer', minimum: 1, maximum: holds.MAX_HOLD_SECONDS, description: 'default 600' },
        idempotency_key: { type: 'string', minLength: 1, maxLength: 255 },
        metadata: metadataSchema,
      },
    },
    handler: async ({ deps, actor, params, body }) => toWire(await holds.createHold(deps, actor, params.id, body)),
  }),
  defineRoute<Record<string, never>, { status?: 'active' | 'settled' | 'released' | 'expired'; limit: number; offset: number }>({
    method: 'GET',
    path: '/v1/wallets/{id}/holds',
    tag: TAG,
    summary: "The wallet's holds, newest first",
    permission: 'read',
    query: {
      type: 'object',
      additionalProperties: false,
      properties: {
        status: { type: 'string', enum: ['active', 'settled', 'released', 'expired'] },
        limit: { type: 'integer', minimum: 1, maximum: 1000, default: 50 },
        offset: { type: 'integer', minimum: 0, default: 0 },
      },
    },
    handler: async ({ deps, actor, params, query }) => toWire(await holds.listHolds(deps, actor, params.id, query)),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/wallets/holds/{id}',
    tag: TAG,
    summary: 'One hold',
    permission: 'read',
    handler: async ({ deps, actor, params }) => toWire(await holds.getHold(deps, actor, params.id)),
  }),
  defineRoute<holds.SettleHoldInput>({
    method: 'POST',
    path: '/v1/wallets/holds/{id}/settle',
    tag: TAG,
    summary: 'Post one debit for what was used (`amount` in credits, or `quantity` of the hold\'s feature) and free the rest; more than the hold only with allow_overage. Twice answers the first result',
    permission: 'write',
    body: {
      type: 'object',
      additionalProperties: false,
      properties: { amount: nonNegativeDecimal, quantity: nonNegativeDecimal, allow_overage: { type: 'boolean' } },
    },
    handler: async ({ deps, actor, params, body }) => toWire(await holds.settleHold(deps, actor, params.id, body)),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/wallets/holds/{id}/release',
    tag: TAG,
    summary: 'Free the whole hold; nothing is debited. Twice answers the first result',
    permission: 'write',
    handler: async ({ deps, actor, params }) => toWire(await holds.releaseHold(deps, actor, params.id)),
  }),
]
