// QuickBooks Online accounting sync over HTTP on the real engines, against a local stand-in for
// QuickBooks' v3 API and Intuit's token endpoint (test/fake-quickbooks.ts): the connection's secrets,
// finalized invoices, payments and credit notes pushed once by the invoice-sync job, customers and items
// matched or made on first use, the rotating refresh token kept, outages retried with backoff and
// shown on the invoice, and pushes cut off after QuickBooks accepted them never made twice.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../core/clock.ts'
import { D } from '../../core/money.ts'
import { customer } from '../../test/catalog.ts'
import { startFakeQuickbooks, type FakeQuickbooks } from '../../test/fake-quickbooks.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { call } from '../../test/wallets.ts'

const clock = fixedClock('2024-05-10T12:00:00Z')
const MINUTE = 60_000
let h: Harness
let qbo: FakeQuickbooks
let connectionId: string

const secrets = () => ({ client_id: qbo.clientId, client_secret: qbo.clientSecret, refresh_token: qbo.refreshToken, realm_id: qbo.realm, token_url: qbo.tokenUrl })

beforeAll(async () => {
  h = await startHarness({ clock })
  qbo = await startFakeQuickbooks()
})
afterAll(async () => {
  await qbo?.stop()
  await h?.stop()
})

const runSync = async () => (await call(h, 'POST', '/v1/jobs/invoice-sync/run')).summary.accounting
const accountingOf = async (invoiceId: string) => (await call(h, 'GET', `/v1/invoices/${invoiceId}/sync`)).accounting
const statusOf = async (invoiceId: string) => (await accountingOf(invoiceId)).map((r: any) => [r.entity_type, r.sync_status, r.attempts])
const all = (entity: string) => [...qbo.entities[entity].values()]
const ofOurs = (entity: string, id: string) => all(entity).filter((e) => String(e.PrivateNote).startsWith(`meterbill ${id}`))

/** A finalized one-off USD invoice with these lines (no tax, no discount). */
async function finalized(customerId: string, amounts: string[], lineName = 'Line') {
  const total = amounts.reduce((a, b) => a.plus(b), new D(0)).toFixed(2)
  const body = { customer_id: customerId, currency: 'USD', subtotal: total, total, amount_due: total, line_items: amounts.map((amount, i) => ({ display_name: `${lineName} ${i + 1}`, amount, quantity: '1' })) }
  const inv = await call(h, 'POST', '/v1/invoices', body, 201)
  await call(h, 'POST', `/v1/invoices/${inv.id}/finalize`)
  return call(h, 'GET', `/v1/invoices/${inv.id}`)
}

async function creditNote(invoice: any, lineIndex: number, amount: string) {
  const note = await call(h, 'POST', '/v1/creditnotes', { invoice_id: invoice.id, reason: 'BILLING_ERROR', line_items: [{ invoice_line_item_id: invoice.line_items[lineIndex].id, amount }] }, 201)
  return call(h, 'POST', `/v1/creditnotes/${note.id}/finalize`)
}

