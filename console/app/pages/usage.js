// Usage: the chart for any meter, feature or event name, for the environment or one customer.
import { html } from '../lib/html.js'
import { UsagePanel } from '../components/usage-panel.js'

export function UsagePage() {
  return html`<header class="page-head"><h1>Usage</h1><p class="muted">What was counted, per window. Values are exact decimals from the API; the chart plots them.</p></header>
    <section class="card"><${UsagePanel} /></section>`
}
