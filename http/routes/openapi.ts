import { defineRoute, type Route } from '../route.ts'
import { openApiDocument } from '../openapi.ts'

export const openApiRoutes = (all: () => Route[]): Route[] => [
  defineRoute({
    method: 'GET',
    path: '/v1/openapi.json',
    readsUsage: false,
    tag: 'Meta',
    summary: 'This OpenAPI document, generated from the validating schemas',
    permission: 'public',
    handler: async () => openApiDocument(all()),
  }),
]
