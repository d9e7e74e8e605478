// Sign in by pasting a key. It is checked against the API (see lib/session.js) and kept in this tab's
// sessionStorage only.
import { html, useState } from '../lib/html.js'
import { ErrorBox } from '../components/ui.js'

export function SignIn({ onKey, error: given, note }) {
  const [key, setKey] = useState('')
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState()
  const submit = async (e) => {
    e.preventDefault()
    setBusy(true)
    setError(undefined)
    try {
      await onKey(key.trim())
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }
  return html`<main class="signin">
    <form class="card" onSubmit=${submit}>
      <h1><span class="logo" aria-hidden="true"></span> meterbill console</h1>
      <p>${note ?? 'Paste an API key. The first start of the service printed an admin key for production.'}</p>
      <label>API key
        <input name="key" type="password" autocomplete="off" spellcheck="false" placeholder="mb_…" value=${key} onInput=${(e) => setKey(e.currentTarget.value)} required />
      </label>
      <button type="submit" class="primary" disabled=${busy || key.trim() === ''}>${busy ? 'Checking…' : 'Sign in'}</button>
      <${ErrorBox} error=${error ?? given} title="This key cannot sign in" />
      <p class="muted small">The key stays in this tab (session storage) and is sent only to this service's API, in the
        <code>x-api-key</code> header. A <b>read</b> key sees everything with every change disabled; an <b>ingest</b> key cannot sign in.</p>
    </form>
  </main>`
}
