// Subscription routes: one per operation the spec and Flexprice's SDK name (CRUD, search, activation, cancel,
// modify, phases, addons, line items, usage, entitlements). Over 400 lines because each route's schema sits beside
// its handler; splitting them by verb would scatter one resource's wire contract over files.
import { BILLING_PERIODS } from '../../core/periods.ts'
import { defineRoute, type Route } from '../route.ts'
import { answerPrebuilt } from '../prebuilt-json.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { recordRoutes } from '../record-routes.ts'
import { currencySchema, dateTime, decimalString, fromListQuery, fromSearchBody, idList, listQuery, metadataSchema, nonNegativeDecimal, searchBody, versionField } from '../record-schema.ts'
import { toWire } from '../../domains/records/wire.ts'
import { AppError, validationError } from '../../core/errors.ts'
import type { Actor } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import { cancelSubscription, type CancelInput } from '../../domains/invoicing/changes/cancel.ts'
import { customerEntitlements, type EntitlementQuery } from '../../domains/subscriptions/entitlements.ts'
import { executeModification, previewModification, type ModifyInput } from '../../domains/invoicing/changes/modify.ts'
import { pendingPlanChanges } from '../../domains/invoicing/changes/schedules.ts'
import * as phases from '../../domains/subscriptions/phases.ts'
import * as lines from '../../domains/invoicing/changes/lines.ts'
import { subscriptionUsage } from '../../domains/invoicing/invoices/subscription-invoices.ts'
import * as activation from '../../domains/subscriptions/activation.ts'
import * as read from '../../domains/subscriptions/read.ts'
import * as service from '../../domains/subscriptions/service.ts'
import { associationsOf } from '../../domains/invoicing/coupons/service.ts'
import { latestInvoices } from '../../domains/invoicing/invoices/read.ts'
import { withSubscriptionCreditGrants } from '../../domains/credits/grants/service.ts'
import type { Page } from '../../core/list.ts'

const id: JsonSchema = { type: 'string', minLength: 1 }

const phase: JsonSchema = {
  type: 'object',
  required: ['start_date'],
  additionalProperties: false,
  properties: {
    start_date: dateTime,
    end_date: { type: ['string', 'null'], format: 'date-time' },
    metadata: metadataSchema,
    line_items: {
      type: 'array',
      maxItems: 100,
      items: { type: 'object', required: ['price_id'], additionalProperties: false, properties: { price_id: id, quantity: decimalString } },
    },
  },
}

const createBody: JsonSchema = {
  type: 'object',
  required: ['plan_id', 'currency', 'billing_period'],
  additionalProperties: false,
  properties: {
    subscription_status: { type: 'string', enum: ['draft'], description: 'create as a draft, activated later' },
    customer_id: id,
    external_customer_id: id,
    plan_id: id,
    currency: currencySchema,
    lookup_key: { type: 'string', maxLength: 255 },
    billing_cadence: { type: 'string', enum: ['RECURRING'] },
    billing_period: { type: 'string', enum: [...BILLING_PERIODS] },
    billing_period_count: { type: 'integer', minimum: 1, maximum: 100 },
    billing_cycle: { type: 'string', enum: ['anniversary', 'calendar'] },
    billing_anchor: dateTime,
    start_date: dateTime,
    end_date: dateTime,
    trial_period_days: { type: 'integer', minimum: 0, maximum: 3650 },
    trial_start: dateTime,
    trial_end: dateTime,
    collection_method: { type: 'string', enum: ['charge_automatically', 'send_invoice'] },
    payment_behavior: { type: 'string', enum: ['default_active', 'default_incomplete', 'allow_incomplete', 'error_if_incomplete'] },
    payment_terms: { type: 'string', pattern: '^\\d{1,3} NET$', description: 'e.g. "15 NET"' },
    proration_behavior: { type: 'string', enum: ['create_prorations', 'none'] },
    auto_invoice_threshold: decimalString,
    commitment_amount: nonNegativeDecimal,
    commitment_duration: { type: 'string', enum: [...BILLING_PERIODS] },
    overage_factor: nonNegativeDecimal,
    enable_true_up: { type: 'boolean' },
    invoicing_customer_id: id,
    parent_subscription_id: id,
    inheritance: {
      type: 'object',
      additionalProperties: false,
      properties: { parent_subscription_id: id, subscriptions_ids_for_grouped_invoicing: idList },
    },
    customer_timezone: { type: 'string', minLength: 1, maxLength: 64 },
    gateway_payment_method_id: id,
    coupons: { type: 'array', maxItems: 50, items: id },
    tax_rate_overrides: {
      type: 'array',
      maxItems: 50,
      items: {
        type: 'object',
        required: ['currency', 'tax_rate_code'],
        additionalProperties: false,
        properties: {
          currency: currencySchema,
          tax_rate_code: id,
          auto_apply: { type: 'boolean', default: true },
          priority: { type: 'integer' },
          metadata: metadataSchema,
        },
      },
    },
    metadata: metadataSchema,
    phases: { type: 'array', maxItems: 50, items: phase },
    addons: {
      type: 'array',
      maxItems: 50,
      items: { type: 'object', required: ['addon_id'], additionalProperties: false, properties: { addon_id: id, quantity: { type: 'integer', minimum: 1 } } },
    },
  },
}

