// The QuickBooks push killed mid-way: a real worker process (test/accounting-sync-child.ts) runs the
// accounting sync on the database this file set up, and the stand-in QuickBooks kills it with SIGKILL
// right after accepting each kind of create (customer, item, invoice, credit memo, payment), before the
// answer reaches it. Restarted each time, the worker must end with exactly one QuickBooks record per
// record of ours: nothing pushed twice, nothing lost.
import type { ChildProcess } from 'node:child_process'
import { rmSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { D } from '../../core/money.ts'
import { customer } from '../../test/catalog.ts'
import { startFakeQuickbooks, type FakeQuickbooks } from '../../test/fake-quickbooks.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { call } from '../../test/wallets.ts'
import { runWorkerChild } from '../../test/worker-child.ts'

let h: Harness
let qbo: FakeQuickbooks
let child: ChildProcess | undefined

beforeAll(async () => {
  h = await startHarness()
  qbo = await startFakeQuickbooks()
})
afterAll(async () => {
  child?.kill('SIGKILL')
  await qbo?.stop()
  await h?.stop().catch(() => rmSync(h.config.dataDir, { recursive: true, force: true }))
})

type Run = { summary: Record<string, number>; rows: { entity_type: string; sync_status: string; external_id: string }[] }
/** One worker run: its output, or null when it was killed. */
const runWorker = (invoiceId: string) => runWorkerChild<Run>(h, 'test/accounting-sync-child.ts', [invoiceId], (started) => (child = started))

describe('a worker killed after QuickBooks accepted its push', () => {
  it('is restarted into one QuickBooks record per record: none twice, none lost', async () => {
    await call(h, 'POST', '/v1/connections', { name: 'QuickBooks', provider_type: 'quickbooks', api_base_url: qbo.url, encrypted_secret_data: { quickbooks: { client_id: qbo.clientId, client_secret: qbo.clientSecret, refresh_token: qbo.refreshToken, realm_id: qbo.realm, token_url: qbo.tokenUrl } } }, 201)
    const cust = await customer(h, { name: 'Crash Test Dummies' })
    const amounts = ['75.00', '24.99']
    const total = amounts.reduce((a, b) => a.plus(b), new D(0)).toFixed(2)
    const draft = await call(h, 'POST', '/v1/invoices', { customer_id: cust.id, currency: 'USD', subtotal: total, total, amount_due: total, line_items: amounts.map((amount, i) => ({ display_name: `Crash line ${i + 1}`, amount, quantity: '1' })) }, 201)
    await call(h, 'POST', `/v1/invoices/${draft.id}/finalize`)
    const inv = await call(h, 'GET', `/v1/invoices/${draft.id}`)
    await call(h, 'PUT', `/v1/invoices/${inv.id}/payment`, { payment_status: 'PENDING', amount: '60.00' })
    const note = await call(h, 'POST', '/v1/creditnotes', { invoice_id: inv.id, reason: 'SERVICE_ISSUE', line_items: [{ invoice_line_item_id: inv.line_items[1].id, amount: '4.99' }] }, 201)
    await call(h, 'POST', `/v1/creditnotes/${note.id}/finalize`)
    // The workers take the database over: the API's process lets it go.
    await h.running.stop()

    const kills: string[] = []
    for (const entity of ['customer', 'item', 'invoice', 'creditmemo', 'payment']) qbo.dropAfterAccept.add(entity)
    qbo.onDrop = (entity) => {
      kills.push(entity)
      child!.kill('SIGKILL')
    }
    let finished = null
    for (let run = 0; run < 10 && !finished; run++) finished = await runWorker(inv.id)
    expect(kills.sort()).toEqual(['creditmemo', 'customer', 'invoice', 'item', 'payment'])
    expect(finished).not.toBeNull()

    // Invoice, memo and payment were accepted once, then asked again by the restarted worker with the same
    // requestid and answered with the first; the customer and the item were found by name instead.
    const creates = (entity: string) => qbo.creates.filter((c) => c.entity === entity)
    for (const entity of ['Invoice', 'CreditMemo', 'Payment']) {
      expect(creates(entity), entity).toHaveLength(2)
      expect(new Set(creates(entity).map((c) => c.requestid)).size, entity).toBe(1)
    }
    expect([creates('Customer').length, creates('Item').length]).toEqual([1, 2])
    const invoices = [...qbo.entities.Invoice.values()]
    const memos = [...qbo.entities.CreditMemo.values()]
    const payments = [...qbo.entities.Payment.values()]
    expect([qbo.entities.Customer.size, qbo.entities.Item.size, invoices.length, memos.length, payments.length]).toEqual([1, 2, 1, 1, 1])
    // 99.99 invoiced, 60.00 paid: 39.99 open at QuickBooks; the 4.99 note a Credit Memo.
    expect([invoices[0].TotalAmt, invoices[0].Balance, payments[0].TotalAmt, memos[0].TotalAmt]).toEqual([99.99, 39.99, 60, 4.99])
    const rows = (finished ?? (await runWorker(inv.id)))!.rows
    expect(rows.map((r) => [r.entity_type, r.sync_status, r.external_id])).toEqual([
      ['credit_note', 'SYNCED', memos[0].Id],
      ['invoice', 'SYNCED', invoices[0].Id],
      ['payment', 'SYNCED', payments[0].Id],
    ])
    // A run after that finds nothing to push.
    expect((await runWorker(inv.id))!.summary).toMatchObject({ queued: 0, attempted: 0 })
  }, 240_000)
})
