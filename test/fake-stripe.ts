// A stand-in for the few Stripe endpoints the Stripe adapter calls (customers, invoices, invoice items,
// finalize, pay, Checkout Sessions in setup mode and their setup intents, billing portal sessions), on a local port: there is no outside network here. It keeps what it was sent, honours
// Idempotency-Key like Stripe (a repeated key answers the first response), checks the secret key, and
// can be taken down or made to fail one path, as an outage would.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** Form fields as Stripe takes them: `metadata[k]=v` nested one level. */
type Form = Record<string, string> & { metadata?: Record<string, string> }

interface FakeCustomer {
  id: string
  object: 'customer'
  name?: string
  email?: string
  metadata?: Record<string, string>
  invoice_settings: { default_payment_method: string | null }
  declines?: boolean
}

export interface FakeInvoice {
  id: string
  object: 'invoice'
  customer: string
  currency: string
  collection_method: string
  days_until_due?: string
  metadata: Record<string, string>
  status: 'draft' | 'open' | 'paid'
  /** Minor units, as Stripe counts them. */
  amount_due: number
  amount_paid: number
  lines: { amount: number; description: string; currency: string }[]
  hosted_invoice_url?: string
  /** The card a paid invoice was charged to (Stripe tells it through the invoice's payment intent). */
  payment_method?: string
}

interface FakeSession {
  id: string
  object: 'checkout.session'
  mode: string
  customer: string
  currency: string
  success_url: string
  cancel_url?: string
  metadata: Record<string, string>
  setup_intent: string
  status: 'open' | 'complete'
  url: string
}

export interface FakeStripe {
  url: string
  customers: Map<string, FakeCustomer>
  invoices: Map<string, FakeInvoice>
  sessions: Map<string, FakeSession>
  /** The customer completes a setup session's page with this card (its setup intent then holds it). */
  completeSetup(sessionId: string, paymentMethod: string): FakeSession
  /** Every request: method, path and form fields. */
  requests: { method: string; path: string; form: Form }[]
  /** While set, every request answers 503. */
  down: boolean
  /** Requests whose path ends with this answer 500 (e.g. '/finalize'). */
  failOn?: string
  addCustomer(id: string, options?: { paymentMethod?: string; declines?: boolean }): void
  stop(): Promise<void>
}

/** Stripe's form fields with metadata[k]=v nested. */
function parseForm(text: string): Form {
  const out: Record<string, string | Record<string, string>> = {}
  for (const [k, v] of new URLSearchParams(text)) {
    const nested = /^(\w+)\[(\w+)\]$/.exec(k)
    if (nested) ((out[nested[1]] ??= {}) as Record<string, string>)[nested[2]] = v
    else out[k] = v
  }
  return out as Form
}

