// The OpenAPI document is generated from the route declarations: the same JSON schemas that
// validate requests describe them, so the document cannot drift from the code.
import type { Route } from './route.ts'
import { boundedSchema, type JsonSchema } from '../core/validate.ts'

const errorBody: JsonSchema = {
  type: 'object',
  required: ['code', 'message', 'http_status_code', 'details'],
  properties: {
    code: { type: 'string' },
    message: { type: 'string' },
    http_status_code: { type: 'integer' },
    details: { type: 'object', additionalProperties: true },
    success: { type: 'boolean', const: false, description: "for Flexprice's clients" },
    error: { type: 'object', properties: { message: { type: 'string' }, internal_error: { type: 'string' } }, description: "for Flexprice's clients" },
  },
}

function queryParameters(schema: JsonSchema | undefined): JsonSchema[] {
  const props = (schema?.properties ?? {}) as Record<string, JsonSchema>
  const required = new Set((schema?.required as string[] | undefined) ?? [])
  const params = Object.entries(props).map(([name, s]) => ({ name, in: 'query', required: required.has(name), schema: boundedSchema(s) }))
  if (schema?.patternProperties) {
    params.push({ name: 'metadata[key]', in: 'query', required: false, schema: { type: 'string', description: 'metadata filter, e.g. metadata[plan]=pro' } })
  }
  return params
}

/** The version of the interface the document describes: the spec's (its paths are under /v1). */
const INTERFACE_VERSION = '1.0'

export function openApiDocument(routes: Route[]): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {}
  for (const r of routes) {
    const pathParams = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }))
    const op: JsonSchema = {
      tags: [r.tag],
      summary: r.summary,
      parameters: [...pathParams, ...queryParameters(r.query)],
      responses: {
        [String(r.status ?? 200)]: { description: 'OK', content: { [r.produces ?? 'application/json']: { schema: r.response ?? (r.produces ? { type: 'string' } : { type: 'object' }) } } },
        default: { description: 'Error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
      },
      ...(r.permission === 'public' ? { security: [] } : r.permission === 'session' ? { security: [{ PortalSession: [] }], 'x-required-permission': 'session' } : { 'x-required-permission': r.permission }),
    }
    if (r.body) op.requestBody = { required: true, content: { 'application/json': { schema: boundedSchema(r.body) } } }
    ;(paths[r.path] ??= {})[r.method.toLowerCase()] = op
  }
  return {
    openapi: '3.1.0',
    info: { title: 'meterbill API', version: INTERFACE_VERSION },
    servers: [{ url: '/' }],
    security: [{ ApiKeyAuth: [] }],
    components: {
      securitySchemes: { ApiKeyAuth: { type: 'apiKey', in: 'header', name: 'x-api-key' }, PortalSession: { type: 'apiKey', in: 'header', name: 'X-Session-Token', description: 'a customer portal session (GET /v1/customers/portal/{external_id})' } },
      schemas: { Error: errorBody },
    },
    paths,
  }
}
