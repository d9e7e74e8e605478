import { defineRoute, type Route } from '../route.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { recordRoutes } from '../record-routes.ts'
import { currencySchema, dateTime, fromListQuery, listQuery, metadataSchema, nonNegativeDecimal, versionField } from '../record-schema.ts'
import { toWire } from '../../domains/records/wire.ts'
import { ongoingBalanceOf } from '../../domains/credits/wallets/realtime.ts'
import * as service from '../../domains/credits/wallets/service.ts'
import { examplePayload } from '../../domains/credits/wallets/webhook-example.ts'

const id: JsonSchema = { type: 'string', minLength: 1 }
const TAG = 'Wallets'

// Thresholds and amounts are JSON numbers here, as the spec's auto_topup and alert_settings have them.
const level: JsonSchema = {
  type: 'object',
  required: ['threshold'],
  additionalProperties: false,
  properties: { condition: { type: 'string', enum: ['above', 'below'], default: 'below' }, threshold: { type: 'number' } },
}

const alertSettingsSchema: JsonSchema = {
  type: ['object', 'null'],
  required: ['alert_enabled'],
  additionalProperties: false,
  properties: { alert_enabled: { type: 'boolean' }, info: level, warning: level, critical: level },
}

const fields: Record<string, JsonSchema> = {
  name: { type: 'string', minLength: 1, maxLength: 255 },
  description: { type: ['string', 'null'], maxLength: 2000 },
  metadata: metadataSchema,
  config: {
    type: 'object',
    required: ['allowed_price_types'],
    additionalProperties: false,
    properties: { allowed_price_types: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'string', enum: ['ALL', 'USAGE', 'FIXED'] } } },
  },
  auto_topup: {
    type: ['object', 'null'],
    required: ['enabled', 'threshold', 'amount'],
    additionalProperties: false,
    properties: {
      enabled: { type: 'boolean' },
      threshold: { type: 'number', minimum: 0, description: 'in credits: top up when credit_balance is at or below it' },
      amount: { type: 'number', exclusiveMinimum: 0, description: 'credits to add' },
      invoicing: { type: 'boolean', default: false, description: 'buy the credits by invoice (billing reason WALLET_AUTO_TOPUP)' },
    },
  },
  alert_settings: alertSettingsSchema,
}

const createBody: JsonSchema = {
  type: 'object',
  required: ['currency'],
  additionalProperties: false,
  properties: {
    ...fields,
    customer_id: id,
    external_customer_id: id,
    currency: currencySchema,
    wallet_type: { type: 'string', enum: ['PRE_PAID', 'POST_PAID'] },
    conversion_rate: { ...nonNegativeDecimal, description: 'currency value of one credit' },
    topup_conversion_rate: { ...nonNegativeDecimal, description: 'currency paid for one credit bought; default conversion_rate' },
    initial_credits_to_load: nonNegativeDecimal,
    initial_credits_expiry_date_utc: dateTime,
  },
}

const topUpBody: JsonSchema = {
  type: 'object',
  required: ['transaction_reason'],
  additionalProperties: false,
  properties: {
    credits_to_add: nonNegativeDecimal,
    amount: { ...nonNegativeDecimal, description: "in the wallet's currency; buys amount / topup_conversion_rate credits" },
    transaction_reason: { type: 'string', enum: ['FREE_CREDIT_GRANT', 'PURCHASED_CREDIT_DIRECT', 'PURCHASED_CREDIT_INVOICED'] },
    expiry_date_utc: dateTime,
    priority: { type: 'integer', minimum: 0, description: 'lower is consumed first' },
    idempotency_key: { type: 'string', minLength: 1, maxLength: 255 },
    description: { type: 'string', maxLength: 2000 },
    metadata: metadataSchema,
  },
}

const debitBody: JsonSchema = {
  type: 'object',
  required: ['credits'],
  additionalProperties: false,
  properties: {
    credits: nonNegativeDecimal,
    idempotency_key: { type: 'string', minLength: 1, maxLength: 255 },
    description: { type: 'string', maxLength: 2000 },
    metadata: metadataSchema,
  },
}

const SORTABLE = ['created_at', 'updated_at', 'name'] as const

export const walletRoutes: Route[] = [
  ...recordRoutes({
    path: '/v1/wallets',
    tag: TAG,
    noun: 'wallet',
    sortable: SORTABLE,
    filters: service.FILTERS,
    createBody,
    updateBody: { type: 'object', additionalProperties: false, properties: { ...fields, version: versionField } },
    service: { create: service.createWallet, get: service.getWallet, list: service.listWallets, update: service.updateWallet },
  }),
  defineRoute<Record<string, never>, Record<string, unknown>>({
    method: 'GET',
    path: '/v1/customers/{id}/wallets',
    tag: TAG,
    summary: "A customer's wallets, with their balances",
    permission: 'read',
    query: listQuery(SORTABLE, service.FILTERS),
    handler: async ({ deps, actor, params, query }) => toWire(await service.listCustomerWallets(deps, actor, params.id, fromListQuery(query))),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/wallets/{id}/terminate',
    tag: TAG,
    summary: 'Close a wallet; its remaining credits are debited (WALLET_TERMINATION)',
    permission: 'write',
    handler: async ({ deps, actor, params }) => toWire(await service.terminateWallet(deps, actor, params.id)),
  }),
  defineRoute<Record<string, never>, Record<string, unknown>>({
    method: 'GET',
    path: '/v1/wallets/{id}/transactions',
    tag: TAG,
    summary: "The wallet's ledger, newest first by default",
    permission: 'read',
    query: listQuery(['created_at'], service.TRANSACTION_FILTERS),
    handler: async ({ deps, actor, params, query }) => toWire(await service.listTransactions(deps, actor, params.id, fromListQuery(query))),
  }),
  defineRoute<service.TopUpInput>({
    method: 'POST',
    path: '/v1/wallets/{id}/top-up',
    tag: TAG,
    summary: 'Add credits: a free grant, a direct purchase, or a purchase by invoice (credited when paid)',
    permission: 'write',
    body: topUpBody,
    handler: async ({ deps, actor, params, body }) => toWire(await service.topUpWallet(deps, actor, params.id, body)),
  }),
  defineRoute<service.DebitWalletInput>({
    method: 'POST',
    path: '/v1/wallets/{id}/debit',
    tag: TAG,
    summary: 'Take credits in consumption order; refused when the wallet cannot cover them',
    permission: 'write',
    body: debitBody,
    handler: async ({ deps, actor, params, body }) => toWire(await service.debitWallet(deps, actor, params.id, body)),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/wallets/{id}/balance/real-time',
    tag: TAG,
    summary: 'The ongoing balance: balance − current-period unbilled usage charges − unpaid invoices',
    permission: 'read',
    handler: async ({ deps, actor, params }) => toWire(await ongoingBalanceOf(deps, actor, params.id)),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/webhook-events/wallet.credit_balance.recovered',
    tag: 'Webhook Events',
    summary: 'Documentation only: an example payload of the wallet.credit_balance.recovered event',
    permission: 'public',
    handler: async () => examplePayload(),
  }),
]
