// Wallets through HTTP on a simulated calendar: hand-computed ledgers for the consumption order, expiry at
// the boundary, racing debits, alert crossings, auto top-up, termination and bad input.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../../core/clock.ts'
import { customer, eventsOf } from '../../../test/catalog.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { call, ledger as ledgerOf, newWallet as walletFor, runNamedJob, topUp as topUpOf } from '../../../test/wallets.ts'

const clock = fixedClock('2024-12-10T00:00:00Z')
let h: Harness

beforeAll(async () => {
  h = await startHarness({ clock })
})
afterAll(() => h?.stop())

const ok = (method: string, path: string, body?: unknown, status?: number) => call(h, method, path, body, status)
const newWallet = async (body: Record<string, unknown> = {}) => walletFor(h, (await customer(h)).id, body)
const topUp = (id: string, body: Record<string, unknown>) => topUpOf(h, id, body)
const wallet = (id: string) => ok('GET', `/v1/wallets/${id}`)
const ledger = (id: string, query = '') => ledgerOf(h, id, query)
const expiryJob = () => runNamedJob(h, 'wallet-credit-expiry')

describe('the consumption order, on the worked example of docs/credits.md', () => {
  let w: any
  const ids: Record<string, string> = {}
  const add = async (name: string, on: string, body: Record<string, unknown>) => {
    clock.set(on)
    ids[name] = (await topUp(w.id, body)).wallet_transaction.id
  }

  it('builds the ledger over a month', async () => {
    w = await newWallet()
    await add('G', '2024-12-10T00:00:00Z', { credits_to_add: '15', priority: 0, expiry_date_utc: '2025-01-10T00:00:00Z' })
    await add('A', '2025-01-01T00:00:00Z', { credits_to_add: '30', priority: 2, expiry_date_utc: '2025-03-01T00:00:00Z' })
    await add('D', '2025-01-02T00:00:00Z', { credits_to_add: '40', expiry_date_utc: '2025-01-20T00:00:00Z' })
    await add('E', '2025-01-03T00:00:00Z', { credits_to_add: '10', priority: 2, expiry_date_utc: '2025-03-01T00:00:00Z' })
    await add('B', '2025-01-05T00:00:00Z', { credits_to_add: '20', priority: 1, transaction_reason: 'PURCHASED_CREDIT_DIRECT' })
    await add('C', '2025-01-10T00:00:00Z', { credits_to_add: '50', priority: 1, expiry_date_utc: '2025-02-01T00:00:00Z', transaction_reason: 'PURCHASED_CREDIT_DIRECT' })
    clock.set('2025-01-15T00:00:00Z')
    // G expired on Jan 10: it leaves the balance before the expiry job has run.
    expect(await wallet(w.id)).toMatchObject({ credit_balance: '150', balance: '150.00', credits_available_breakdown: { free: '80', purchased: '70' } })
  })

  it('takes a debit of 75 from C, then B, then A', async () => {
    const { wallet_transaction: debit, wallet: after } = await ok('POST', `/v1/wallets/${w.id}/debit`, { credits: '75' })
    expect(debit).toMatchObject({ type: 'debit', transaction_reason: 'MANUAL_DEBIT', credit_amount: '75', amount: '75' })
    expect(debit.consumption_breakdown).toEqual([
      { credit_id: ids.C, credits: '50' },
      { credit_id: ids.B, credits: '20' },
      { credit_id: ids.A, credits: '5' },
    ])
    expect(after).toMatchObject({ credit_balance: '75', credits_available_breakdown: { free: '75', purchased: '0' } })
    const left = Object.fromEntries((await ledger(w.id, '&type=credit')).map((t: any) => [t.id, t.credits_available]))
    expect([left[ids.A], left[ids.B], left[ids.C], left[ids.D], left[ids.E], left[ids.G]]).toEqual(['25', '0', '0', '40', '10', '15'])
  })

  it('refuses a debit the open credits cannot cover, naming what is there, and writes nothing', async () => {
    const before = (await ledger(w.id)).length
    const res = await h.http('POST', `/v1/wallets/${w.id}/debit`, { body: { credits: '75.01' } })
    expect(res.status).toBe(400)
    expect(res.body).toMatchObject({ code: 'invalid_operation', details: { requested: '75.01', available: '75' } })
    expect((await ledger(w.id)).length).toBe(before)
  })

  it('keeps a credit usable until the instant before its expiry, and the job removes it at that instant', async () => {
    clock.set('2025-01-19T23:59:59.999Z')
    expect((await wallet(w.id)).credit_balance).toBe('75')
    expect((await expiryJob()).expired).toBe(1) // only G, expired since Jan 10
    clock.set('2025-01-20T00:00:00Z')
    expect((await wallet(w.id)).credit_balance).toBe('35')
    expect(await expiryJob()).toMatchObject({ expired: 1 })
    expect(await expiryJob()).toMatchObject({ expired: 0 })
    const expiries = await ledger(w.id, '&transaction_reason=CREDIT_EXPIRED')
    expect(expiries.map((t: any) => [t.reference_id, t.credit_amount])).toEqual([
      [ids.G, '15'],
      [ids.D, '40'],
    ])
    expect(await wallet(w.id)).toMatchObject({ credit_balance: '35', credits_available_breakdown: { free: '35', purchased: '0' } })
  })
})

