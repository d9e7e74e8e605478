import { defineRoute, type Route } from '../route.ts'
import { answerPrebuilt } from '../prebuilt-json.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { recordRoutes } from '../record-routes.ts'
import { currencySchema, dateTime, fromListQuery, fromSearchBody, listQuery, metadataSchema, nonNegativeDecimal, searchBody, versionField } from '../record-schema.ts'
import { toWire } from '../../domains/records/wire.ts'
import { validationError } from '../../core/errors.ts'
import { ongoingBalanceOf } from '../../domains/credits/wallets/realtime.ts'
import * as service from '../../domains/credits/wallets/service.ts'
import { examplePayload } from '../../domains/credits/wallets/webhook-example.ts'
import { payInvoiceFromWallet } from '../../domains/credits/wallets/invoices.ts'
import { holdRoutes } from './wallet-holds.ts'

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

/** What Flexprice's SDK sends with its customer wallet reads; every wallet comes with its balance anyway. */
const flexpriceWalletQuery: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    expand: { type: 'string', maxLength: 200 },
    include_real_time_balance: { type: 'boolean' },
    from_cache: { type: 'boolean' },
  },
}

const transactionSearch: JsonSchema = (() => {
  const body = searchBody(['created_at'], service.TRANSACTION_FILTERS) as { properties: Record<string, JsonSchema> }
  // Flexprice sends one reason as a string.
  return { ...body, properties: { ...body.properties, transaction_reason: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] } } }
})()

const flexpriceTransactionFilter = ({ transaction_reason: reason, ...body }: Record<string, unknown>): Record<string, unknown> =>
  reason === undefined ? body : { ...body, transaction_reason: Array.isArray(reason) ? reason : [reason] }

/**
 * GET /v1/customers/wallets (Flexprice's getCustomerWallets): mounted before the customer routes, whose
 * GET /v1/customers/{id} would take "wallets" for an id.
 */
export const customerWalletLookup: Route = defineRoute<Record<string, never>, { id?: string; lookup_key?: string }>({
  method: 'GET',
  path: '/v1/customers/wallets',
  tag: TAG,
  summary: "A customer's wallets by ?id= or by ?lookup_key= (the customer's external_id), as a plain array",
  permission: 'read',
  query: {
    ...flexpriceWalletQuery,
    properties: { ...(flexpriceWalletQuery.properties as object), id: { type: 'string', minLength: 1 }, lookup_key: { type: 'string', minLength: 1 } },
  },
  handler: async ({ deps, actor, query }) => {
    if (Boolean(query.id) === Boolean(query.lookup_key)) throw validationError('id', 'give id or lookup_key (the external_id), one of them')
    return toWire(await service.customerWallets(deps, actor, query.id ? { id: query.id } : { external_id: query.lookup_key! }))
  },
})

export const walletRoutes: Route[] = [
  ...holdRoutes,
  ...recordRoutes({
    path: '/v1/wallets',
    tag: TAG,
    noun: 'wallet',
    sortable: SORTABLE,
    filters: service.FILTERS,
    createBody,
    updateBody: { type: 'object', additionalProperties: false, properties: { ...fields, version: versionField } },
    // Flexprice documents 200 for a new wallet, and its SDK takes nothing else (the spec names no status).
    createdStatus: 200,
    service: { create: service.createWallet, get: service.getWallet, list: service.listWallets, update: service.updateWallet },
  }),
  defineRoute<Record<string, never>, Record<string, unknown>>({
    method: 'GET',
    path: '/v1/customers/{id}/wallets',
    tag: TAG,
    summary: "All a customer's wallets with their balances, newest first, as a plain array (Flexprice's shape; GET /v1/wallets?customer_id= pages)",
    permission: 'read',
    query: flexpriceWalletQuery,
    handler: async ({ deps, actor, params }) => toWire(await service.customerWallets(deps, actor, { id: params.id })),
  }),
  defineRoute<Record<string, never>, Record<string, unknown>>({
    method: 'POST',
    path: '/v1/wallets/transactions/search',
    tag: TAG,
    summary: 'Wallet transactions of every wallet of the environment, by the filters in the body (wallet_id for one wallet)',
    permission: 'read',
    body: transactionSearch,
    handler: async ({ deps, actor, body }) => toWire(await service.searchTransactions(deps, actor, fromSearchBody(flexpriceTransactionFilter(body)))),
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
    handler: async ({ deps, actor, params, ctx }) => answerPrebuilt(ctx, await ongoingBalanceOf(deps, actor, params.id)),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/invoices/{id}/payment/attempt',
    tag: TAG,
    summary: "Pay what a finalized invoice owes from the customer's prepaid wallet, as far as its credits reach (a payment: PENDING if partial, SUCCEEDED if whole)",
    permission: 'write',
    handler: ({ deps, actor, params }) => payInvoiceFromWallet(deps, actor, params.id),
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
