// The frame around every page: navigation, the environment switcher and who is signed in.
import { html } from '../lib/html.js'
import { useSession } from '../lib/session-context.js'
import { href } from '../lib/route.js'

const NAV = [
  ['usage', 'Usage'],
  ['customers', 'Customers'],
  ['invoices', 'Invoices'],
  ['catalog', 'Catalog'],
  ['pricing', 'Pricing'],
  ['webhooks', 'Webhooks'],
  ['test-clocks', 'Test clocks'],
]

export function Layout({ section, onEnvironment, onSignOut, children }) {
  const s = useSession()
  const current = s.environments.find((e) => e.id === s.environmentId)
  // Test clocks exist outside production only.
  const nav = NAV.filter(([id]) => id !== 'test-clocks' || current?.type !== 'production')
  return html`<div class="frame">
    <aside class="side">
      <a class="brand" href="#/usage"><span class="logo" aria-hidden="true"></span> meterbill</a>
      <nav>${nav.map(([id, label]) => html`<a href=${href([id])} class=${section === id ? 'on' : ''} aria-current=${section === id ? 'page' : undefined}>${label}</a>`)}</nav>
      <div class="who">
        <label>Environment
          <select name="environment" value=${s.environmentId ?? ''} onChange=${(e) => onEnvironment(e.currentTarget.value)}>
            ${!current && html`<option value="">this key's environment</option>`}
            ${s.environments.map((e) => html`<option value=${e.id}>${e.name ?? e.type}${e.type && e.name !== e.type ? ` (${e.type})` : ''}</option>`)}
          </select>
        </label>
        <p class="role">key: <b data-role=${s.roles.join(',')}>${s.roles.join(', ')}</b>${!s.canWrite && html`<br /><small>read-only: changes are disabled</small>`}</p>
        <button type="button" class="link" onClick=${onSignOut}>Sign out</button>
      </div>
    </aside>
    <main class="content">${children}</main>
  </div>`
}
