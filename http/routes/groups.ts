import type { Route } from '../route.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { recordRoutes } from '../record-routes.ts'
import { idList, metadataSchema, versionField } from '../record-schema.ts'
import * as service from '../../domains/catalog/groups/service.ts'

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
  deleted: 'no_content',
  service: { create: service.createGroup, get: service.getGroup, list: service.listGroups, update: service.updateGroup, remove: service.deleteGroup },
})
