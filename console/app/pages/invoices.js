// Invoices: filter by status, payment status and amount; paginated. Status filters are the API's;
// the amount filter runs here over the newest 1000 matching invoices, because the list endpoint has
// no amount filter (yet) — the page says so when it is in use.
import { html, useState } from '../lib/html.js'
import { useSession } from '../lib/session-context.js'
import { useApi } from '../lib/use-api.js'
import { compareDecimal, isDecimal } from '../lib/format.js'
import { Empty, ErrorBox, Loading, Pager } from '../components/ui.js'
import { InvoiceTable } from '../components/invoice-table.js'

const LIMIT = 20
const STATUSES = ['DRAFT', 'FINALIZED', 'VOIDED', 'SKIPPED']
const PAYMENTS = ['PENDING', 'PROCESSING', 'SUCCEEDED', 'OVERPAID', 'FAILED', 'PARTIALLY_REFUNDED', 'REFUNDED']
const SCAN = 1000

export function InvoicesPage() {
  const { api } = useSession()
  const [status, setStatus] = useState('')
  const [payment, setPayment] = useState('')
  const [min, setMin] = useState('')
  const [max, setMax] = useState('')
  const [offset, setOffset] = useState(0)
  const amountError = [min, max].some((v) => v !== '' && !isDecimal(v)) ? { message: 'amounts are decimals such as 100 or 99.50', details: { amount: 'not a decimal' } } : undefined
  const byAmount = !amountError && (min !== '' || max !== '')

  const list = useApi(async () => {
    const filters = { invoice_status: status, payment_status: payment }
    if (!byAmount) return api.get('/v1/invoices', { ...filters, limit: LIMIT, offset })
    const all = await api.get('/v1/invoices', { ...filters, limit: SCAN })
    const kept = all.items.filter((i) => (min === '' || compareDecimal(i.total, min) >= 0) && (max === '' || compareDecimal(i.total, max) <= 0))
    return { items: kept.slice(offset, offset + LIMIT), pagination: { limit: LIMIT, offset, total: kept.length }, scanned: all.items.length, more: all.pagination.total > SCAN }
  }, [api, status, payment, min, max, offset])

  const set = (setter) => (e) => {
    setter(e.currentTarget.value)
    setOffset(0)
  }
  return html`<header class="page-head"><h1>Invoices</h1></header>
    <section class="card">
      <form class="controls" onSubmit=${(e) => e.preventDefault()}>
        <label>Status <select name="invoice_status" value=${status} onChange=${set(setStatus)}><option value="">any</option>${STATUSES.map((s) => html`<option>${s}</option>`)}</select></label>
        <label>Payment <select name="payment_status" value=${payment} onChange=${set(setPayment)}><option value="">any</option>${PAYMENTS.map((s) => html`<option>${s}</option>`)}</select></label>
        <label>Total at least <input name="min" inputmode="decimal" value=${min} onChange=${set(setMin)} placeholder="0" /></label>
        <label>Total at most <input name="max" inputmode="decimal" value=${max} onChange=${set(setMax)} placeholder="any" /></label>
      </form>
      <${ErrorBox} error=${amountError} title="Amount filter" />
      ${byAmount && list.data && html`<p class="muted small">Amount filter applied in the console over the newest ${list.data.scanned} invoices${list.data.more ? ' (older ones are not searched)' : ''}.</p>`}
      <${ErrorBox} error=${list.error} />
      ${!list.data && !list.error && html`<${Loading} />`}
      ${list.data?.items.length === 0 &&
      (status || payment || byAmount
        ? html`<${Empty}>No invoice matches these filters.<//>`
        : html`<${Empty} curl=${`curl -s -X POST ${location.origin}/v1/jobs/billing-run/run -H "x-api-key: $ADMIN_KEY"`}>No invoices yet. Subscriptions are invoiced by the billing run at each period's end; run it now with:<//>`)}
      ${list.data?.items.length > 0 && html`<${InvoiceTable} items=${list.data.items} />`}
      <${Pager} pagination=${list.data?.pagination} onOffset=${setOffset} />
    </section>`
}
