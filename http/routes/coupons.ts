import { defineRoute, type Route } from '../route.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { recordRoutes } from '../record-routes.ts'
import { currencySchema, dateTime, fromListQuery, idList, listQuery, metadataSchema, nonNegativeDecimal, versionField } from '../record-schema.ts'
import { toWire } from '../../domains/records/wire.ts'
import * as service from '../../domains/invoicing/coupons/service.ts'

const id: JsonSchema = { type: 'string', minLength: 1 }
// A rule names a few plans or prices: the shared id list, at most 100, each once.
const ids: JsonSchema = { ...idList, minItems: 1, maxItems: 100, uniqueItems: true }

export const couponRoutes: Route[] = [
  defineRoute<service.AssociateInput>({
    method: 'POST',
    path: '/v1/coupons/{id}/associations',
    tag: 'Coupons',
    summary: 'Redeem a coupon for a subscription, or for one of its line items',
    permission: 'write',
    status: 201,
    body: {
      type: 'object',
      required: ['subscription_id'],
      additionalProperties: false,
      properties: { subscription_id: id, subscription_line_item_id: id, start_date: dateTime, end_date: dateTime, metadata: metadataSchema },
    },
    handler: async ({ deps, actor, params, body }) => toWire(await service.associateCoupon(deps, actor, params.id, body)),
  }),
  defineRoute<Record<string, never>, Record<string, unknown>>({
    method: 'GET',
    path: '/v1/coupons/associations',
    tag: 'Coupons',
    summary: 'List coupon associations (filter by subscription_id or coupon_id)',
    permission: 'read',
    query: listQuery(['created_at', 'start_date'], service.ASSOCIATION_FILTERS),
    handler: async ({ deps, actor, query }) => toWire(await service.listAssociations(deps, actor, fromListQuery(query))),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/coupons/associations/{id}',
    tag: 'Coupons',
    summary: 'End a coupon association now: later invoices are not discounted',
    permission: 'write',
    handler: async ({ deps, actor, params }) => toWire(await service.endAssociation(deps, actor, params.id)),
  }),
  // After the association routes: /v1/coupons/{id} would otherwise take /v1/coupons/associations.
  ...recordRoutes({
    path: '/v1/coupons',
    tag: 'Coupons',
    noun: 'coupon',
    sortable: ['created_at', 'updated_at', 'name'],
    filters: service.FILTERS,
    createBody: {
      type: 'object',
      required: ['name', 'type', 'cadence'],
      additionalProperties: false,
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 255 },
        type: { type: 'string', enum: ['fixed', 'percentage'] },
        cadence: { type: 'string', enum: ['once', 'repeated', 'forever'] },
        amount_off: nonNegativeDecimal,
        percentage_off: nonNegativeDecimal,
        currency: currencySchema,
        duration_in_periods: { type: 'integer', minimum: 1, maximum: 1200 },
        max_redemptions: { type: 'integer', minimum: 1 },
        redeem_after: dateTime,
        redeem_before: dateTime,
        rules: {
          type: 'object',
          additionalProperties: false,
          description: 'what the coupon may discount (docs/catalog.md, "Coupon rules"); every restriction given must hold',
          properties: {
            plan_ids: { ...ids, description: 'only lines billed under one of these plans' },
            price_ids: { ...ids, description: 'only lines billing one of these prices' },
            minimum_amount: { ...nonNegativeDecimal, description: 'only invoices whose subtotal (before discounts and taxes) reaches it' },
            minimum_amount_currency: { ...currencySchema, description: "the minimum's currency: a fixed coupon's own (the default), required for a percentage coupon" },
          },
        },
        metadata: metadataSchema,
      },
    },
    updateBody: { type: 'object', additionalProperties: false, properties: { name: { type: 'string', minLength: 1, maxLength: 255 }, metadata: metadataSchema, version: versionField } },
    service: service.coupons,
  }),
]
