// QuickBooks Online over its v3 REST API (JSON): an OAuth2 session from the connection's refresh token,
// customers and items found by name or made once, and invoices, payments and credit memos created with
// a requestid derived from our record and the request's content, so a create retried after a crash
// (QuickBooks accepted it, we never recorded it) is answered with the first one instead of making a second.
import { createHash } from 'node:crypto'
import { qboQuery } from '../../core/quickbooks.ts'
import { ProviderError } from './provider.ts'

const TOKEN_URL = 'https://oauth.platform.intuit.com/oauth2/v1/tokens/bearer'
const API = 'https://quickbooks.api.intuit.com'
/** The API version asked for: the shapes used here are those of minor version 75. */
const MINOR_VERSION = '75'
const TIMEOUT_MS = 15_000

export interface QuickbooksSecrets {
  client_id: string
  client_secret: string
  refresh_token: string
  realm_id: string
  /** Intuit's token endpoint; another for a proxy or a test server. */
  token_url?: string
  /** The app's webhook verifier token: QuickBooks' notifications are signed with it (none: they are refused). */
  webhook_verifier_token?: string
}

export interface QuickbooksSession {
  connectionId: string
  base: string
  accessToken: string
}

export type QboEntity = 'Customer' | 'Item' | 'Account' | 'Invoice' | 'Payment' | 'CreditMemo'

/** The fields of QuickBooks' answers read here, unchecked until read. */
interface QboAnswer {
  access_token?: unknown
  refresh_token?: unknown
  error?: unknown
  QueryResponse?: Record<string, { Id?: unknown }[] | unknown>
  Fault?: { Error?: { Message?: string; Detail?: string; code?: string }[] }
  [entity: string]: unknown
}

async function send(url: string, init: RequestInit, what: string): Promise<QboAnswer> {
  let res: Response
  try {
    res = await fetch(url, { ...init, signal: AbortSignal.timeout(TIMEOUT_MS) })
  } catch (err) {
    throw new ProviderError(`quickbooks unreachable at ${new URL(url).origin}: ${(err as Error).message}`)
  }
  const text = await res.text()
  let body: QboAnswer = {}
  try {
    body = text ? (JSON.parse(text) as QboAnswer) : {}
  } catch {
    // A proxy's HTML error page: the status says enough.
  }
  if (!res.ok) {
    const fault = body.Fault?.Error?.[0]
    const reason = fault ? `${fault.Message ?? ''}${fault.Detail ? `: ${fault.Detail}` : ''}${fault.code ? ` (${fault.code})` : ''}` : String(body.error ?? (text.slice(0, 200) || 'no body'))
    throw new ProviderError(`quickbooks ${what} answered ${res.status}: ${reason}`, res.status, fault?.code)
  }
  return body
}

/**
 * An access token for the company, from the refresh token. Intuit rotates refresh tokens: the answer's
 * refresh_token replaces the stored one (the caller stores it before using the session).
 */
export async function openSession(connection: { id: string; api_base_url: string | null; secrets: QuickbooksSecrets }): Promise<{ session: QuickbooksSession; refreshToken: string }> {
  const { client_id, client_secret, refresh_token, realm_id, token_url } = connection.secrets
  const answer = await send(
    token_url ?? TOKEN_URL,
    {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${client_id}:${client_secret}`).toString('base64')}`, accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token }).toString(),
    },
    'token refresh',
  )
  if (typeof answer.access_token !== 'string') throw new ProviderError('quickbooks token refresh answered no access_token')
  const base = `${(connection.api_base_url ?? API).replace(/\/+$/, '')}/v3/company/${encodeURIComponent(realm_id)}`
  return { session: { connectionId: connection.id, base, accessToken: answer.access_token }, refreshToken: typeof answer.refresh_token === 'string' ? answer.refresh_token : refresh_token }
}

const headers = (session: QuickbooksSession) => ({ authorization: `Bearer ${session.accessToken}`, accept: 'application/json' })

/** The first record a query finds, if any. */
export async function findOne(session: QuickbooksSession, entity: QboEntity, query: string): Promise<string | undefined> {
  const url = `${session.base}/query?${new URLSearchParams({ query, minorversion: MINOR_VERSION })}`
  const answer = await send(url, { headers: headers(session) }, `query ${entity}`)
  const found = answer.QueryResponse?.[entity]
  const id = Array.isArray(found) ? (found[0] as { Id?: unknown } | undefined)?.Id : undefined
  return typeof id === 'string' ? id : undefined
}

/** One record by its id (a Payment a notification names), as QuickBooks answers it. */
export async function read(session: QuickbooksSession, entity: QboEntity, id: string): Promise<unknown> {
  const url = `${session.base}/${entity.toLowerCase()}/${encodeURIComponent(id)}?${new URLSearchParams({ minorversion: MINOR_VERSION })}`
  const answer = await send(url, { headers: headers(session) }, `read ${entity} ${id}`)
  if (!answer[entity]) throw new ProviderError(`quickbooks read ${entity} ${id} answered no ${entity}`)
  return answer[entity]
}

/**
 * Creates a record once: the requestid is a digest of the connection, `key` (our record) and the body, so
 * QuickBooks answers a repeat with the record the first request made. QuickBooks replays a refused
 * request's answer too: a request changed since (the cause fixed) gets a requestid of its own. Its id.
 */
export async function create(session: QuickbooksSession, entity: QboEntity, key: string, body: string): Promise<string> {
  // 40 hex digits: QuickBooks takes at most 50 characters, unique per company.
  const requestid = createHash('sha256').update(`${session.connectionId}\n${key}\n${body}`).digest('hex').slice(0, 40)
  const url = `${session.base}/${entity.toLowerCase()}?${new URLSearchParams({ requestid, minorversion: MINOR_VERSION })}`
  const answer = await send(url, { method: 'POST', headers: { ...headers(session), 'content-type': 'application/json' }, body }, `create ${entity}`)
  const id = (answer[entity] as { Id?: unknown } | undefined)?.Id
  if (typeof id !== 'string') throw new ProviderError(`quickbooks create ${entity} answered no ${entity}.Id`)
  return id
}

/** A customer or item by its name, else made with that name (once: `key` names what it is made for). */
export async function findOrCreate(session: QuickbooksSession, entity: 'Customer' | 'Item', field: 'DisplayName' | 'Name', name: string, key: string, body: () => Promise<string>): Promise<string> {
  return (await findOne(session, entity, qboQuery(entity, field, name))) ?? create(session, entity, key, await body())
}
