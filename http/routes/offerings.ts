import type { Route } from '../route.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { entitlementSchema } from './entitlements.ts'
import { priceSchema } from './prices.ts'
import { recordRoutes } from '../record-routes.ts'
import { metadataSchema, versionField } from '../record-schema.ts'
import * as service from '../../domains/catalog/offerings/service.ts'

function offeringRoutes(kind: service.OfferingKind, path: string, tag: string, extra: Record<string, JsonSchema>): Route[] {
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
        prices: { type: 'array', maxItems: 100, items: priceSchema },
        entitlements: { type: 'array', maxItems: 200, items: entitlementSchema },
      },
    },
    updateBody: { type: 'object', additionalProperties: false, properties: { ...fields, version: versionField } },
    service: {
      create: (deps, actor, body) => service.createOffering(deps, actor, kind, body),
      get: (deps, actor, id) => service.getOffering(deps, actor, kind, id),
      list: (deps, actor, request) => service.listOfferings(deps, actor, kind, request),
      update: (deps, actor, id, body) => service.updateOffering(deps, actor, kind, id, body),
      remove: (deps, actor, id) => service.deleteOffering(deps, actor, kind, id),
    },
  })
}

export const planRoutes: Route[] = offeringRoutes(service.PLAN, '/v1/plans', 'Plans', { display_order: { type: 'integer' } })
export const addonRoutes: Route[] = offeringRoutes(service.ADDON, '/v1/addons', 'Addons', {})
