import { defineRoute, type Route } from '../http/route.ts'
import { openApiDocument } from './document.ts'

export const openApiRoutes = (all: () => Route[], version: string): Route[] => [
  defineRoute({
    method: 'GET',
    path: '/v1/openapi.json',
    tag: 'Meta',
    summary: 'This OpenAPI document, generated from the validating schemas',
    permission: 'public',
    handler: async () => openApiDocument(all(), version),
  }),
]
