// A stand-in for the QuickBooks Online endpoints the QuickBooks adapter calls, on a local port (there is
// no outside network here): Intuit's OAuth2 refresh (Basic client credentials, a rotating refresh token:
// only the latest one works), and the v3 company API — query (`select * from X where F = '…'`), read of one
// record by id, create of customer, item, invoice, payment and creditmemo with QuickBooks' answers and Fault
// errors, and payments entered "in QuickBooks" (receivePayment) for its webhooks' tests. It honours
// `requestid` as QuickBooks documents: a repeated requestid answers the first response (a refusal too;
// not an outage's 5xx) and creates nothing. It can be taken down, fail one entity's creates, or accept a create and then drop the
// connection before answering (what a crash between QuickBooks accepting and us recording looks like).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { D } from '../core/money.ts'

type Entity = Record<string, any> & { Id: string }

export interface FakeQuickbooks {
  url: string
  tokenUrl: string
  realm: string
  clientId: string
  clientSecret: string
  /** The refresh token that works now (each refresh replaces it). */
  refreshToken: string
  /** By entity name as QuickBooks spells it: Customer, Item, Account, Invoice, Payment, CreditMemo. */
  entities: Record<string, Map<string, Entity>>
  /** Creates received, replays included: entity and requestid. */
  creates: { entity: string; requestid: string | null }[]
  /** While set, every request answers 503. */
  down: boolean
  /** Creates of this entity (lower case, as in the path) answer 500. */
  failOn?: string
  /** Creates of these entities (lower case) are accepted, then the connection is dropped unanswered, once each. */
  dropAfterAccept: Set<string>
  /** Called when such a create was accepted, before the connection is dropped (a crash test kills its worker here). */
  onDrop?: (entity: string) => void
  /** A payment received in QuickBooks itself (a check entered there) against its invoices: the Payment's id. */
  receivePayment(lines: { invoiceId: string; amount: number }[], currency?: string): string
  stop(): Promise<void>
}

const ENTITY_NAMES: Record<string, string> = { customer: 'Customer', item: 'Item', invoice: 'Invoice', payment: 'Payment', creditmemo: 'CreditMemo' }

class Fault extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string,
    readonly detail?: string,
  ) {
    super(message)
  }
}

async function readBody(req: IncomingMessage): Promise<string> {
  let text = ''
  for await (const chunk of req) text += chunk
  return text
}

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}

/** An amount as QuickBooks takes it: a JSON number, kept as its exact decimal. */
function amount(v: unknown, field: string) {
  if (typeof v !== 'number') throw new Fault(400, 'Request has invalid or unsupported property', '2010', `${field} must be a number`)
  return new D(String(v))
}

