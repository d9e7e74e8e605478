import type { Route } from '../route.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { recordRoutes } from '../record-routes.ts'
import { currencySchema, dateTime, metadataSchema, nonNegativeDecimal, versionField } from '../record-schema.ts'
import * as service from '../../domains/invoicing/taxes/service.ts'

const name: JsonSchema = { type: 'string', minLength: 1, maxLength: 255 }

export const taxRoutes: Route[] = [
  ...recordRoutes({
    path: '/v1/taxes/rates',
    tag: 'Taxes',
    noun: 'tax rate',
    sortable: ['created_at', 'updated_at', 'name', 'code'],
    filters: service.FILTERS,
    createBody: {
      type: 'object',
      required: ['name', 'code', 'tax_rate_type'],
      additionalProperties: false,
      properties: {
        name,
        code: { type: 'string', minLength: 1, maxLength: 100 },
        description: { type: 'string', maxLength: 2000 },
        tax_rate_type: { type: 'string', enum: ['percentage', 'fixed'] },
        percentage_value: nonNegativeDecimal,
        fixed_value: nonNegativeDecimal,
        scope: { type: 'string', enum: ['INTERNAL', 'EXTERNAL', 'ONETIME'] },
        metadata: metadataSchema,
      },
    },
    updateBody: {
      type: 'object',
      additionalProperties: false,
      properties: { name, description: { type: ['string', 'null'], maxLength: 2000 }, tax_rate_status: { type: 'string', enum: ['ACTIVE', 'INACTIVE'] }, metadata: metadataSchema, version: versionField },
    },
    deleted: 'no_content',
    service: service.taxRates,
  }),
  ...recordRoutes({
    path: '/v1/taxes/associations',
    tag: 'Taxes',
    noun: 'tax association',
    sortable: ['created_at', 'priority'],
    filters: service.ASSOCIATION_FILTERS,
    createBody: {
      type: 'object',
      required: ['tax_rate_code'],
      additionalProperties: false,
      properties: {
        tax_rate_code: { type: 'string', minLength: 1 },
        entity_type: { type: 'string', enum: ['tenant', 'customer', 'subscription'], description: 'required unless external_customer_id names the customer' },
        entity_id: { type: 'string', minLength: 1 },
        external_customer_id: { type: 'string', minLength: 1, description: "the customer by your id (Flexprice's form)" },
        priority: { type: 'integer', minimum: 0 },
        auto_apply: { type: 'boolean' },
        currency: currencySchema,
        start_date: dateTime,
        end_date: dateTime,
        metadata: metadataSchema,
      },
    },
    updateBody: {
      type: 'object',
      additionalProperties: false,
      properties: { priority: { type: 'integer', minimum: 0 }, auto_apply: { type: 'boolean' }, metadata: metadataSchema, version: versionField },
    },
    // Flexprice answers 200 here, and its SDK takes nothing else.
    createdStatus: 200,
    service: { create: service.createAssociation, get: service.getAssociation, list: service.listAssociations, update: service.updateAssociation, remove: service.deleteAssociation },
  }),
]