describe('top-ups', () => {
  it('buys credits for an amount at the topup_conversion_rate and shows the balance through conversion_rate', async () => {
    const w = await newWallet({ conversion_rate: '0.5', topup_conversion_rate: '2' })
    const { wallet_transaction: t, wallet: after } = await topUp(w.id, { amount: '10', transaction_reason: 'PURCHASED_CREDIT_DIRECT' })
    expect(t).toMatchObject({ credit_amount: '5', amount: '10', topup_conversion_rate: '2', transaction_status: 'completed' })
    expect(after).toMatchObject({ credit_balance: '5', balance: '2.50' })
  })

  it('answers a replayed idempotency_key with the first top-up and adds the credits once', async () => {
    const w = await newWallet()
    const first = await topUp(w.id, { credits_to_add: '12', idempotency_key: 'order-1' })
    const again = await topUp(w.id, { credits_to_add: '12', idempotency_key: 'order-1' })
    expect(again.wallet_transaction.id).toBe(first.wallet_transaction.id)
    expect((await wallet(w.id)).credit_balance).toBe('12')
  })

  it.each([
    ['credits as a number', { credits_to_add: 5 }, 'credits_to_add'],
    ['zero credits', { credits_to_add: '0' }, 'credits_to_add'],
    ['both credits and amount', { credits_to_add: '1', amount: '1' }, 'credits_to_add'],
    ['an unknown reason', { credits_to_add: '1', transaction_reason: 'GIFT' }, 'transaction_reason'],
    ['an expiry in the past', { credits_to_add: '1', expiry_date_utc: '2020-01-01T00:00:00Z' }, 'expiry_date_utc'],
    ['a negative priority', { credits_to_add: '1', priority: -1 }, 'priority'],
  ])('refuses %s, naming the field, and writes nothing', async (_, body, field) => {
    const w = await newWallet()
    const res = await h.http('POST', `/v1/wallets/${w.id}/top-up`, { body: { transaction_reason: 'FREE_CREDIT_GRANT', ...body } })
    expect(res.status).toBe(400)
    expect(res.body.details).toHaveProperty(field)
    expect(await ledger(w.id)).toEqual([])
  })
})