export async function startFakeQuickbooks(options: { realm?: string } = {}): Promise<FakeQuickbooks> {
  let seq = 0
  const nextId = () => String(++seq)
  const accessTokens = new Set<string>()
  const replies = new Map<string, { status: number; body: unknown }>()
  const fake: FakeQuickbooks = {
    url: '',
    tokenUrl: '',
    realm: options.realm ?? '9341452154318821',
    clientId: 'ABfakeclientid',
    clientSecret: 'fake-client-secret',
    refreshToken: 'AB11fake-refresh-0',
    entities: { Customer: new Map(), Item: new Map(), Account: new Map(), Invoice: new Map(), Payment: new Map(), CreditMemo: new Map() },
    creates: [],
    down: false,
    dropAfterAccept: new Set(),
    receivePayment: (lines, currency = 'USD') => {
      const customer = fake.entities.Invoice.get(lines[0].invoiceId)!.CustomerRef
      const total = lines.reduce((sum, l) => sum.plus(String(l.amount)), new D(0)).toNumber()
      const body = { CustomerRef: customer, CurrencyRef: { value: currency }, TotalAmt: total, Line: lines.map((l) => ({ Amount: l.amount, LinkedTxn: [{ TxnId: l.invoiceId, TxnType: 'Invoice' }] })) }
      return make('Payment', body).Id
    },
    stop: async () => {},
  }
  const income: Entity = { Id: nextId(), Name: 'Services', AccountType: 'Income', Active: true }
  fake.entities.Account.set(income.Id, income)

  const exists = (entity: string, ref: { value?: unknown } | undefined, field: string) => {
    if (typeof ref?.value !== 'string' || !fake.entities[entity].has(ref.value)) throw new Fault(400, 'Invalid Reference Id', '2500', `${field}: ${entity} ${String(ref?.value)} not found`)
    return fake.entities[entity].get(ref.value)!
  }

  /** Sales and discount lines checked as QuickBooks does; the transaction's total. */
  function linesTotal(lines: unknown): InstanceType<typeof D> {
    if (!Array.isArray(lines) || lines.length === 0) throw new Fault(400, 'Required param missing, need to supply the required value for the API', '2020', 'Line')
    let total = new D(0)
    for (const [i, line] of lines.entries()) {
      const value = amount(line.Amount, `Line[${i}].Amount`)
      if (line.DetailType === 'SalesItemLineDetail') {
        exists('Item', line.SalesItemLineDetail?.ItemRef, `Line[${i}].ItemRef`)
        const qty = amount(line.SalesItemLineDetail.Qty, 'Qty')
        const unit = amount(line.SalesItemLineDetail.UnitPrice, 'UnitPrice')
        if (!qty.times(unit).equals(value)) throw new Fault(400, 'Amount is not equal to UnitPrice * Qty', '6070', `Line[${i}]`)
        total = total.plus(value)
      } else if (line.DetailType === 'DiscountLineDetail') total = total.minus(value)
      else throw new Fault(400, 'Request has invalid or unsupported property', '2010', `Line[${i}].DetailType`)
    }
    if (total.lt(0)) throw new Fault(400, 'Transaction total cannot be negative', '6140', 'TotalAmt')
    return total
  }

  function make(entity: string, body: any): Entity {
    const made: Entity = { ...body, Id: nextId(), SyncToken: '0', domain: 'QBO', MetaData: { CreateTime: new Date().toISOString() } }
    if (entity === 'Customer' || entity === 'Item') {
      const field = entity === 'Customer' ? 'DisplayName' : 'Name'
      if (typeof body[field] !== 'string' || !body[field]) throw new Fault(400, 'Required param missing, need to supply the required value for the API', '2020', field)
      if ([...fake.entities[entity].values()].some((e) => e[field] === body[field])) throw new Fault(400, 'Duplicate Name Exists Error', '6240', `The name supplied already exists. : ${body[field]}`)
      if (entity === 'Item') exists('Account', body.IncomeAccountRef, 'IncomeAccountRef')
    }
    if (entity === 'Invoice' || entity === 'CreditMemo') {
      exists('Customer', body.CustomerRef, 'CustomerRef')
      made.TotalAmt = made.Balance = linesTotal(body.Line).toNumber()
    }
    if (entity === 'Payment') {
      exists('Customer', body.CustomerRef, 'CustomerRef')
      const total = amount(body.TotalAmt, 'TotalAmt')
      for (const line of body.Line ?? []) {
        const invoice = exists('Invoice', { value: line.LinkedTxn?.[0]?.TxnId }, 'LinkedTxn')
        const balance = new D(String(invoice.Balance)).minus(amount(line.Amount, 'Line.Amount'))
        if (balance.lt(0)) throw new Fault(400, 'Payment exceeds the balance of the invoice', '6000', invoice.Id)
        invoice.Balance = balance.toNumber()
      }
      made.UnappliedAmt = 0
      made.TotalAmt = total.toNumber()
    }
    fake.entities[entity].set(made.Id, made)
    return made
  }

  function query(text: string) {
    const m = /^select \* from (\w+)(?: where (\w+) = '((?:[^'\\]|\\.)*)')?\s*$/i.exec(text)
    if (!m || !fake.entities[m[1]]) throw new Fault(400, 'Error parsing query', '4000', text)
    const [, entity, field, raw] = m
    const value = raw?.replace(/\\(.)/g, '$1')
    const found = [...fake.entities[entity].values()].filter((e) => field === undefined || e[field] === value)
    return { QueryResponse: found.length ? { [entity]: found, startPosition: 1, maxResults: found.length } : {}, time: new Date().toISOString() }
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://fake')
    const text = await readBody(req)
    if (fake.down) return json(res, 503, { Fault: { Error: [{ Message: 'Service Unavailable', code: '503' }], type: 'SystemFault' } })
    if (req.method === 'POST' && url.pathname === '/oauth2/v1/tokens/bearer') {
      const basic = `Basic ${Buffer.from(`${fake.clientId}:${fake.clientSecret}`).toString('base64')}`
      if (req.headers.authorization !== basic) return json(res, 401, { error: 'invalid_client' })
      const form = new URLSearchParams(text)
      if (form.get('grant_type') !== 'refresh_token' || form.get('refresh_token') !== fake.refreshToken) return json(res, 400, { error: 'invalid_grant' })
      const access = `eyJfake-access-${nextId()}`
      accessTokens.add(access)
      fake.refreshToken = `AB11fake-refresh-${nextId()}`
      return json(res, 200, { token_type: 'bearer', access_token: access, expires_in: 3600, refresh_token: fake.refreshToken, x_refresh_token_expires_in: 8726400 })
    }
    const m = /^\/v3\/company\/([^/]+)\/(\w+)(?:\/(\w+))?$/.exec(url.pathname)
    if (!m) return json(res, 404, { Fault: { Error: [{ Message: 'Not found', code: '404' }] } })
    const token = req.headers.authorization?.replace(/^Bearer /, '')
    if (!token || !accessTokens.has(token)) return json(res, 401, { Fault: { Error: [{ Message: 'message=AuthenticationFailed; errorCode=003200; statusCode=401', code: '3200' }], type: 'AUTHENTICATION' } })
    if (m[1] !== fake.realm) return json(res, 403, { Fault: { Error: [{ Message: 'ApplicationAuthorizationFailed', code: '003100' }], type: 'AUTHORIZATION' } })
    try {
      if (req.method === 'GET' && m[2] === 'query') return json(res, 200, query(url.searchParams.get('query') ?? ''))
      const entity = ENTITY_NAMES[m[2]]
      if (req.method === 'GET' && entity && m[3]) {
        const found = fake.entities[entity].get(m[3])
        if (!found) throw new Fault(400, 'Object Not Found', '610', `${entity} ${m[3]}`)
        return json(res, 200, { [entity]: found, time: new Date().toISOString() })
      }
      if (req.method !== 'POST' || !entity) throw new Fault(400, 'Unsupported Operation', '500', `${req.method} ${m[2]}`)
      const requestid = url.searchParams.get('requestid')
      fake.creates.push({ entity, requestid })
      const replay = requestid ? replies.get(requestid) : undefined
      if (replay) return json(res, replay.status, replay.body)
      if (fake.failOn === m[2]) throw new Fault(500, 'An application error has occurred while processing your request', '10000')
      const made = make(entity, JSON.parse(text))
      const answer = { [entity]: made, time: new Date().toISOString() }
      if (requestid) replies.set(requestid, { status: 200, body: answer })
      if (fake.dropAfterAccept.delete(m[2])) {
        fake.onDrop?.(m[2])
        return void req.socket.destroy()
      }
      return json(res, 200, answer)
    } catch (err) {
      if (!(err instanceof Fault)) throw err
      const answer = { Fault: { Error: [{ Message: err.message, Detail: err.detail, code: err.code }], type: err.status >= 500 ? 'SystemFault' : 'ValidationFault' } }
      const requestid = url.searchParams.get('requestid')
      if (requestid && err.status < 500) replies.set(requestid, { status: err.status, body: answer })
      return json(res, err.status, answer)
    }
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err) => json(res, 500, { Fault: { Error: [{ Message: String(err), code: '10000' }] } }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  fake.tokenUrl = `${fake.url}/oauth2/v1/tokens/bearer`
  fake.stop = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  return fake
}