const cancelBody: JsonSchema = {
  type: 'object',
  required: ['cancellation_type'],
  additionalProperties: false,
  properties: {
    cancellation_type: { type: 'string', enum: ['immediate', 'end_of_period', 'scheduled_date'] },
    cancel_at: dateTime,
    reason: { type: 'string', maxLength: 1000 },
    proration_behavior: { type: 'string', enum: ['create_prorations', 'always_invoice', 'none'] },
    version: versionField,
  },
}

const withProperties = (schema: JsonSchema, extra: Record<string, JsonSchema>): JsonSchema => ({
  ...schema,
  properties: { ...(schema.properties as Record<string, JsonSchema>), ...extra },
})

const modifyBody: JsonSchema = {
  type: 'object',
  required: ['type'],
  additionalProperties: false,
  properties: {
    type: { type: 'string', enum: ['quantity_change', 'grouped_invoicing_add', 'grouped_invoicing_remove'] },
    quantity_change_params: {
      type: 'object',
      required: ['line_items'],
      additionalProperties: false,
      properties: {
        line_items: {
          type: 'array',
          minItems: 1,
          maxItems: 100,
          items: {
            type: 'object',
            required: ['id', 'quantity'],
            additionalProperties: false,
            properties: { id, quantity: decimalString, effective_date: dateTime },
          },
        },
        proration_behavior: { type: 'string', enum: ['create_prorations', 'always_invoice', 'none'] },
      },
    },
    grouped_invoicing_params: {
      type: 'object',
      required: ['child_subscription_ids'],
      additionalProperties: false,
      properties: { child_subscription_ids: { ...idList, minItems: 1 } },
    },
    version: versionField,
  },
}

const phaseUpdateBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { start_date: dateTime, end_date: { type: ['string', 'null'], format: 'date-time' }, metadata: metadataSchema, version: versionField },
}

const entitlementQuery: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { feature_ids: idList, subscription_ids: idList },
}

type UpdateBody = service.UpdateSubscriptionInput & { cancel_at?: string; cancel_at_period_end?: true }

/** Labels change here; Flexprice's cancel_at and cancel_at_period_end schedule a cancellation, as POST /cancel does. */
async function updateOrCancel(deps: Deps, actor: Actor, id: string, body: UpdateBody) {
  const { cancel_at, cancel_at_period_end, ...labels } = body
  if (cancel_at === undefined && !cancel_at_period_end) return service.updateSubscription(deps, actor, id, labels)
  if (cancel_at !== undefined && cancel_at_period_end) throw validationError('cancel_at', 'give cancel_at or cancel_at_period_end, not both')
  const other = Object.keys(labels).find((k) => k !== 'version')
  if (other) throw validationError(other, 'cannot be changed with a cancellation: send it in its own request')
  await cancelSubscription(deps, actor, id, cancel_at === undefined ? { cancellation_type: 'end_of_period', version: labels.version } : { cancellation_type: 'scheduled_date', cancel_at, version: labels.version })
  return read.getSubscription(deps, actor, id)
}

/**
 * What a subscription answers besides its own records, from the domains above it: its coupon associations
 * (with their coupons), the credit grants that give it credits (its plan's and its own) and its newest
 * invoice (the header; lines at GET /v1/invoices/{id}); a full view (with line items) also says whether
 * its plan's prices moved on (plan_prices_out_of_sync).
 */