describe('a QuickBooks connection', () => {
  it('needs every secret: a missing one is a 400 naming it, and nothing is written', async () => {
    const before = (await call(h, 'GET', '/v1/connections')).pagination.total
    const { refresh_token: _left, ...partial } = secrets()
    const res = await h.http('POST', '/v1/connections', { body: { name: 'QuickBooks', provider_type: 'quickbooks', encrypted_secret_data: { quickbooks: partial } } })
    expect([res.status, res.body.code, res.body.details]).toEqual([400, 'validation_error', { 'encrypted_secret_data.quickbooks.refresh_token': 'is required for a quickbooks connection' }])
    const unknown = await h.http('POST', '/v1/connections', { body: { name: 'QuickBooks', provider_type: 'quickbooks', encrypted_secret_data: { quickbooks: { ...secrets(), access_token: 'x' } } } })
    expect(unknown.status).toBe(400)
    expect((await call(h, 'GET', '/v1/connections')).pagination.total).toBe(before)
  })

  it('is made with its secrets never returned; the integration-secret calls see it', async () => {
    const made = await call(h, 'POST', '/v1/connections', { name: 'QuickBooks', provider_type: 'quickbooks', encrypted_secret_data: { quickbooks: secrets() }, api_base_url: qbo.url }, 201)
    connectionId = made.id
    expect([made.provider_type, made.webhook_url, made.encrypted_secret_data]).toEqual(['quickbooks', `/v1/webhooks/quickbooks/${made.tenant_id}/${made.environment_id}`, undefined])
    expect(JSON.stringify(await call(h, 'GET', `/v1/connections/${made.id}`))).not.toContain(qbo.clientSecret)
    // Without the app's verifier token its notifications cannot be checked: refused (quickbooks-inbound.test.ts takes them).
    const unsigned = await h.http('POST', `/v1/webhooks/quickbooks/${made.tenant_id}/${made.environment_id}`, { key: null, raw: '{}' })
    expect([unsigned.status, unsigned.body.details]).toEqual([401, { reason: 'no verifier token' }])
    expect(await call(h, 'GET', '/v1/secrets/integrations/by-provider/quickbooks')).toMatchObject({ id: made.id, provider: 'quickbooks', type: 'integration' })
    expect((await call(h, 'GET', '/v1/secrets/integrations/linked')).providers).toEqual(['quickbooks'])
    const foreign = await h.http('POST', '/v1/secrets/integrations/create/quickbooks', { body: { name: 'QuickBooks', credentials: { secret_key: 'sk_test_x' } } })
    expect([foreign.status, foreign.body.details]).toEqual([400, { 'encrypted_secret_data.quickbooks.secret_key': expect.stringContaining('is not a quickbooks secret') }])
    clock.advance(1000)
  })
})