export async function startFakeStripe(secretKey: string): Promise<FakeStripe> {
  let seq = 0
  const cache = new Map<string, { status: number; body: unknown }>()
  /** Setup intent → the payment method it saved (none until its session is completed). */
  const intents = new Map<string, string | null>()
  const fake = {
    customers: new Map<string, FakeCustomer>(),
    invoices: new Map<string, FakeInvoice>(),
    sessions: new Map<string, FakeSession>(),
    requests: [],
    down: false,
    failOn: undefined,
    completeSetup: (sessionId: string, paymentMethod: string) => {
      const session = fake.sessions.get(sessionId)!
      session.status = 'complete'
      intents.set(session.setup_intent, paymentMethod)
      return session
    },
    addCustomer: (id: string, options: { paymentMethod?: string; declines?: boolean } = {}) => {
      fake.customers.set(id, { id, object: 'customer', invoice_settings: { default_payment_method: options.paymentMethod ?? null }, declines: options.declines ?? false })
    },
  } as unknown as FakeStripe

  const error = (status: number, message: string, type = 'invalid_request_error') => ({ status, body: { error: { message, type } } })

  function handle(method: string, path: string, form: Form): { status: number; body: unknown } {
    let m: RegExpExecArray | null
    if (method === 'POST' && path === '/v1/customers') {
      const id = `cus_fake${++seq}`
      fake.customers.set(id, { id, object: 'customer', name: form.name, email: form.email, metadata: form.metadata ?? {}, invoice_settings: { default_payment_method: null } })
      return { status: 200, body: fake.customers.get(id) }
    }
    if (method === 'GET' && (m = /^\/v1\/customers\/([\w-]+)$/.exec(path))) {
      const c = fake.customers.get(m[1])
      return c ? { status: 200, body: c } : error(404, `No such customer: '${m[1]}'`)
    }
    if (method === 'POST' && (m = /^\/v1\/customers\/([\w-]+)$/.exec(path))) {
      const c = fake.customers.get(m[1])
      if (!c) return error(404, `No such customer: '${m[1]}'`)
      const settings = (form as unknown as { invoice_settings?: { default_payment_method?: string } }).invoice_settings
      if (settings?.default_payment_method) c.invoice_settings.default_payment_method = settings.default_payment_method
      return { status: 200, body: c }
    }
    if (method === 'POST' && path === '/v1/checkout/sessions') {
      if (form.mode !== 'setup') return error(400, 'only setup mode is faked')
      if (!fake.customers.has(form.customer)) return error(400, `No such customer: '${form.customer}'`)
      if (!form.success_url) return error(400, 'Missing required param: success_url.')
      const id = `cs_fake${++seq}`
      const setupIntent = `seti_fake${++seq}`
      intents.set(setupIntent, null)
      const session: FakeSession = { id, object: 'checkout.session', mode: 'setup', customer: form.customer, currency: form.currency, success_url: form.success_url, cancel_url: form.cancel_url, metadata: form.metadata ?? {}, setup_intent: setupIntent, status: 'open', url: `https://checkout.stripe.test/c/pay/${id}` }
      fake.sessions.set(id, session)
      return { status: 200, body: session }
    }
    if (method === 'POST' && path === '/v1/billing_portal/sessions') {
      if (!fake.customers.has(form.customer)) return error(400, `No such customer: '${form.customer}'`)
      const id = `bps_fake${++seq}`
      return { status: 200, body: { id, object: 'billing_portal.session', customer: form.customer, return_url: form.return_url ?? null, url: `https://billing.stripe.test/p/session/${id}` } }
    }
    if (method === 'GET' && (m = /^\/v1\/setup_intents\/([\w-]+)$/.exec(path))) {
      if (!intents.has(m[1])) return error(404, `No such setupintent: '${m[1]}'`)
      const pm = intents.get(m[1])
      return { status: 200, body: { id: m[1], object: 'setup_intent', status: pm ? 'succeeded' : 'requires_payment_method', payment_method: pm } }
    }
    if (method === 'POST' && path === '/v1/invoices') {
      if (!fake.customers.has(form.customer)) return error(400, `No such customer: '${form.customer}'`)
      const id = `in_fake${++seq}`
      fake.invoices.set(id, { id, object: 'invoice', customer: form.customer, currency: form.currency, collection_method: form.collection_method, days_until_due: form.days_until_due, metadata: form.metadata ?? {}, status: 'draft', amount_due: 0, amount_paid: 0, lines: [] })
      return { status: 200, body: fake.invoices.get(id) }
    }
    if (method === 'POST' && path === '/v1/invoiceitems') {
      const inv = fake.invoices.get(form.invoice)
      if (!inv || inv.status !== 'draft') return error(400, 'the invoice takes no items')
      inv.lines.push({ amount: Number(form.amount), description: form.description, currency: form.currency })
      inv.amount_due += Number(form.amount)
      return { status: 200, body: { id: `ii_fake${++seq}`, object: 'invoiceitem', invoice: inv.id, amount: Number(form.amount) } }
    }
    if (method === 'POST' && (m = /^\/v1\/invoices\/(\w+)\/(finalize|pay)$/.exec(path))) {
      const inv = fake.invoices.get(m[1])
      if (!inv) return error(404, `No such invoice: '${m[1]}'`)
      if (m[2] === 'finalize') {
        if (inv.status !== 'draft') return error(400, 'Invoice is already finalized')
        Object.assign(inv, { status: 'open', hosted_invoice_url: `https://invoice.stripe.test/i/${inv.id}` })
        return { status: 200, body: inv }
      }
      const customer = fake.customers.get(inv.customer)!
      if (!customer.invoice_settings.default_payment_method) return error(400, 'The customer has no payment method')
      if (customer.declines) return error(402, 'Your card was declined.', 'card_error')
      Object.assign(inv, { status: 'paid', amount_paid: inv.amount_due, payment_method: customer.invoice_settings.default_payment_method })
      return { status: 200, body: inv }
    }
    return error(404, `Unrecognized request URL (${method}: ${path})`)
  }

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = ''
    req.on('data', (chunk) => (text += chunk))
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'http://x').pathname
      const form = parseForm(text)
      fake.requests.push({ method: req.method ?? '', path, form })
      const key = req.headers['idempotency-key'] as string | undefined
      const answer = fake.down
        ? { status: 503, body: { error: { message: 'Service unavailable', type: 'api_error' } } }
        : fake.failOn && path.endsWith(fake.failOn)
          ? { status: 500, body: { error: { message: 'An unknown error occurred', type: 'api_error' } } }
          : req.headers.authorization !== `Bearer ${secretKey}`
            ? error(401, 'Invalid API Key provided')
            : ((key ? cache.get(key) : undefined) ?? handle(req.method ?? '', path, form))
      // Stripe keeps the first answer of a key unless it was a server error.
      if (key && answer.status < 500 && !cache.has(key)) cache.set(key, answer)
      res.writeHead(answer.status, { 'content-type': 'application/json' })
      res.end(JSON.stringify(answer.body))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  fake.stop = () => new Promise<void>((resolve) => server.close(() => resolve()))
  return fake
}
