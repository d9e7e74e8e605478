import { defineRoute, type Route } from '../route.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { entitlementSchema } from './entitlements.ts'
import { priceSchema } from './prices.ts'
import { recordRoutes } from '../record-routes.ts'
import { toWire } from '../../domains/records/wire.ts'
import { metadataSchema, versionField } from '../record-schema.ts'
import type { Actor } from '../../core/scope.ts'
import type { Deps } from '../../infra/deps.ts'
import { withCreditGrants } from '../../domains/credits/grants/service.ts'
import { ADDON, PLAN, type OfferingKind } from '../../domains/catalog/offerings/kinds.ts'
import * as service from '../../domains/catalog/offerings/service.ts'

/** What a kind's views carry besides prices and entitlements (plans: their credit grants, from the credits domain). */
type Attach = (deps: Deps, actor: Actor, views: service.OfferingView[]) => Promise<service.OfferingView[]>
const nothing: Attach = async (_deps, _actor, views) => views
const creditGrants: Attach = (deps, actor, views) => withCreditGrants(deps.sql, actor, views)

function offeringRoutes(kind: OfferingKind, path: string, tag: string, extra: Record<string, JsonSchema>, attach: Attach, createOnly: Record<string, JsonSchema> = {}): Route[] {
  const one = async (deps: Deps, actor: Actor, view: Promise<service.OfferingView>) => (await attach(deps, actor, [await view]))[0]
  const fields: Record<string, JsonSchema> = {
    name: { type: 'string', minLength: 1, maxLength: 255 },
    lookup_key: { type: ['string', 'null'], minLength: 1, maxLength: 255 },
    description: { type: ['string', 'null'], maxLength: 2000 },
    metadata: metadataSchema,
    ...extra,
  }
  return recordRoutes({
    path,
    tag,
    noun: kind.table.noun,
    sortable: ['created_at', 'updated_at', 'name', ...('display_order' in extra ? ['display_order'] : [])],
    filters: kind.filters,
    createBody: {
      type: 'object',
      required: ['name', ...(kind.entityType === 'ADDON' ? ['lookup_key'] : [])],
      additionalProperties: false,
      properties: {
        ...fields,
        ...createOnly,
        prices: { type: 'array', maxItems: 100, items: priceSchema },
        entitlements: { type: 'array', maxItems: 200, items: entitlementSchema },
      },
    },
    updateBody: { type: 'object', additionalProperties: false, properties: { ...fields, version: versionField } },
    service: {
      create: (deps, actor, body) => one(deps, actor, service.createOffering(deps, actor, kind, body)),
      get: (deps, actor, id) => one(deps, actor, service.getOffering(deps, actor, kind, id)),
      list: async (deps, actor, request) => {
        const page = await service.listOfferings(deps, actor, kind, request)
        return { ...page, items: await attach(deps, actor, page.items) }
      },
      update: (deps, actor, id, body) => one(deps, actor, service.updateOffering(deps, actor, kind, id, body)),
      remove: (deps, actor, id) => one(deps, actor, service.deleteOffering(deps, actor, kind, id)),
    },
  })
}

export const planRoutes: Route[] = [
  ...offeringRoutes(PLAN, '/v1/plans', 'Plans', { display_order: { type: 'integer' } }, creditGrants),
  defineRoute<service.CloneOfferingInput>({
    method: 'POST',
    path: '/v1/plans/{id}/clone',
    tag: 'Plans',
    summary: 'A new plan made from a published one: its prices (without lookup keys), entitlements and credit grants copied in one transaction',
    permission: 'write',
    body: {
      type: 'object',
      additionalProperties: false,
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 255 },
        lookup_key: { type: ['string', 'null'], minLength: 1, maxLength: 255 },
        description: { type: ['string', 'null'], maxLength: 2000 },
        display_order: { type: 'integer' },
        metadata: metadataSchema,
      },
    },
    status: 201,
    handler: async ({ deps, actor, params, body }) => toWire((await creditGrants(deps, actor, [await service.cloneOffering(deps, actor, PLAN, params.id, body)]))[0]),
  }),
]
export const addonRoutes: Route[] = [
  defineRoute({
    method: 'GET',
    path: '/v1/addons/lookup/{lookup_key}',
    tag: 'Addons',
    summary: 'Get the published addon with this lookup_key',
    permission: 'read',
    handler: async ({ deps, actor, params }) => toWire(await service.getOfferingByLookupKey(deps, actor, ADDON, params.lookup_key)),
  }),
  ...offeringRoutes(ADDON, '/v1/addons', 'Addons', {}, nothing, {
    type: { type: 'string', enum: ['onetime', 'multiple_instance'], default: 'multiple_instance', description: 'onetime: once per subscription, quantity 1' },
  }),
]