describe('wallets', () => {
  it('creates a wallet with initial credits, lists it under its customer and announces both', async () => {
    const c = await customer(h)
    const w = await ok('POST', '/v1/wallets', { customer_id: c.id, currency: 'usd', initial_credits_to_load: '25' }) // 200, as Flexprice documents
    expect(w).toMatchObject({ currency: 'USD', wallet_status: 'active', wallet_type: 'PRE_PAID', credit_balance: '25', balance: '25.00', conversion_rate: '1', alert_state: 'ok', config: { allowed_price_types: ['ALL'] } })
    const listed = await ok('GET', `/v1/customers/${c.id}/wallets`) // a plain array, as Flexprice answers
    expect(listed.map((x: any) => [x.id, x.credit_balance])).toEqual([[w.id, '25']])
    expect((await ok('GET', `/v1/wallets?customer_id=${c.id}`)).items.map((x: any) => x.id)).toEqual([w.id])
    expect(await eventsOf(h, w.id)).toEqual(['wallet.created'])
    const [t] = await ledger(w.id)
    expect(await eventsOf(h, t.id)).toEqual(['wallet.transaction.created'])
  })

  it('refuses a second active wallet in the same currency, and one for a customer that does not exist', async () => {
    const c = await customer(h)
    await ok('POST', '/v1/wallets', { customer_id: c.id, currency: 'USD' })
    const again = await h.http('POST', '/v1/wallets', { body: { customer_id: c.id, currency: 'USD' } })
    expect(again.status).toBe(409)
    expect(again.body.details).toHaveProperty('currency')
    const missing = await h.http('POST', '/v1/wallets', { body: { customer_id: 'cus_nope', currency: 'USD' } })
    expect(missing.status).toBe(404)
    expect(missing.body.details).toHaveProperty('customer_id')
  })

  it("hides another tenant's wallet", async () => {
    const w = await newWallet()
    const other = await h.newTenant()
    expect((await h.http('GET', `/v1/wallets/${w.id}`, { key: other.apiKey })).status).toBe(404)
    expect((await h.http('POST', `/v1/wallets/${w.id}/debit`, { key: other.apiKey, body: { credits: '1' } })).status).toBe(404)
  })

  it('terminates a wallet: the rest is debited, it is closed and takes no more credits', async () => {
    const w = await newWallet({ initial_credits_to_load: '40' })
    const closed = await ok('POST', `/v1/wallets/${w.id}/terminate`)
    expect(closed).toMatchObject({ wallet_status: 'closed', credit_balance: '0' })
    expect((await ledger(w.id)).map((t: any) => [t.transaction_reason, t.credit_amount])).toEqual([
      ['FREE_CREDIT_GRANT', '40'],
      ['WALLET_TERMINATION', '40'],
    ])
    const res = await h.http('POST', `/v1/wallets/${w.id}/top-up`, { body: { transaction_reason: 'FREE_CREDIT_GRANT', credits_to_add: '1' } })
    expect(res.status).toBe(400)
    expect(await eventsOf(h, w.id)).toEqual(['wallet.created', 'wallet.terminated'])
  })
})

describe('two debits racing for the last credits', () => {
  it('lets exactly one of two 7-credit debits through a 10-credit wallet, and records it', async () => {
    const w = await newWallet({ initial_credits_to_load: '10' })
    const results = await Promise.all([1, 2].map(() => h.http('POST', `/v1/wallets/${w.id}/debit`, { body: { credits: '7' } })))
    expect(results.map((r) => r.status).sort()).toEqual([200, 400])
    expect((await wallet(w.id)).credit_balance).toBe('3')
    expect(await ledger(w.id, '&type=debit')).toHaveLength(1)
  })

  it('loses neither of two debits that fit together', async () => {
    const w = await newWallet({ initial_credits_to_load: '10' })
    const results = await Promise.all(['4', '6'].map((credits) => h.http('POST', `/v1/wallets/${w.id}/debit`, { body: { credits } })))
    expect(results.map((r) => r.status)).toEqual([200, 200])
    expect((await wallet(w.id)).credit_balance).toBe('0')
    expect((await ledger(w.id, '&type=debit')).map((t: any) => t.credit_amount).sort()).toEqual(['4', '6'])
  })
})