describe('the sync job', () => {
  it('pushes an invoice, its payment and its credit note once, with customer and items made on first use', async () => {
    const cust = await customer(h, { name: "O'Brien: Widgets", email: 'ap@obrien.test' })
    const inv = await finalized(cust.id, ['100.00', '20.50'])
    await call(h, 'PUT', `/v1/invoices/${inv.id}/payment`, { payment_status: 'PENDING', amount: '50.00' })
    const note = await creditNote(inv, 1, '10.25')
    const firstRefresh = qbo.refreshToken

    expect(await runSync()).toEqual({ queued: 3, attempted: 3, synced: 3, retrying: 0, failed: 0, skipped: 0, waiting: 0 })
    const [qboCustomer] = all('Customer').filter((c) => c.Notes === `meterbill ${cust.id}`)
    expect([qboCustomer.DisplayName, qboCustomer.PrimaryEmailAddr]).toEqual(["O'Brien- Widgets", { Address: 'ap@obrien.test' }])
    expect(all('Item').map((i) => [i.Name, i.Type, i.IncomeAccountRef.value])).toEqual([
      ['Line 1', 'Service', '1'],
      ['Line 2', 'Service', '1'],
    ])
    // The invoice asks 120.50 (the note's 10.25 is a Credit Memo, not a discount); 50.00 paid leaves 70.50.
    const [qboInvoice] = ofOurs('Invoice', inv.id)
    expect([qboInvoice.CustomerRef.value, qboInvoice.DocNumber, qboInvoice.TxnDate, qboInvoice.TotalAmt, qboInvoice.Balance]).toEqual([qboCustomer.Id, inv.invoice_number, '2024-05-10', 120.5, 70.5])
    expect(qboInvoice.Line.map((l: any) => [l.Description, l.Amount])).toEqual([
      ['Line 1', 100],
      ['Line 2', 20.5],
    ])
    const payments = all('Payment').filter((p) => p.Line[0].LinkedTxn[0].TxnId === qboInvoice.Id)
    expect(payments.map((p) => [p.TotalAmt, p.CustomerRef.value])).toEqual([[50, qboCustomer.Id]])
    const memos = ofOurs('CreditMemo', note.id)
    expect(memos.map((m) => [m.TotalAmt, m.DocNumber, m.Line[0].SalesItemLineDetail.ItemRef.value])).toEqual([[10.25, note.credit_note_number, all('Item')[1].Id]])

    const view = await accountingOf(inv.id)
    expect(view.map((r: any) => [r.entity_type, r.sync_status, r.attempts, r.external_id, r.last_error])).toEqual([
      ['invoice', 'SYNCED', 1, qboInvoice.Id, null],
      ...[
        ['credit_note', 'SYNCED', 1, memos[0].Id, null],
        ['payment', 'SYNCED', 1, payments[0].Id, null],
      ].sort((a, b) => (view.findIndex((r: any) => r.entity_type === a[0]) < view.findIndex((r: any) => r.entity_type === b[0]) ? -1 : 1)),
    ])
    // The customer is mapped; the rotated refresh token was kept (the fake takes only the latest).
    expect((await call(h, 'GET', `/v1/customers/${cust.id}`)).integrations.map((m: any) => [m.provider_type, m.provider_entity_id])).toEqual([['quickbooks', qboCustomer.Id]])
    expect(qbo.refreshToken).not.toBe(firstRefresh)

    // A later payment of the rest goes alone; nothing else is pushed again.
    clock.advance(MINUTE)
    const creates = qbo.creates.length
    await call(h, 'PUT', `/v1/invoices/${inv.id}/payment`, { payment_status: 'SUCCEEDED', amount: '60.25' })
    expect(await runSync()).toEqual({ queued: 1, attempted: 1, synced: 1, retrying: 0, failed: 0, skipped: 0, waiting: 0 })
    expect(qbo.creates.slice(creates).map((c) => c.entity)).toEqual(['Payment'])
    expect(ofOurs('Invoice', inv.id)[0].Balance).toBe(10.25)
    expect(await runSync()).toMatchObject({ queued: 0, attempted: 0 })
  })

  it('matches an existing QuickBooks customer and item by name', async () => {
    const existing = { Id: '9001', DisplayName: 'Globex Corporation' }
    qbo.entities.Customer.set(existing.Id, existing)
    const cust = await customer(h, { name: 'Globex Corporation' })
    const inv = await finalized(cust.id, ['5.00'])
    clock.advance(MINUTE)
    const items = all('Item').length
    expect(await runSync()).toMatchObject({ synced: 1, failed: 0 })
    expect(ofOurs('Invoice', inv.id)[0].CustomerRef.value).toBe('9001')
    expect(all('Customer').filter((c) => c.DisplayName === 'Globex Corporation')).toHaveLength(1)
    expect(all('Item')).toHaveLength(items)
  })

  it('retries an outage with growing waits, shows the error on the invoice, and gives up after 10 attempts until asked again', async () => {
    const cust = await customer(h, { name: 'Initech' })
    const inv = await finalized(cust.id, ['12.34'])
    clock.advance(MINUTE)
    qbo.down = true
    expect(await runSync()).toMatchObject({ attempted: 1, retrying: 1 })
    let [row] = await accountingOf(inv.id)
    expect([row.sync_status, row.attempts, row.last_error, new Date(row.next_attempt_at).getTime() - clock.now().getTime()]).toEqual(['PENDING', 1, expect.stringContaining('503'), MINUTE])
    clock.advance(MINUTE)
    await runSync()
    ;[row] = await accountingOf(inv.id)
    expect([row.attempts, new Date(row.next_attempt_at).getTime() - clock.now().getTime()]).toEqual([2, 2 * MINUTE])
    for (let i = 3; i <= 10; i++) {
      clock.set(new Date(row.next_attempt_at))
      await runSync()
      ;[row] = await accountingOf(inv.id)
    }
    expect([row.sync_status, row.attempts]).toEqual(['FAILED', 10])
    qbo.down = false
    clock.advance(61 * MINUTE)
    expect(await runSync()).toMatchObject({ attempted: 0 })
    expect((await call(h, 'POST', `/v1/invoices/${inv.id}/sync`)).accounting[0]).toMatchObject({ sync_status: 'PENDING', attempts: 0 })
    expect(await runSync()).toMatchObject({ synced: 1 })
    expect(ofOurs('Invoice', inv.id)).toHaveLength(1)
  })

  it('a payment waits for its invoice, spending no attempt', async () => {
    const cust = await customer(h, { name: 'Umbrella' })
    const inv = await finalized(cust.id, ['30.00'])
    await call(h, 'PUT', `/v1/invoices/${inv.id}/payment`, { payment_status: 'SUCCEEDED', amount: '30.00' })
    clock.advance(MINUTE)
    qbo.failOn = 'invoice'
    expect(await runSync()).toMatchObject({ queued: 2, retrying: 1, waiting: 1 })
    expect(await statusOf(inv.id)).toEqual([
      ['invoice', 'PENDING', 1],
      ['payment', 'PENDING', 0],
    ])
    expect((await accountingOf(inv.id))[1].last_error).toBe("waiting for its invoice's push")
    qbo.failOn = undefined
    clock.advance(MINUTE)
    expect(await runSync()).toMatchObject({ synced: 2 })
    expect(ofOurs('Invoice', inv.id)[0].Balance).toBe(0)
  })
})

