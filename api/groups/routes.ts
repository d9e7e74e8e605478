import type { Route } from '../http/route.ts'
import type { JsonSchema } from '../http/validate.ts'
import { recordRoutes } from '../records/routes.ts'
import { idList, metadataSchema, versionField } from '../records/schema.ts'
import * as service from './service.ts'

const fields: Record<string, JsonSchema> = {
  name: { type: 'string', minLength: 1, maxLength: 255 },
  lookup_key: { type: ['string', 'null'], minLength: 1, maxLength: 255 },
  entity_ids: { ...idList, uniqueItems: true, description: 'the prices or features in the group; replaces the members' },
  metadata: metadataSchema,
}

export const groupRoutes: Route[] = recordRoutes({
  path: '/v1/groups',
  tag: 'Groups',
  noun: 'group',
  sortable: ['created_at', 'updated_at', 'name'],
  filters: service.FILTERS,
  createBody: { type: 'object', required: ['name', 'entity_type'], additionalProperties: false, properties: { ...fields, entity_type: { type: 'string', enum: ['price', 'feature'] } } },
  updateBody: { type: 'object', additionalProperties: false, properties: { ...fields, version: versionField } },
  service: { create: service.createGroup, get: service.getGroup, list: service.listGroups, update: service.updateGroup, remove: service.deleteGroup },
})
