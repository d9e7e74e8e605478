// The console's root: sign-in, the session (roles, environment), switching environments, and the
// page for the current hash route.
import { html, render, useEffect, useState } from './lib/html.js'
import { apiClient } from './lib/api.js'
import { forget, loadStore, mintFor, probe, saveStore } from './lib/session.js'
import { Session } from './lib/session-context.js'
import { useRoute } from './lib/route.js'
import { Layout } from './components/layout.js'
import { ErrorBox, Loading, WriteButton } from './components/ui.js'
import { SignIn } from './pages/signin.js'
import { UsagePage } from './pages/usage.js'
import { CustomersPage } from './pages/customers.js'
import { CustomerPage } from './pages/customer.js'
import { InvoicesPage } from './pages/invoices.js'
import { InvoicePage } from './pages/invoice.js'
import { CatalogPage } from './pages/catalog.js'
import { WebhooksPage } from './pages/webhooks.js'
import { PricingPage } from './pages/pricing.js'
import { TestClocksPage } from './pages/test-clocks.js'

function Page({ route }) {
  const [section, id] = route.parts
  // Keyed by id: another record's page starts empty instead of showing the last one's data while loading.
  if (section === 'customers') return id ? html`<${CustomerPage} key=${id} id=${id} />` : html`<${CustomersPage} />`
  if (section === 'invoices') return id ? html`<${InvoicePage} key=${id} id=${id} />` : html`<${InvoicesPage} />`
  if (section === 'catalog') return html`<${CatalogPage} tab=${id} />`
  if (section === 'webhooks') return html`<${WebhooksPage} />`
  if (section === 'test-clocks') return html`<${TestClocksPage} />`
  if (section === 'pricing') return html`<${PricingPage} key=${id ?? 'new'} id=${id} />`
  return html`<${UsagePage} />`
}

/** Asked when switching to an environment this tab has no key for: paste one, or (admin) mint one. */
function SwitchEnvironment({ environment, session, onKey, onCancel }) {
  const [error, setError] = useState()
  const mint = async () => onKey(await mintFor(session, environment))
  return html`<${Session.Provider} value=${session}>
    <div class="switch">
      <${SignIn} onKey=${onKey} error=${error} note=${`This tab has no key for ${environment.name ?? environment.type} yet. Keys are bound to one environment: paste one for it.`} />
      <div class="card switch-actions">
        ${session.isAdmin &&
        html`<p>Or let this admin key create one for the tab (an ${session.roles.join(', ')} key for ${environment.name ?? environment.type}, expiring in 12 hours):</p>
          <${WriteButton} needs="admin" kind="primary" onClick=${() => mint().catch((err) => setError(err))}>Create a key for ${environment.name ?? environment.type}<//>`}
        <button type="button" onClick=${onCancel}>Stay in this environment</button>
      </div>
    </div>
  <//>`
}

function App() {
  const route = useRoute()
  const [store, setStore] = useState(loadStore)
  const [session, setSession] = useState(null)
  const [state, setState] = useState(store.current ? 'loading' : 'signin')
  const [error, setError] = useState()
  const [switching, setSwitching] = useState(null)

  const use = async (key) => {
    const s = await probe(key)
    const envId = s.environmentId ?? 'unknown'
    const next = { current: envId, keys: { ...store.keys, [envId]: key } }
    saveStore(next)
    setStore(next)
    setSession({ ...s, api: apiClient(key) })
    setSwitching(null)
    setState('ready')
  }

  useEffect(() => {
    const key = store.current && store.keys[store.current]
    if (!key) return
    use(key).catch((err) => {
      setError(err)
      setState('signin')
    })
  }, [])

  const signOut = () => {
    forget()
    setStore({ current: null, keys: {} })
    setSession(null)
    setError(undefined)
    setState('signin')
  }

  const onEnvironment = (id) => {
    if (!id || id === session.environmentId) return
    if (store.keys[id]) use(store.keys[id]).catch(setError)
    else setSwitching(session.environments.find((e) => e.id === id))
  }

  if (state === 'loading') return html`<${Loading} what="Checking the key" />`
  if (state === 'signin' || !session) return html`<${SignIn} onKey=${use} error=${error} />`
  if (switching) return html`<${SwitchEnvironment} environment=${switching} session=${session} onKey=${use} onCancel=${() => setSwitching(null)} />`
  return html`<${Session.Provider} value=${session}>
    <${Layout} section=${route.parts[0] ?? 'usage'} onEnvironment=${onEnvironment} onSignOut=${signOut}>
      <${ErrorBox} error=${error} />
      <${Page} key=${session.key} route=${route} />
    <//>
  <//>`
}

// The static "Loading the console…" line is replaced, not kept above the app.
const root = document.getElementById('app')
root.textContent = ''
render(html`<${App} />`, root)
