// Outbound webhooks over HTTP, named as a Svix user expects: endpoints under /v1/webhooks/endpoints,
// events (Svix's messages) under /v1/webhooks/events, and the specification's POST /v1/webhooks/{id}/retry.
// No POST here has three segments after /webhooks: that is the inbound provider callback's shape
// (POST /v1/webhooks/{provider}/{tenant_id}/{environment_id}); the one GET of that length cannot meet it.
import { EVENT_TYPES } from '../../core/webhook-signing.ts'
import type { Actor } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import { defineRoute, type Permission, type Route } from '../route.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { recordRoutes } from '../record-routes.ts'
import { metadataSchema, versionField } from '../record-schema.ts'
import { toWire } from '../../domains/records/wire.ts'
import * as service from '../../domains/webhooks/service.ts'

const TAG = 'Webhooks'
const url: JsonSchema = { type: 'string', minLength: 1, maxLength: 2048, description: 'https, or http for localhost and 127.0.0.1' }
const filterTypes: JsonSchema = { type: 'array', items: { type: 'string' }, maxItems: EVENT_TYPES.length, description: 'event types to receive; empty receives all' }
const description: JsonSchema = { type: 'string', maxLength: 2000 }

// Changing an endpoint decides where every event of the environment goes and who can sign for it: admin only.
const endpointRoutes = recordRoutes({
  path: '/v1/webhooks/endpoints',
  tag: TAG,
  noun: 'webhook endpoint',
  sortable: ['created_at', 'updated_at', 'url'],
  filters: service.FILTERS,
  createBody: {
    type: 'object',
    required: ['url'],
    additionalProperties: false,
    properties: { url, description, filter_types: filterTypes, disabled: { type: 'boolean' }, metadata: metadataSchema },
  },
  updateBody: {
    type: 'object',
    additionalProperties: false,
    properties: { url, description: { ...description, type: ['string', 'null'] }, filter_types: filterTypes, disabled: { type: 'boolean' }, metadata: metadataSchema, version: versionField },
  },
  service: { create: service.createEndpoint, get: service.getEndpoint, list: service.listEndpoints, update: service.updateEndpoint, remove: service.deleteEndpoint },
}).map((route): Route => (route.method === 'GET' || route.path.endsWith('/search') ? route : { ...route, permission: 'admin' }))

const paging = (order: 'asc' | 'desc'): Record<string, JsonSchema> => ({
  limit: { type: 'integer', minimum: 1, maximum: 1000, default: 50 },
  offset: { type: 'integer', minimum: 0, default: 0 },
  order: { type: 'string', enum: ['asc', 'desc'], default: order },
})
const eventList: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ...paging('desc'),
    event_type: { type: 'string', enum: [...EVENT_TYPES] },
    delivery_status: { type: 'string', enum: ['pending', 'delivered', 'failed', 'skipped'] },
    entity_type: { type: 'string' },
    entity_id: { type: 'string' },
  },
}
const attemptList: JsonSchema = { type: 'object', additionalProperties: false, properties: paging('asc') }

type ListQuery = { limit: number; offset: number; order: 'asc' | 'desc' } & Record<string, unknown>

/** A route on one record named by the id in its path, answering what `work` returns. */
const byId = (method: 'GET' | 'POST', path: string, permission: Permission, summary: string, work: (deps: Deps, actor: Actor, id: string) => Promise<unknown>): Route =>
  defineRoute({ method, path, tag: TAG, summary, permission, handler: async ({ deps, actor, params }) => toWire(await work(deps, actor, params.id)) })

export const webhookRoutes: Route[] = [
  ...endpointRoutes,
  byId('POST', '/v1/webhooks/endpoints/{id}/secret/rotate', 'admin', "Rotate an endpoint's signing secret: the new one is returned once; the old one also signs for 24 hours", service.rotateSecret),
  defineRoute<Record<string, never>, ListQuery>({
    method: 'GET',
    path: '/v1/webhooks/events',
    tag: TAG,
    summary: 'List outbound events, newest first, with their delivery state per endpoint',
    permission: 'read',
    query: eventList,
    handler: async ({ deps, actor, query: { limit, offset, order, ...filters } }) => toWire(await service.listEvents(deps, actor, { limit, offset, order }, filters)),
  }),
  byId('GET', '/v1/webhooks/events/{id}', 'read', 'Get an outbound event with its payload and its delivery state per endpoint', service.getEvent),
  defineRoute<Record<string, never>, ListQuery>({
    method: 'GET',
    path: '/v1/webhooks/events/{id}/attempts',
    tag: TAG,
    summary: 'List the delivery attempts of an event: status code, the start of the answer or the error, duration',
    permission: 'read',
    query: attemptList,
    handler: async ({ deps, actor, params, query: { limit, offset, order } }) => toWire(await service.listAttempts(deps, actor, params.id, { limit, offset, order })),
  }),
  byId('POST', '/v1/webhooks/{id}/retry', 'write', 'Re-queue a failed event for immediate redelivery (id is the event id); answers the event with its deliveries', service.retryEvent),
]
