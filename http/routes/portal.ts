// The customer portal (Flexprice's shape). An API key opens a session for a customer (GET
// /v1/customers/portal/{external_id}); the customer's browser then calls /v1/customer/portal/… with the session
// token in X-Session-Token, reading that one customer's billing and nothing else. Read-only: the only write a
// session can make is ending itself. The payment method page spans the portal and integrations, side by side in
// the domain order, so it is composed here.
import type { Context } from 'koa'
import type { ListParams } from '../../core/list.ts'
import type { JsonSchema } from '../../core/validate.ts'
import { toWire } from '../../domains/records/wire.ts'
import { createPortalSession, endSession, portalActor, revokePortalSessions } from '../../domains/portal/service.ts'
import * as read from '../../domains/portal/read.ts'
import { paymentMethodPage, paymentMethodProvider } from '../../domains/integrations/service.ts'
import { defineRoute, type Route } from '../route.ts'

const TAG = 'Customer portal'

interface PageBody {
  page?: number
  limit?: number
  offset?: number
}

/** Flexprice's portal lists take {page, limit} in a POST body; offset is accepted too. */
const pageBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    page: { type: 'integer', minimum: 1, description: '1-based; default 1' },
    limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
    offset: { type: 'integer', minimum: 0, description: 'instead of page' },
  },
}

const pageQuery: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 }, offset: { type: 'integer', minimum: 0, default: 0 } },
}

/** Newest first, as a customer reads a statement. */
const paging = ({ page, limit = 20, offset }: PageBody): ListParams => ({
  limit,
  offset: offset ?? ((page ?? 1) - 1) * limit,
  sort: 'created_at',
  order: 'desc',
  status: 'published',
  metadata: {},
})

/** A document the customer downloads: saved under its number, never cached (the session may end). */
function attachment(ctx: Context, name: string, pdf: Buffer): undefined {
  ctx.type = 'application/pdf'
  ctx.set('Content-Disposition', `attachment; filename="${name.replace(/[^A-Za-z0-9._-]/g, '_')}.pdf"`)
  ctx.set('Cache-Control', 'no-store')
  ctx.body = pdf
  return undefined
}

const session = <B = Record<string, never>, Q = Record<string, never>>(route: Omit<Route<B, Q>, 'tag' | 'permission'>): Route<B, Q> =>
  defineRoute<B, Q>({ ...route, tag: TAG, permission: 'session' })