async function attached(deps: Deps, actor: Actor, views: read.SubscriptionView[]) {
  const ids = views.map((v) => v.id)
  const coupons = await associationsOf(deps.sql, actor, ids)
  const latest = await latestInvoices(deps.sql, actor, ids)
  const full = views.every((v) => v.line_items) ? await read.withPlanSync(deps.sql, actor, views) : views
  const scheduled = await pendingPlanChanges(deps, actor, ids)
  return (await withSubscriptionCreditGrants(deps.sql, actor, full)).map((v) => ({
    ...v,
    scheduled_plan_change: scheduled.get(v.id) ?? null,
    coupon_associations: coupons.filter((c) => c.association.subscription_id === v.id).map((c) => ({ ...c.association, coupon: c.coupon })),
    latest_invoice: latest.get(v.id) ?? null,
  }))
}
const attachOne = async (deps: Deps, actor: Actor, view: Promise<read.SubscriptionView>) => (await attached(deps, actor, [await view]))[0]
const attachPage = async (deps: Deps, actor: Actor, page: Promise<Page<read.SubscriptionView>>) => {
  const p = await page
  return { ...p, items: await attached(deps, actor, p.items) }
}

const SORTABLE = ['created_at', 'updated_at', 'start_date', 'current_period_end']
const LINE_ITEM_SORTABLE = ['created_at', 'start_date', 'end_date']

