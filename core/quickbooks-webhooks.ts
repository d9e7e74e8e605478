// QuickBooks Online's webhooks, the pure part. Intuit signs a notification with the app's verifier token:
// `intuit-signature: <base64 HMAC-SHA256(verifier token, raw body)>`. The notification names what changed per
// company, in the CloudEvents form Intuit sends since 2026 — `[{type: "qbo.payment.created.v1", intuitentityid,
// intuitaccountid, …}]` — or the earlier one — `{eventNotifications: [{realmId, dataChangeEvent: {entities:
// [{name, id, operation}]}}]}`; the Payment read back lists the invoices it pays (`Line[].LinkedTxn[]` of TxnType
// Invoice).
import { createHmac, timingSafeEqual } from 'node:crypto'
import { D, type Decimal } from './money.ts'

/** The signature Intuit sends for `body`. */
export const intuitSignature = (verifierToken: string, body: string): string => createHmac('sha256', verifierToken).update(body, 'utf8').digest('base64')

/** Checks the `intuit-signature` header against the raw body, in constant time. */
export function verifyIntuitSignature(header: string | undefined, body: string, verifierToken: string): 'ok' | 'missing' | 'mismatch' {
  if (!header) return 'missing'
  const given = Buffer.from(header, 'base64')
  const expected = Buffer.from(intuitSignature(verifierToken, body), 'base64')
  return given.length === expected.length && timingSafeEqual(given, expected) ? 'ok' : 'mismatch'
}

interface Entity {
  name?: unknown
  id?: unknown
  operation?: unknown
}

/**
 * The ids of the Payments created or updated in the company `realmId`, each once; undefined when the body is not a
 * QuickBooks notification. Other companies' and other entities' changes are not ours to read.
 */
export function changedPayments(body: unknown, realmId: string): string[] | undefined {
  if (Array.isArray(body)) return changedInCloudEvents(body as CloudEvent[], realmId)
  const notifications = (body as { eventNotifications?: unknown } | null)?.eventNotifications
  if (!Array.isArray(notifications)) return undefined
  const ids = new Set<string>()
  for (const n of notifications as { realmId?: unknown; dataChangeEvent?: { entities?: unknown } }[]) {
    if (String(n?.realmId) !== realmId || !Array.isArray(n.dataChangeEvent?.entities)) continue
    for (const e of n.dataChangeEvent.entities as Entity[]) {
      if (e?.name === 'Payment' && (e.operation === 'Create' || e.operation === 'Update') && typeof e.id === 'string' && e.id) ids.add(e.id)
    }
  }
  return [...ids]
}

interface CloudEvent {
  type?: unknown
  intuitentityid?: unknown
  intuitaccountid?: unknown
}

const PAYMENT_CHANGED = /^qbo\.payment\.(created|updated)\.v\d+$/

function changedInCloudEvents(events: CloudEvent[], realmId: string): string[] | undefined {
  if (!events.every((e) => e && typeof e === 'object' && typeof e.type === 'string')) return undefined
  const ids = events.filter((e) => PAYMENT_CHANGED.test(e.type as string) && String(e.intuitaccountid) === realmId && typeof e.intuitentityid === 'string' && e.intuitentityid)
  return [...new Set(ids.map((e) => e.intuitentityid as string))]
}

/** What a QuickBooks Payment pays: the amount applied to each invoice, in the payment's currency (null: the company's). */
export interface PaymentApplications {
  currency: string | null
  invoices: { invoice_ref: string; amount: Decimal }[]
}

/** A QuickBooks amount: a JSON number, read from its decimal text (never summed as a float). */
const amountOf = (v: unknown): Decimal | undefined => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? new D(String(v)) : undefined)

export function paymentApplications(payment: unknown): PaymentApplications {
  const p = (payment ?? {}) as { CurrencyRef?: { value?: unknown }; Line?: unknown }
  const invoices: PaymentApplications['invoices'] = []
  for (const line of Array.isArray(p.Line) ? (p.Line as { Amount?: unknown; LinkedTxn?: unknown }[]) : []) {
    const amount = amountOf(line?.Amount)
    const linked = Array.isArray(line?.LinkedTxn) ? (line.LinkedTxn as { TxnId?: unknown; TxnType?: unknown }[]) : []
    const invoice = linked.find((t) => t?.TxnType === 'Invoice' && typeof t.TxnId === 'string')
    if (amount && invoice) invoices.push({ invoice_ref: invoice.TxnId as string, amount })
  }
  return { currency: typeof p.CurrencyRef?.value === 'string' ? p.CurrencyRef.value.toUpperCase() : null, invoices }
}