describe('a push QuickBooks refused', () => {
  it('is refused again while unchanged (QuickBooks replays the answer of a requestid), and goes through once its cause is fixed', async () => {
    await call(h, 'PUT', `/v1/connections/${connectionId}`, { metadata: { income_account_id: '999' } })
    const cust = await customer(h, { name: 'Soylent' })
    const inv = await finalized(cust.id, ['8.00'], 'Gizmo')
    clock.advance(MINUTE)
    expect(await runSync()).toMatchObject({ retrying: 1 })
    clock.advance(MINUTE)
    expect(await runSync()).toMatchObject({ retrying: 1 })
    const [row] = await accountingOf(inv.id)
    expect([row.sync_status, row.attempts, row.last_error]).toEqual(['PENDING', 2, expect.stringContaining('Invalid Reference Id')])
    const refused = qbo.creates.filter((c) => c.entity === 'Item').slice(-2)
    expect(refused[0].requestid).toBe(refused[1].requestid)

    await call(h, 'PUT', `/v1/connections/${connectionId}`, { metadata: { income_account_id: '1' } })
    await call(h, 'POST', `/v1/invoices/${inv.id}/sync`)
    expect(await runSync()).toMatchObject({ synced: 1 })
    expect(all('Item').filter((i) => i.Name === 'Gizmo 1').map((i) => i.IncomeAccountRef.value)).toEqual(['1'])
    expect(ofOurs('Invoice', inv.id)).toHaveLength(1)
    await call(h, 'PUT', `/v1/connections/${connectionId}`, { metadata: {} })
  })
})

describe('a push cut off after QuickBooks accepted it', () => {
  it('is answered with the first record when retried: one invoice, one payment, one credit memo, none lost', async () => {
    const cust = await customer(h, { name: 'Hooli' })
    const inv = await finalized(cust.id, ['40.00', '2.00'], 'Hooli plan')
    await call(h, 'PUT', `/v1/invoices/${inv.id}/payment`, { payment_status: 'PENDING', amount: '15.00' })
    const note = await creditNote(inv, 0, '4.00')
    clock.advance(MINUTE)
    // Each create reaches QuickBooks and is stored there; its answer never reaches us.
    for (const entity of ['customer', 'item', 'invoice', 'payment', 'creditmemo']) qbo.dropAfterAccept.add(entity)
    const synced = async () => (await statusOf(inv.id)).filter(([, s]: any) => s === 'SYNCED').length === 3
    for (let run = 0; run < 8 && !(await synced()); run++) {
      await runSync()
      clock.advance(10 * MINUTE)
    }
    expect(qbo.dropAfterAccept.size).toBe(0)
    expect((await statusOf(inv.id)).map(([type, status]: any) => [type, status]).sort()).toEqual([
      ['credit_note', 'SYNCED'],
      ['invoice', 'SYNCED'],
      ['payment', 'SYNCED'],
    ])
    const [qboInvoice, ...more] = ofOurs('Invoice', inv.id)
    expect(more).toHaveLength(0)
    expect(all('Customer').filter((c) => c.DisplayName === 'Hooli')).toHaveLength(1)
    // 42.00 asked, 15.00 paid: 27.00 left at QuickBooks; the 4.00 note is one Credit Memo.
    expect([qboInvoice.TotalAmt, qboInvoice.Balance]).toEqual([42, 27])
    expect(all('Payment').filter((p) => p.Line[0].LinkedTxn[0].TxnId === qboInvoice.Id).map((p) => p.TotalAmt)).toEqual([15])
    expect(ofOurs('CreditMemo', note.id).map((m) => m.TotalAmt)).toEqual([4])
    const view = await accountingOf(inv.id)
    expect(view.find((r: any) => r.entity_type === 'invoice').external_id).toBe(qboInvoice.Id)
  })
})