export const subscriptionRoutes: Route[] = [
  defineRoute<Record<string, unknown>>({
    method: 'POST',
    path: '/v1/subscriptions/lineitems/search',
    tag: 'Subscriptions',
    summary: 'Search subscription line items by subscription, price, phase, type and date ranges',
    permission: 'read',
    body: withProperties(searchBody(LINE_ITEM_SORTABLE, read.LINE_ITEM_FILTERS), { active_at: dateTime }),
    handler: async ({ deps, actor, body }) => toWire(await read.searchLineItems(deps, actor, fromSearchBody(body))),
  }),
  ...recordRoutes({
    path: '/v1/subscriptions',
    tag: 'Subscriptions',
    noun: 'subscription',
    sortable: SORTABLE,
    filters: read.FILTERS,
    createBody,
    updateBody: {
      type: 'object',
      additionalProperties: false,
      properties: {
        lookup_key: { type: ['string', 'null'], maxLength: 255 },
        metadata: metadataSchema,
        version: versionField,
        cancel_at: { ...dateTime, description: "Flexprice's way to schedule a cancellation: as POST /cancel with scheduled_date; sent alone" },
        cancel_at_period_end: { type: 'boolean', const: true, description: 'as POST /cancel with end_of_period; sent alone' },
      },
    },
    service: {
      create: (deps, actor, body) => attachOne(deps, actor, service.createSubscription(deps, actor, body)),
      get: (deps, actor, id) => attachOne(deps, actor, read.getSubscription(deps, actor, id)),
      list: (deps, actor, request) => attachPage(deps, actor, read.listSubscriptions(deps, actor, request)),
      update: (deps, actor, id, body) => attachOne(deps, actor, updateOrCancel(deps, actor, id, body)),
    },
  }),
  defineRoute<{ subscription_id: string; start_time?: string; end_time?: string; lifetime_usage?: boolean }>({
    method: 'POST',
    path: '/v1/subscriptions/usage',
    tag: 'Subscriptions',
    summary: "A subscription's usage charges in the current period so far, per meter, as its next invoice will price them",
    permission: 'read',
    body: {
      type: 'object',
      required: ['subscription_id'],
      additionalProperties: false,
      properties: { subscription_id: id, start_time: dateTime, end_time: dateTime, lifetime_usage: { type: 'boolean' } },
    },
    handler: async ({ deps, actor, body }) => {
      const other = (['start_time', 'end_time'] as const).find((f) => body[f] !== undefined) ?? (body.lifetime_usage ? 'lifetime_usage' : undefined)
      if (other) throw validationError(other, "only the current period's usage is read; use POST /v1/events/usage/meter for other ranges")
      return toWire(await subscriptionUsage(deps, actor, body))
    },
  }),
  defineRoute<lines.AddAddonInput>({
    method: 'POST',
    path: '/v1/subscriptions/addon',
    tag: 'Subscriptions',
    summary: "Add an addon to a live subscription from now or start_date in the current period; its prices' part of the period is settled as the subscription prorates",
    permission: 'write',
    body: {
      type: 'object',
      required: ['subscription_id', 'addon_id'],
      additionalProperties: false,
      properties: { subscription_id: id, addon_id: id, start_date: dateTime, quantity: { type: 'integer', minimum: 1 }, metadata: metadataSchema },
    },
    handler: async ({ deps, actor, body }) => toWire(await lines.addAddon(deps, actor, body)),
  }),
  defineRoute<{ addon_association_id: string; reason?: string }>({
    method: 'DELETE',
    path: '/v1/subscriptions/addon',
    tag: 'Subscriptions',
    summary: 'End an addon association now, with its line items (the body names it)',
    permission: 'write',
    body: { type: 'object', required: ['addon_association_id'], additionalProperties: false, properties: { addon_association_id: id, reason: { type: 'string', maxLength: 1000 } } },
    handler: ({ deps, actor, body }) => lines.removeAddon(deps, actor, body),
  }),
  defineRoute<lines.AddLineInput & { quantity?: string | number }>({
    method: 'POST',
    path: '/v1/subscriptions/{id}/lineitems',
    tag: 'Subscriptions',
    summary: "Add a line item from a published price of the subscription's currency and period, from now or start_date in the current period",
    permission: 'write',
    body: {
      type: 'object',
      required: ['price_id'],
      additionalProperties: false,
      properties: {
        price_id: id,
        quantity: { anyOf: [decimalString, { type: 'number', minimum: 0 }] },
        start_date: dateTime,
        end_date: dateTime,
        display_name: { type: 'string', minLength: 1, maxLength: 255 },
        metadata: metadataSchema,
      },
    },
    status: 201,
    handler: async ({ deps, actor, params, body }) =>
      toWire(await lines.addLineItem(deps, actor, params.id, { ...body, quantity: body.quantity === undefined ? undefined : String(body.quantity) })),
  }),
  defineRoute<{ effective_from?: string }>({
    method: 'DELETE',
    path: '/v1/subscriptions/lineitems/{id}',
    tag: 'Subscriptions',
    summary: 'End a line item now or at effective_from later in the current period (one not started yet is removed)',
    permission: 'write',
    body: { type: 'object', additionalProperties: false, properties: { effective_from: dateTime } },
    handler: async ({ deps, actor, params, body }) => toWire(await lines.endLineItem(deps, actor, params.id, body)),
  }),
  defineRoute<Record<string, never>, { feature_ids?: string[] }>({
    method: 'GET',
    path: '/v1/subscriptions/{id}/entitlements',
    readsUsage: false,
    tag: 'Entitlements',
    summary: "What one subscription grants now (its plan's and addons' entitlements merged per feature)",
    permission: 'read',
    query: { type: 'object', additionalProperties: false, properties: { feature_ids: idList } },
    handler: async ({ deps, actor, params, query }) => {
      const sub = await read.requireSubscription(deps.sql, actor, params.id)
      const found = await customerEntitlements(deps, actor, { id: sub.customer_id }, { feature_ids: query.feature_ids, subscription_ids: [sub.id] })
      return toWire({ subscription_id: sub.id, plan_id: sub.plan_id, features: found.features })
    },
  }),
  defineRoute<Record<string, never>, { expand?: string }>({
    method: 'GET',
    path: '/v1/subscriptions/{id}/v2',
    tag: 'Subscriptions',
    summary: 'A subscription (as GET /v1/subscriptions/{id}) with plan_prices_out_of_sync',
    permission: 'read',
    query: { type: 'object', additionalProperties: false, properties: { expand: { type: 'string', maxLength: 500, description: 'accepted; everything is expanded' } } },
    handler: async ({ deps, actor, params }) => toWire(await attachOne(deps, actor, read.getSubscription(deps, actor, params.id))),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/subscriptions/{id}/addons/associations',
    tag: 'Subscriptions',
    summary: "A subscription's addon associations with their addons (an array, as Flexprice answers)",
    permission: 'read',
    handler: async ({ deps, actor, params }) => toWire(await read.addonAssociations(deps, actor, params.id)),
  }),
  defineRoute<{ start_date?: string; version?: number }>({
    method: 'POST',
    path: '/v1/subscriptions/{id}/activate',
    tag: 'Subscriptions',
    summary: 'Activate a draft subscription from start_date (default now)',
    permission: 'write',
    body: { type: 'object', additionalProperties: false, properties: { start_date: dateTime, version: versionField } },
    handler: async ({ deps, actor, params, body }) => toWire(await activation.activateSubscription(deps, actor, params.id, body)),
  }),
  defineRoute<CancelInput>({
    method: 'POST',
    path: '/v1/subscriptions/{id}/cancel',
    tag: 'Subscriptions',
    summary: 'Cancel now, at the end of the current period, or on a future date (cancel_at); proration_behavior settles the unused rest',
    permission: 'write',
    body: cancelBody,
    handler: async ({ deps, actor, params, body }) => toWire(await cancelSubscription(deps, actor, params.id, body)),
  }),
  defineRoute<Record<string, never>, Record<string, unknown>>({
    method: 'GET',
    path: '/v1/customers/{id}/subscriptions',
    tag: 'Subscriptions',
    summary: "List a customer's subscriptions",
    permission: 'read',
    query: listQuery(SORTABLE, read.FILTERS),
    handler: async ({ deps, actor, params, query }) => toWire(await attachPage(deps, actor, read.listCustomerSubscriptions(deps, actor, params.id, fromListQuery(query)))),
  }),
  ...(['preview', 'execute'] as const).map((step) =>
    defineRoute<ModifyInput>({
      method: 'POST',
      path: `/v1/subscriptions/{id}/modify/${step}`,
      tag: 'Subscriptions',
      summary:
        step === 'preview'
          ? 'Work out a quantity change or a grouped-invoicing change and its prorated amounts, changing nothing'
          : 'Apply a quantity change or a grouped-invoicing change; bumps the version',
      permission: step === 'preview' ? 'read' : 'write',
      body: modifyBody,
      handler: ({ deps, actor, params, body }) => (step === 'preview' ? previewModification : executeModification)(deps, actor, params.id, body),
    }),
  ),
  defineRoute({
    method: 'GET',
    path: '/v1/subscriptions/{id}/phases',
    tag: 'Subscriptions',
    summary: "List a subscription's phases with their line items",
    permission: 'read',
    handler: async ({ deps, actor, params }) => toWire(await phases.listPhases(deps, actor, params.id)),
  }),
  defineRoute<service.PhaseInput>({
    method: 'POST',
    path: '/v1/subscriptions/{id}/phases',
    tag: 'Subscriptions',
    summary: 'Add a phase, with its own line items, to a subscription',
    permission: 'write',
    body: phase,
    status: 201,
    handler: async ({ deps, actor, params, body }) => toWire(await phases.addPhase(deps, actor, params.id, body)),
  }),
  defineRoute<phases.UpdatePhaseInput>({
    method: 'PUT',
    path: '/v1/subscriptions/{id}/phases/{phase_id}',
    tag: 'Subscriptions',
    summary: "Change a phase's dates or metadata; its line items follow its dates",
    permission: 'write',
    body: phaseUpdateBody,
    handler: async ({ deps, actor, params, body }) => toWire(await phases.updatePhase(deps, actor, params.id, params.phase_id, body)),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/subscriptions/{id}/phases/{phase_id}',
    tag: 'Subscriptions',
    summary: 'Delete a phase and its line items',
    permission: 'write',
    handler: async ({ deps, actor, params }) => toWire(await phases.deletePhase(deps, actor, params.id, params.phase_id)),
  }),
  defineRoute<Record<string, never>, EntitlementQuery>({
    method: 'GET',
    path: '/v1/customers/external/{external_id}/entitlements',
    readsUsage: false,
    tag: 'Entitlements',
    summary: 'What a customer, found by external_id, may use now (see GET /v1/customers/{id}/entitlements)',
    permission: 'read',
    query: entitlementQuery,
    handler: async ({ deps, actor, params, query, ctx }) => answerPrebuilt(ctx, await customerEntitlements(deps, actor, { external_id: params.external_id }, query)),
  }),
  defineRoute<Record<string, never>, EntitlementQuery>({
    method: 'GET',
    path: '/v1/customers/{id}/entitlements',
    readsUsage: false,
    tag: 'Entitlements',
    summary: 'What a customer may use now: each feature merged across its live subscriptions and addons, with the sources',
    permission: 'read',
    query: entitlementQuery,
    handler: async ({ deps, actor, params, query, ctx }) => answerPrebuilt(ctx, await customerEntitlements(deps, actor, { id: params.id }, query)),
  }),
  // The spec removed pause and resume (rule 12): their SDK methods get 410 saying so, not a 404 that reads as a wrong id.
  ...([['POST', 'pause'], ['GET', 'pauses'], ['POST', 'resume']] as const).map(([method, op]) =>
    defineRoute({
      method,
      path: `/v1/subscriptions/{id}/${op}`,
      tag: 'Subscriptions',
      summary: 'Removed by the specification (pause and resume no longer exist): always 410',
      permission: 'read',
      // Another environment's or tenant's subscription stays not found, as for every other operation.
      handler: async ({ deps, actor, params }) => {
        await read.requireSubscription(deps.sql, actor, params.id)
        throw new AppError('invalid_operation', 'pausing and resuming subscriptions was removed from the API; cancel the subscription instead', { operation: op }, { status: 410 })
      },
    }),
  ),
]
