import type { Context } from 'koa'
import { defineRoute, type Route } from '../route.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { recordRoutes } from '../record-routes.ts'
import { metadataSchema, versionField } from '../record-schema.ts'
import { toWire } from '../../domains/records/wire.ts'
import { PROVIDER_TYPES } from '../../domains/integrations/provider.ts'
import * as service from '../../domains/integrations/service.ts'
import { receiveQuickbooksNotification } from '../../domains/integrations/quickbooks-inbound.ts'

const secret: JsonSchema = { type: 'string', minLength: 1, maxLength: 1000 }
const url: JsonSchema = { type: 'string', pattern: '^https?://[^\\s]+$', maxLength: 500 }
const stripeSecrets = { secret_key: secret, webhook_secret: secret, publishable_key: secret, account_id: secret }
const quickbooksSecrets = { client_id: secret, client_secret: secret, refresh_token: secret, realm_id: secret, token_url: { ...url, description: "Intuit's OAuth2 token endpoint; another for a proxy or a test server" }, webhook_verifier_token: { ...secret, description: "the app's webhook verifier token: QuickBooks' notifications are checked with it" } }
const s3Secrets = { aws_access_key_id: secret, aws_secret_access_key: secret, aws_session_token: { ...secret, maxLength: 4096, description: 'for temporary credentials' } }
const secretData: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  description: 'Stored encrypted, never returned',
  properties: {
    stripe: { type: 'object', additionalProperties: false, properties: stripeSecrets },
    quickbooks: { type: 'object', additionalProperties: false, properties: quickbooksSecrets },
    s3: { type: 'object', additionalProperties: false, properties: s3Secrets, description: "a bucket's credentials, for scheduled exports naming the connection" },
  },
}
const direction: JsonSchema = { type: 'object', additionalProperties: false, properties: { inbound: { type: 'boolean' }, outbound: { type: 'boolean' } } }
const syncConfig: JsonSchema = { type: 'object', additionalProperties: direction, description: 'per entity (invoice, …) {inbound, outbound}; invoices go out and payments come in by default' }
const baseUrl: JsonSchema = { ...url, type: ['string', 'null'], description: "the provider API's root; default https://api.stripe.com, https://quickbooks.api.intuit.com" }
const name: JsonSchema = { type: 'string', minLength: 1, maxLength: 255 }

/** A connection as Flexprice's integration secrets read: an `integration` secret of a provider, never its values. */
const asSecret = (c: service.ConnectionView) => ({
  id: c.id,
  name: c.name,
  provider: c.provider_type,
  type: 'integration',
  display_id: c.id.slice(-8),
  status: c.status,
  created_at: c.created_at,
  updated_at: c.updated_at,
})

const rawBodyOf = (ctx: Context): string | undefined => (ctx.request as { rawBody?: string }).rawBody

export const integrationRoutes: Route[] = [
  ...recordRoutes({
    path: '/v1/connections',
    tag: 'Integrations',
    noun: 'connection',
    sortable: ['created_at', 'updated_at', 'name'],
    filters: service.FILTERS,
    createBody: {
      type: 'object',
      required: ['name', 'provider_type', 'encrypted_secret_data'],
      additionalProperties: false,
      properties: { name, provider_type: { type: 'string', enum: [...PROVIDER_TYPES] }, encrypted_secret_data: secretData, api_base_url: baseUrl, sync_config: syncConfig, metadata: metadataSchema },
    },
    updateBody: {
      type: 'object',
      additionalProperties: false,
      properties: { name, encrypted_secret_data: secretData, api_base_url: baseUrl, sync_config: syncConfig, metadata: metadataSchema, version: versionField },
    },
    service: { create: service.createConnection, get: service.getConnection, list: service.listConnections, update: service.updateConnection, remove: service.deleteConnection },
  }),
  defineRoute<{ name: string; credentials: Record<string, string> }>({
    method: 'POST',
    path: '/v1/secrets/integrations/create/{provider}',
    tag: 'Integrations',
    summary: "Flexprice's integration secrets: makes the provider's connection, or updates the one there is (its credentials merged)",
    permission: 'write',
    body: {
      type: 'object',
      required: ['name', 'credentials'],
      additionalProperties: false,
      properties: {
        name,
        provider: { type: 'string', description: 'as in the path' },
        credentials: { type: 'object', additionalProperties: false, properties: { ...stripeSecrets, ...quickbooksSecrets, ...s3Secrets }, description: "the provider's secrets, as in a connection's encrypted_secret_data" },
      },
    },
    status: 201,
    handler: async ({ deps, actor, params, body }) => asSecret(await service.saveProviderCredentials(deps, actor, params.provider, body)),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/secrets/integrations/by-provider/{provider}',
    tag: 'Integrations',
    summary: "The provider's connection as an integration secret (never its values)",
    permission: 'read',
    handler: async ({ deps, actor, params }) => asSecret(await service.getProviderConnection(deps, actor, params.provider)),
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/secrets/integrations/linked',
    tag: 'Integrations',
    summary: 'The providers this environment has a connection to',
    permission: 'read',
    handler: ({ deps, actor }) => service.linkedProviders(deps, actor),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/secrets/integrations/{id}',
    tag: 'Integrations',
    summary: 'Delete a connection by id (as DELETE /v1/connections/{id}); 204',
    permission: 'write',
    status: 204,
    handler: async ({ deps, actor, params, ctx }) => {
      await service.deleteConnection(deps, actor, params.id)
      ctx.status = 204
      return undefined
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/v1/invoices/{id}/sync',
    tag: 'Integrations',
    summary: "Where the invoice's push to each connected payment provider (items) and accounting system (accounting: the invoice, its credit notes, its payments) stands",
    permission: 'read',
    handler: async ({ deps, actor, params }) => toWire(await service.invoiceSyncs(deps, actor, params.id)),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/invoices/{id}/sync',
    tag: 'Integrations',
    summary: "Try the invoice's failed or waiting pushes again at the sync job's next run, with fresh attempts",
    permission: 'write',
    handler: async ({ deps, actor, params }) => toWire(await service.retryInvoiceSync(deps, actor, params.id)),
  }),
  defineRoute({
    method: 'POST',
    path: '/v1/webhooks/{provider}/{tenant_id}/{environment_id}',
    tag: 'Integrations',
    summary: "A provider's notification, signed for the connection: Stripe's (invoice.paid, payment_intent.succeeded, checkout.session.completed) and QuickBooks' (payments received against invoices pushed there)",
    permission: 'public',
    handler: async ({ deps, params, ctx }) => {
      const notification = { provider: params.provider, tenantId: params.tenant_id, environmentId: params.environment_id, rawBody: rawBodyOf(ctx), headers: ctx.headers }
      return params.provider === 'quickbooks' ? receiveQuickbooksNotification(deps, notification) : service.receiveNotification(deps, notification)
    },
  }),
]
