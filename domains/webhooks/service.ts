// Webhook endpoints of an environment (url, event type filter, disabled flag, signing secret) and what
// became of the outbox events: their deliveries, every attempt, and a manual retry.
import type { Config } from '../../core/config.ts'
import { invalidOperation, notFound, validationError } from '../../core/errors.ts'
import { newId } from '../../core/ids.ts'
import type { Actor } from '../../core/scope.ts'
import { EVENT_TYPES, newSigningSecret } from '../../core/webhook-signing.ts'
import type { Deps } from '../../infra/deps.ts'
import { deleteRecord, filterConditions, insertRecord, listRecords, requireRecord, updateRecord } from '../../infra/records.ts'
import { isSealed, seal, unseal } from '../../infra/secrets.ts'
import { type ListParams, type ListRequest, type Page, page } from '../../core/list.ts'
import { auditOf, transaction } from '../records/service.ts'
import * as store from './store.ts'

export const FILTERS = store.FILTERS

/** After a rotation the old secret still signs for a day, so receivers can switch without losing deliveries (as Svix does). */
const ROTATION_OVERLAP_MS = 24 * 3600_000
/** Plain http only where tests and local development listen. */
const LOCAL_HOSTS = ['localhost', '127.0.0.1', '[::1]']

export interface CreateEndpointInput {
  url: string
  description?: string
  filter_types?: string[]
  disabled?: boolean
  metadata?: Record<string, string>
}

export interface UpdateEndpointInput {
  url?: string
  description?: string | null
  filter_types?: string[]
  disabled?: boolean
  metadata?: Record<string, string>
  version?: number
}

export type EndpointView = Omit<store.EndpointRow, 'secret' | 'previous_secret' | 'previous_secret_expires_at'>
/** The answer of create and rotate: the only times the secret is shown. */
export type EndpointWithSecret = EndpointView & { secret: string }

const view = ({ secret: _s, previous_secret: _p, previous_secret_expires_at: _e, ...endpoint }: store.EndpointRow): EndpointView => endpoint

/**
 * Secrets are stored sealed (infra/secrets.ts, the endpoint id as associated data, for both columns). A
 * value not sealed is a `whsec_…` written before sealing: used as it is until the delivery job seals it.
 */
export const openSecret = (config: Config, endpointId: string, stored: string): string =>
  isSealed(stored) ? unseal<string>(config, endpointId, stored) : stored

/**
 * Seals the secrets that endpoints from before sealing hold in clear (SQL cannot: the key is not in the
 * database). The delivery job calls this each run; once they are sealed it finds nothing. A value is replaced
 * only while it is still the one read, so a rotation meanwhile wins.
 */
export async function sealPlaintextSecrets(deps: Deps, limit: number): Promise<void> {
  for (const row of await store.plaintextSecrets(deps.sql, limit)) {
    for (const column of ['secret', 'previous_secret'] as const) {
      const value = row[column]
      if (value !== null && !isSealed(value)) await store.replaceSecret(deps.sql, row.id, column, value, seal(deps.config, row.id, value))
    }
  }
}

function checkedUrl(raw: string): string {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw validationError('url', 'is not an absolute URL')
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOCAL_HOSTS.includes(url.hostname))) {
    throw validationError('url', 'must use https (http only for localhost and 127.0.0.1)')
  }
  if (url.username || url.password) throw validationError('url', 'must not carry credentials')
  return raw
}

/** In the spec's event list, but the spec also removed pausing and resuming (rule 12): a filter on them would wait forever. */
const NEVER_SENT = ['subscription.paused', 'subscription.resumed']

function checkedTypes(types: string[]): string[] {
  types.forEach((type, i) => {
    if (!EVENT_TYPES.includes(type)) throw validationError(`filter_types[${i}]`, `is not an event type: ${type}`)
    if (NEVER_SENT.includes(type)) throw validationError(`filter_types[${i}]`, `${type} is never sent: pausing and resuming subscriptions was removed from the API`)
  })
  return [...new Set(types)]
}

function checked<T extends { url?: string; filter_types?: string[] }>(input: T): T {
  return {
    ...input,
    ...(input.url !== undefined && { url: checkedUrl(input.url) }),
    ...(input.filter_types !== undefined && { filter_types: checkedTypes(input.filter_types) }),
  }
}

export async function createEndpoint(deps: Deps, actor: Actor, input: CreateEndpointInput): Promise<EndpointWithSecret> {
  const id = newId(store.ENDPOINTS.prefix)
  const secret = newSigningSecret()
  const fields = { filter_types: [], disabled: false, metadata: {}, ...checked(input), id, secret: seal(deps.config, id, secret) }
  const row = await transaction(deps, (tx) => insertRecord<store.EndpointRow>(tx, store.ENDPOINTS, actor, auditOf(deps, actor), fields))
  return { ...view(row), secret }
}