describe('balance alerts', () => {
  const alertEvents = async (walletId: string) =>
    (await h.running.deps.sql<{ event_type: string; payload: any }[]>`SELECT event_type, payload FROM webhook_events
      WHERE entity_id = ${walletId} AND event_type LIKE 'wallet.credit_balance.%' ORDER BY created_at, id`).map((e) => [e.event_type, e.payload.alert.state, e.payload.alert.credit_balance])

  it('records one event per crossing, down and up, and none while the balance hovers at a threshold', async () => {
    const alert_settings = { alert_enabled: true, warning: { threshold: 50 }, critical: { threshold: 10 } }
    const w = await newWallet({ initial_credits_to_load: '100', alert_settings })
    const debit = (credits: string) => ok('POST', `/v1/wallets/${w.id}/debit`, { credits })
    await debit('60') // 40: below 50
    await debit('30.01') // 9.99: below 10
    await topUp(w.id, { credits_to_add: '0.01' }) // 10: at the threshold, stays in alarm
    await debit('0.01') // 9.99
    await topUp(w.id, { credits_to_add: '0.01' }) // 10
    await topUp(w.id, { credits_to_add: '0.02' }) // 10.02: back above 10
    await topUp(w.id, { credits_to_add: '100' }) // 110.02: back above 50
    expect(await alertEvents(w.id)).toEqual([
      ['wallet.credit_balance.dropped', 'warning', 40],
      ['wallet.credit_balance.dropped', 'in_alarm', 9.99],
      ['wallet.credit_balance.recovered', 'warning', 10.02],
      ['wallet.credit_balance.recovered', 'ok', 110.02],
    ])
    expect((await wallet(w.id)).alert_state).toBe('ok')
  })

  it('sends the recovered payload in exactly the documented shape', async () => {
    const w = await newWallet({ initial_credits_to_load: '5', alert_settings: { alert_enabled: true, critical: { threshold: 10 } } })
    await topUp(w.id, { credits_to_add: '20' })
    const [event] = await h.running.deps.sql<{ payload: any }[]>`SELECT payload FROM webhook_events WHERE entity_id = ${w.id} AND event_type = 'wallet.credit_balance.recovered'`
    const example = await h.http('POST', '/v1/webhook-events/wallet.credit_balance.recovered', { key: null })
    expect(example.status).toBe(200)
    expect(Object.keys(example.body).sort()).toEqual(['alert', 'customer', 'event_type', 'wallet'])
    expect(Object.keys(event.payload).sort()).toEqual(Object.keys(example.body).sort())
    expect(Object.keys(event.payload.alert).sort()).toEqual(['alert_settings', 'alert_type', 'credit_balance', 'current_balance', 'state'])
    expect(Object.keys(event.payload.wallet).sort()).toEqual(Object.keys(example.body.wallet).sort())
    expect(Object.keys(event.payload.customer).sort()).toEqual(Object.keys(example.body.customer).sort())
    expect(event.payload.alert).toMatchObject({ alert_type: 'low_credit_balance', credit_balance: 25, current_balance: 25, state: 'ok' })
  })
})

describe('auto top-up, direct', () => {
  it('tops up when a debit leaves the balance at or below the threshold, once per change', async () => {
    const w = await newWallet({ initial_credits_to_load: '30', auto_topup: { enabled: true, threshold: 20, amount: 50 } })
    await ok('POST', `/v1/wallets/${w.id}/debit`, { credits: '5' }) // 25: above 20
    expect((await wallet(w.id)).credit_balance).toBe('25')
    await ok('POST', `/v1/wallets/${w.id}/debit`, { credits: '5' }) // 20: at the threshold
    expect((await wallet(w.id)).credit_balance).toBe('70')
    const autos = (await ledger(w.id)).filter((t: any) => t.auto_topup)
    expect(autos.map((t: any) => [t.transaction_reason, t.credit_amount])).toEqual([['PURCHASED_CREDIT_DIRECT', '50']])
  })
})