export const portalRoutes: Route[] = [
  defineRoute({
    method: 'GET',
    path: '/v1/customers/portal/{external_id}',
    tag: TAG,
    summary: "Opens a one-hour portal session for the customer with this external id: a link to the portal page and the token its calls carry (X-Session-Token)",
    permission: 'write',
    handler: async ({ deps, actor, params, ctx }) => toWire(await createPortalSession(deps, actor, params.external_id, `${ctx.protocol}://${ctx.host}`)),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/v1/customers/portal/{external_id}',
    tag: TAG,
    summary: "Revokes every live portal session of the customer: their links stop working at once",
    permission: 'write',
    handler: ({ deps, actor, params }) => revokePortalSessions(deps, actor, params.external_id),
  }),

  session({
    method: 'GET',
    path: '/v1/customer/portal/info',
    summary: "The session's customer",
    handler: async ({ deps, actor }) => toWire(await read.portalCustomer(deps, portalActor(actor))),
  }),
  session({
    method: 'GET',
    path: '/v1/customer/portal/usage',
    summary: "The customer's entitled features with their usage in the current billing period against the limit",
    handler: async ({ deps, actor }) => toWire(await read.portalUsage(deps, portalActor(actor))),
  }),
  session({
    method: 'GET',
    path: '/v1/customer/portal/usage/history',
    summary: "Each metered feature's usage per day of the current billing period, with its limit (the portal's chart)",
    handler: async ({ deps, actor }) => toWire(await read.portalUsageHistory(deps, portalActor(actor))),
  }),
  session<PageBody>({
    method: 'POST',
    path: '/v1/customer/portal/subscriptions',
    summary: "The customer's subscriptions, newest first",
    body: pageBody,
    handler: async ({ deps, actor, body }) => toWire(await read.portalSubscriptions(deps, portalActor(actor), paging(body))),
  }),
  session({
    method: 'GET',
    path: '/v1/customer/portal/subscriptions/{id}',
    summary: 'One of the customer’s subscriptions',
    handler: async ({ deps, actor, params }) => toWire(await read.portalSubscription(deps, portalActor(actor), params.id)),
  }),
  session<PageBody>({
    method: 'POST',
    path: '/v1/customer/portal/invoices',
    summary: "The customer's finalized and voided invoices, newest first (drafts are not shown)",
    body: pageBody,
    handler: async ({ deps, actor, body }) => toWire(await read.portalInvoices(deps, portalActor(actor), paging(body))),
  }),
  session({
    method: 'GET',
    path: '/v1/customer/portal/invoices/{id}',
    summary: 'One of the customer’s invoices',
    handler: async ({ deps, actor, params }) => toWire(await read.portalInvoice(deps, portalActor(actor), params.id)),
  }),
  session({
    method: 'GET',
    path: '/v1/customer/portal/invoices/{id}/pdf',
    summary: 'One of the customer’s invoices as a PDF',
    produces: 'application/pdf',
    handler: async ({ deps, actor, params, ctx }) => {
      const { invoice, pdf } = await read.portalInvoicePdf(deps, portalActor(actor), params.id)
      return attachment(ctx, invoice.invoice_number ?? invoice.id, pdf)
    },
  }),
  session<PageBody>({
    method: 'POST',
    path: '/v1/customer/portal/creditnotes',
    summary: "The customer's finalized and voided credit notes, newest first",
    body: pageBody,
    handler: async ({ deps, actor, body }) => toWire(await read.portalCreditNotes(deps, portalActor(actor), paging(body))),
  }),
  session({
    method: 'GET',
    path: '/v1/customer/portal/creditnotes/{id}/pdf',
    summary: 'One of the customer’s credit notes as a PDF',
    produces: 'application/pdf',
    handler: async ({ deps, actor, params, ctx }) => {
      const { note, pdf } = await read.portalCreditNotePdf(deps, portalActor(actor), params.id)
      return attachment(ctx, note.credit_note_number ?? note.id, pdf)
    },
  }),
  session({
    method: 'POST',
    path: '/v1/customer/portal/wallets',
    summary: "The customer's wallets with their balances (an array: none, one or several)",
    body: { type: 'object' },
    handler: async ({ deps, actor }) => toWire(await read.portalWallets(deps, portalActor(actor))),
  }),
  session({
    method: 'GET',
    path: '/v1/customer/portal/wallets/{id}',
    summary: 'One of the customer’s wallets',
    handler: async ({ deps, actor, params }) => toWire(await read.portalWallet(deps, portalActor(actor), params.id)),
  }),
  session<Record<string, never>, PageBody>({
    method: 'GET',
    path: '/v1/customer/portal/wallets/{id}/transactions',
    summary: "A wallet's ledger, newest first",
    query: pageQuery,
    handler: async ({ deps, actor, params, query }) => toWire(await read.portalWalletTransactions(deps, portalActor(actor), params.id, paging(query))),
  }),
  session({
    method: 'GET',
    path: '/v1/customer/portal/payment-method',
    summary: "The payment provider holding the customer's payment methods ({provider: null} when none is connected or the customer has no account there)",
    handler: async ({ deps, actor }) => paymentMethodProvider(deps, actor, await read.portalCustomer(deps, portalActor(actor))),
  }),
  session({
    method: 'POST',
    path: '/v1/customer/portal/payment-method',
    summary: "Opens the provider's page (Stripe's billing portal) where the customer updates its payment method: {provider, url}; it comes back to /portal/",
    handler: async ({ deps, actor, ctx }) => paymentMethodPage(deps, actor, await read.portalCustomer(deps, portalActor(actor)), `${ctx.protocol}://${ctx.host}/portal/`),
  }),
  session({
    method: 'DELETE',
    path: '/v1/customer/portal/session',
    summary: 'Ends this portal session (sign out): its token is refused from now on',
    handler: ({ deps, actor }) => endSession(deps, portalActor(actor)),
  }),
]