export const getEndpoint = async (deps: Deps, actor: Actor, id: string): Promise<EndpointView> =>
  view(await requireRecord<store.EndpointRow>(deps.sql, store.ENDPOINTS, actor, id))

export async function listEndpoints(deps: Deps, actor: Actor, { params, filters }: ListRequest): Promise<Page<EndpointView>> {
  const { rows, total } = await listRecords<store.EndpointRow>(deps.sql, store.ENDPOINTS, actor, params, filterConditions(deps.sql, store.FILTERS, filters))
  return page(rows.map(view), total, params)
}

export async function updateEndpoint(deps: Deps, actor: Actor, id: string, input: UpdateEndpointInput): Promise<EndpointView> {
  const { version, ...fields } = checked(input)
  return view(await transaction(deps, (tx) => updateRecord<store.EndpointRow>(tx, store.ENDPOINTS, actor, id, fields, { version, audit: auditOf(deps, actor) })))
}

/** Soft delete: the endpoint gets no new events; deliveries still waiting for it fail. */
export const deleteEndpoint = async (deps: Deps, actor: Actor, id: string): Promise<EndpointView> =>
  view(await transaction(deps, (tx) => deleteRecord<store.EndpointRow>(tx, store.ENDPOINTS, actor, id, auditOf(deps, actor))))

/** A new secret, shown once; the previous one keeps signing alongside it for a day. */
export async function rotateSecret(deps: Deps, actor: Actor, id: string): Promise<EndpointWithSecret> {
  const audit = auditOf(deps, actor)
  const secret = newSigningSecret()
  const row = await transaction(deps, async (tx) => {
    const current = await requireRecord<store.EndpointRow>(tx, store.ENDPOINTS, actor, id, { published: true })
    // Opened and sealed again: a secret still in clear gets sealed, and a process with the wrong key fails here, writing nothing.
    const fields = {
      secret: seal(deps.config, id, secret),
      previous_secret: seal(deps.config, id, openSecret(deps.config, id, current.secret)),
      previous_secret_expires_at: new Date(audit.at.getTime() + ROTATION_OVERLAP_MS),
    }
    return updateRecord<store.EndpointRow>(tx, store.ENDPOINTS, actor, id, fields, { audit })
  })
  return { ...view(row), secret }
}

type DeliveryView = Omit<store.DeliveryRow, 'tenant_id' | 'environment_id'>

export interface EventView extends Omit<store.EventRow, 'dispatched_at'> {
  /** One per endpoint the event was matched to. */
  deliveries: DeliveryView[]
}

async function withDeliveries(deps: Deps, actor: Actor, rows: store.EventRow[]): Promise<EventView[]> {
  const deliveries = await store.deliveriesOf(deps.sql, actor, rows.map((r) => r.id))
  return rows.map(({ dispatched_at: _d, ...event }) => ({
    ...event,
    deliveries: deliveries.filter((d) => d.event_id === event.id).map(({ tenant_id: _t, environment_id: _e, ...d }) => d),
  }))
}

async function requireEvent(deps: Deps, actor: Actor, id: string): Promise<store.EventRow> {
  const row = await store.findEvent(deps.sql, actor, id)
  if (!row) throw notFound('webhook event', id)
  return row
}

export type EventListParams = Pick<ListParams, 'limit' | 'offset' | 'order'>

export async function listEvents(deps: Deps, actor: Actor, params: EventListParams, filters: Record<string, unknown>): Promise<Page<EventView>> {
  const { rows, total } = await store.listEvents(deps.sql, actor, { ...params, sort: 'created_at' }, filterConditions(deps.sql, store.EVENT_FILTERS, filters))
  return page(await withDeliveries(deps, actor, rows), total, params)
}

export const getEvent = async (deps: Deps, actor: Actor, id: string): Promise<EventView> =>
  (await withDeliveries(deps, actor, [await requireEvent(deps, actor, id)]))[0]

export async function listAttempts(deps: Deps, actor: Actor, id: string, params: EventListParams): Promise<Page<store.AttemptRow>> {
  await requireEvent(deps, actor, id)
  const { rows, total } = await store.attemptsOf(deps.sql, actor, id, params)
  return page(rows, total, params)
}

/**
 * POST /webhooks/{id}/retry: the event's failed and waiting deliveries are due again at once with
 * their attempts reset (the delivery job sends them on its next run); an event no endpoint took is
 * matched again to the endpoints of today. A delivered event has nothing to retry.
 */
export async function retryEvent(deps: Deps, actor: Actor, id: string): Promise<EventView> {
  await transaction(deps, async (tx) => {
    const event = await store.findEvent(tx, actor, id, true)
    if (!event) throw notFound('webhook event', id)
    if (event.delivery_status === 'delivered') throw invalidOperation(`webhook event ${id} was delivered to every endpoint; nothing to retry`, { id, delivery_status: 'delivered' })
    await store.requeue(tx, event, deps.clock.now())
  })
  return getEvent(deps, actor, id)
}
