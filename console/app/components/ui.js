// Small building blocks every page uses: the error box (message and the fields it names), empty states,
// the pager, status badges, and write buttons that a read key sees disabled with the reason.
import { html, useState } from '../lib/html.js'
import { useSession } from '../lib/session-context.js'

/** The API's error: its message, its code and status, and each field `details` names. */
export function ErrorBox({ error, title }) {
  if (!error) return null
  const details = Object.entries(error.details ?? {})
  return html`<div class="error" role="alert">
    <strong>${title ?? 'The API refused'}${error.status ? ` (${error.status} ${error.code})` : ''}:</strong> ${error.message}
    ${details.length > 0 &&
    html`<ul class="error-fields">
      ${details.map(([field, why]) => html`<li><code>${field}</code>: ${typeof why === 'string' ? why : JSON.stringify(why)}</li>`)}
    </ul>`}
  </div>`
}

export const Loading = ({ what = 'Loading' }) => html`<p class="muted loading">${what}…</p>`

/** An empty state says what to do next; `curl` is a command to copy. */
export function Empty({ children, curl }) {
  return html`<div class="empty">
    <p>${children}</p>
    ${curl && html`<pre class="curl"><code>${curl}</code></pre>`}
  </div>`
}

export function Pager({ pagination, onOffset }) {
  if (!pagination) return null
  const { limit, offset, total } = pagination
  if (total === 0) return null
  const last = Math.min(offset + limit, total)
  return html`<nav class="pager" aria-label="pages">
    <span>${offset + 1}–${last} of ${total}</span>
    <button type="button" disabled=${offset === 0} onClick=${() => onOffset(Math.max(0, offset - limit))}>‹ Previous</button>
    <button type="button" disabled=${last >= total} onClick=${() => onOffset(offset + limit)}>Next ›</button>
  </nav>`
}

const TONE = {
  active: 'good', published: 'good', delivered: 'good', SUCCEEDED: 'good', FINALIZED: 'good', completed: 'good', OVERPAID: 'good',
  DRAFT: 'neutral', pending: 'warn', PENDING: 'warn', PROCESSING: 'warn', INITIATED: 'warn', trialing: 'warn', incomplete: 'warn',
  failed: 'bad', FAILED: 'bad', VOIDED: 'bad', cancelled: 'bad', REFUNDED: 'bad', PARTIALLY_REFUNDED: 'warn', skipped: 'neutral', SKIPPED: 'neutral',
}
export const Badge = ({ value }) => html`<span class=${`badge ${TONE[value] ?? 'neutral'}`}>${value ?? '—'}</span>`

export const Section = ({ title, actions, children }) => html`<section class="card">
  <header class="card-head"><h2>${title}</h2>${actions && html`<div class="actions">${actions}</div>`}</header>
  ${children}
</section>`

/** Label/value pairs as a definition list. */
export const Facts = ({ items }) => html`<dl class="facts">
  ${items.map(([k, v]) => html`<div><dt>${k}</dt><dd>${v ?? '—'}</dd></div>`)}
</dl>`

/**
 * A button that changes something. With a read key it is disabled and says why; while its action runs
 * it is disabled too; the action's error is shown next to it, never swallowed.
 */
export function WriteButton({ onClick, children, kind = '', confirm, needs = 'write', ...rest }) {
  const session = useSession()
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState()
  const allowed = needs === 'admin' ? session.isAdmin : session.canWrite
  const hint = allowed ? rest.title : `needs a ${needs} key: this key is ${session.roles.join(', ')}`
  const click = async () => {
    if (confirm && !window.confirm(confirm)) return
    setBusy(true)
    setError(undefined)
    try {
      await onClick()
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }
  return html`<span class="write">
    <button type="button" class=${kind} data-write="true" disabled=${!allowed || busy || rest.disabled} title=${hint} onClick=${click}>${children}</button>
    ${!allowed && html`<small class="hint">${hint}</small>`}
    <${ErrorBox} error=${error} />
  </span>`
}

export const Id = ({ value }) => html`<code class="id" title=${value}>${value}</code>`
