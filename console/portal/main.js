// The customer portal page: one customer's billing, read through its portal session (session.js). Without a
// live session (none given, expired, revoked) it shows a page saying so, and no data: whatever was on screen
// is dropped when the service answers 401.
import { html, render, useEffect, useMemo, useState } from '../app/lib/html.js'
import { useApi } from '../app/lib/use-api.js'
import { when } from '../app/lib/format.js'
import { ErrorBox, Loading } from '../app/components/ui.js'
import { forgetToken, portalClient, takeToken } from './session.js'
import { Usage } from './usage.js'
import { CreditNotes, Invoices, Subscriptions, Wallets } from './billing.js'

function Ended({ reason }) {
  return html`<main class="ended" data-ended>
    <h1>This billing link is no longer valid</h1>
    <p>${reason}</p>
    <p class="muted">Portal links work for one hour. Open the billing page again from your account to get a new one.</p>
  </main>`
}

/** Where a payment provider holds the customer's cards: a button to its page (opened on click: its sessions are short-lived). */
function PaymentMethod({ api }) {
  const where = useApi(() => api.get('/payment-method'), [api])
  const [error, setError] = useState()
  if (!where.data?.provider) return null
  const go = async () => {
    setError(undefined)
    try {
      location.assign((await api.post('/payment-method')).url)
    } catch (err) {
      setError(err)
    }
  }
  return html`<button type="button" data-payment-method onClick=${go}>Update payment method</button><${ErrorBox} error=${error} title="The payment page did not open" />`
}

function Portal({ api, onSignOut }) {
  const data = useApi(async () => {
    const [customer, usage, subscriptions, invoices, creditNotes, wallets] = await Promise.all([
      api.get('/info'),
      api.get('/usage'),
      api.post('/subscriptions', { limit: 20 }),
      api.post('/invoices', { limit: 50 }),
      api.post('/creditnotes', { limit: 50 }),
      api.post('/wallets'),
    ])
    return { customer, usage, subscriptions, invoices, creditNotes, wallets }
  }, [api])
  // The chart's daily series come after the rest: the page is readable before they are.
  const history = useApi(() => api.get('/usage/history'), [api])

  if (data.error) return html`<main class="portal"><${ErrorBox} error=${data.error} title="Your billing could not be loaded" /></main>`
  if (!data.data) return html`<${Loading} what="Loading your billing" />`
  const { customer, usage, subscriptions, invoices, creditNotes, wallets } = data.data
  return html`<main class="portal">
    <header class="portal-head">
      <div>
        <h1 data-customer-name>${customer.name || customer.external_id}</h1>
        <p class="muted">${customer.email ?? ''}</p>
      </div>
      <div class="actions"><${PaymentMethod} api=${api} /><button type="button" onClick=${onSignOut}>Sign out</button></div>
    </header>
    <${Usage} usage=${usage} history=${history.data} />
    <${ErrorBox} error=${history.error} title="The usage chart could not be loaded" />
    <${Subscriptions} items=${subscriptions.items} />
    <${Invoices} api=${api} items=${invoices.items} />
    <${CreditNotes} api=${api} items=${creditNotes.items} />
    <${Wallets} api=${api} items=${wallets} />
    <p class="muted small">Read-only view of your account · updated ${when(new Date().toISOString())}</p>
  </main>`
}

function App() {
  const [token] = useState(takeToken)
  const [ended, setEnded] = useState(token ? undefined : 'No billing session was given: this page opens from a link.')
  const api = useMemo(() => token && portalClient(token, (reason) => setEnded(reason || 'This link has expired or was revoked.')), [token])
  useEffect(() => {
    if (ended) forgetToken()
  }, [ended])
  if (ended) return html`<${Ended} reason=${ended} />`
  const signOut = async () => {
    await api.del('/session').catch(() => {})
    setEnded('You signed out.')
  }
  return html`<${Portal} api=${api} onSignOut=${signOut} />`
}

render(html`<${App} />`, document.getElementById('app'))
