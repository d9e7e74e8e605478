// Credit holds through HTTP on a fixed clock: the AI-token example of docs/credits.md (reserve 2,000 tokens
// at $0.01, settle 1,734, release on error), what a hold keeps from the balance, idempotency, repeats,
// overage, expiry, the events, and bad input that changes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../../core/clock.ts'
import { created, customer, eventsOf, plan, subscribed, unique, usagePrice } from '../../../test/catalog.ts'
import { readyMeter } from '../../../test/usage-helpers.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { call, ledger, newWallet, runNamedJob, topUp } from '../../../test/wallets.ts'

const clock = fixedClock('2025-03-10T00:00:00Z')
let h: Harness
let wallet: any
let tokens: any

beforeAll(async () => {
  // Direct mode, and meters counting at once: the calendar is fixed, so a settle delay would never pass.
  h = await startHarness({ clock, env: { KAFKA_BROKERS: '', METER_BACKFILL_SETTLE_SECONDS: '0' } })
  const meterId = await readyMeter(h, { name: 'tokens', event_name: unique('llm.tokens'), aggregation: { type: 'SUM', field: 'tokens' } })
  tokens = await created(h, '/v1/features', { name: 'LLM tokens', type: 'metered', meter_id: meterId })
  const p = await plan(h, { prices: [usagePrice(tokens.meter_id, '0.01')] })
  const c = await customer(h)
  await subscribed(h, { customer_id: c.id, plan_id: p.id, start_date: '2025-03-01T00:00:00Z' })
  wallet = await newWallet(h, c.id)
  await topUp(h, wallet.id, { credits_to_add: '100' })
})
afterAll(() => h?.stop())

const ok = (method: string, path: string, body?: unknown, status?: number) => call(h, method, path, body, status)
const balances = async () => {
  const w = await ok('GET', `/v1/wallets/${wallet.id}`)
  return [w.credit_balance, w.held_balance, w.available_balance]
}
const refused = async (method: string, path: string, body: unknown, status: number, field?: string) => {
  const res = await h.http(method, path, { body })
  expect(res.status, JSON.stringify(res.body)).toBe(status)
  expect(res.body).toMatchObject({ code: expect.any(String), http_status_code: status })
  if (field) expect(JSON.stringify(res.body.details)).toContain(field)
  return res.body
}

describe('the AI-token example', () => {
  let hold: any
  it('reserves 2,000 tokens priced at $0.01: 20 credits held, 80 available', async () => {
    hold = await ok('POST', `/v1/wallets/${wallet.id}/holds`, { feature_id: tokens.id, quantity: '2000', expires_in_seconds: 300, idempotency_key: 'req-1' }, 201)
    expect(hold).toMatchObject({ status: 'active', amount: '20', feature_id: tokens.id, quantity: '2000', expires_at: '2025-03-10T00:05:00.000Z' })
    expect(await balances()).toEqual(['100', '20', '80'])
  })

  it('answers a retry with the same idempotency_key with the same hold', async () => {
    const again = await ok('POST', `/v1/wallets/${wallet.id}/holds`, { feature_id: tokens.id, quantity: '2000', idempotency_key: 'req-1' }, 201)
    expect(again.id).toBe(hold.id)
    expect(await balances()).toEqual(['100', '20', '80'])
  })

  it('settles 1,734 tokens: one debit of 17.34 credits, the other 2.66 freed', async () => {
    const settled = await ok('POST', `/v1/wallets/holds/${hold.id}/settle`, { quantity: '1734' })
    expect(settled).toMatchObject({ status: 'settled', settled_amount: '17.34' })
    const debit = (await ledger(h, wallet.id, '&type=debit')).at(-1)
    expect(debit).toMatchObject({ id: settled.transaction_id, credit_amount: '17.34', reference_type: 'WALLET_HOLD', reference_id: hold.id })
    expect(await balances()).toEqual(['82.66', '0', '82.66'])
    // Settling again (even with another amount) answers the first result and debits nothing more.
    expect(await ok('POST', `/v1/wallets/holds/${hold.id}/settle`, { amount: '1' })).toMatchObject({ status: 'settled', settled_amount: '17.34' })
    expect((await ledger(h, wallet.id, '&type=debit')).length).toBe(1)
    await refused('POST', `/v1/wallets/holds/${hold.id}/release`, undefined, 400)
  })

  it('releases on error: nothing debited, twice answered the same', async () => {
    const other = await ok('POST', `/v1/wallets/${wallet.id}/holds`, { feature_id: tokens.id, quantity: '2000' }, 201)
    expect(await balances()).toEqual(['82.66', '20', '62.66'])
    expect(await ok('POST', `/v1/wallets/holds/${other.id}/release`)).toMatchObject({ status: 'released', settled_amount: null })
    expect(await ok('POST', `/v1/wallets/holds/${other.id}/release`)).toMatchObject({ status: 'released' })
    expect(await balances()).toEqual(['82.66', '0', '82.66'])
    expect(await eventsOf(h, hold.id)).toEqual(['wallet.hold.created', 'wallet.hold.settled'])
    expect(await eventsOf(h, other.id)).toEqual(['wallet.hold.created', 'wallet.hold.released'])
  })
})

describe('what a hold keeps', () => {
  it('refuses a hold, and a manual debit, the available balance cannot cover; nothing changes', async () => {
    const big = await ok('POST', `/v1/wallets/${wallet.id}/holds`, { amount: '80' }, 201)
    const body = await refused('POST', `/v1/wallets/${wallet.id}/holds`, { amount: '2.67' }, 400)
    expect(body.details).toMatchObject({ available_balance: '2.66', held_balance: '80', requested: '2.67' })
    await refused('POST', `/v1/wallets/${wallet.id}/debit`, { credits: '3' }, 400)
    expect(await balances()).toEqual(['82.66', '80', '2.66'])
    const real = await ok('GET', `/v1/wallets/${wallet.id}/balance/real-time`)
    expect(real.real_time_balance).toBe('2.66')
    await ok('POST', `/v1/wallets/holds/${big.id}/release`)
  })

  it('moves the balance alert on what is available: a hold drops it, its release recovers it', async () => {
    const w = await newWallet(h, wallet.customer_id, { currency: 'EUR', initial_credits_to_load: '50', alert_settings: { alert_enabled: true, critical: { threshold: 10 } } })
    const hold = await ok('POST', `/v1/wallets/${w.id}/holds`, { amount: '45' }, 201)
    await ok('POST', `/v1/wallets/holds/${hold.id}/release`)
    expect((await eventsOf(h, w.id)).filter((e) => e.startsWith('wallet.credit_balance'))).toEqual(['wallet.credit_balance.dropped', 'wallet.credit_balance.recovered'])
  })

  it('settles over the hold only with allow_overage, and never past what is free', async () => {
    const hold = await ok('POST', `/v1/wallets/${wallet.id}/holds`, { amount: '10' }, 201)
    await refused('POST', `/v1/wallets/holds/${hold.id}/settle`, { amount: '10.5' }, 400, 'amount')
    await refused('POST', `/v1/wallets/holds/${hold.id}/settle`, { amount: '82.67', allow_overage: true }, 400, 'amount')
    expect(await ok('POST', `/v1/wallets/holds/${hold.id}/settle`, { amount: '12.66', allow_overage: true })).toMatchObject({ settled_amount: '12.66' })
    expect(await balances()).toEqual(['70', '0', '70'])
  })

  it('frees an expired hold at its expiry; the job marks it and announces wallet.hold.expired', async () => {
    const hold = await ok('POST', `/v1/wallets/${wallet.id}/holds`, { amount: '30', expires_in_seconds: 60 }, 201)
    clock.set('2025-03-10T00:00:59.999Z')
    expect(await balances()).toEqual(['70', '30', '40'])
    clock.set('2025-03-10T00:01:00Z')
    expect(await balances()).toEqual(['70', '0', '70'])
    expect(await ok('GET', `/v1/wallets/holds/${hold.id}`)).toMatchObject({ status: 'expired' })
    await refused('POST', `/v1/wallets/holds/${hold.id}/settle`, { amount: '1' }, 400)
    expect(await runNamedJob(h, 'wallet-hold-expiry')).toMatchObject({ expired: 1 })
    expect(await eventsOf(h, hold.id)).toEqual(['wallet.hold.created', 'wallet.hold.expired'])
    const listed = await ok('GET', `/v1/wallets/${wallet.id}/holds?status=expired`)
    expect(listed.items.map((x: any) => x.id)).toEqual([hold.id])
  })
})

describe('many changes of one wallet at once (one batch, each its own answer)', () => {
  it('makes only what 50 credits cover, answers a repeated key with its hold, settles and releases twice alike', async () => {
    const c = await customer(h)
    const w = await newWallet(h, c.id, { initial_credits_to_load: '50' })
    const hold = (key: string) => h.http('POST', `/v1/wallets/${w.id}/holds`, { body: { amount: '20', idempotency_key: key } })
    const [a, b, cc, again] = await Promise.all([hold('a'), hold('b'), hold('c'), hold('a')])
    // 50 covers two holds of 20: whichever came third is refused with the 10 left.
    const made = [a, b, cc].filter((r) => r.status === 201)
    expect(made).toHaveLength(2)
    expect([a, b, cc].find((r) => r.status !== 201)!.body).toMatchObject({ http_status_code: 400, details: { available_balance: '10', held_balance: '40', requested: '20' } })
    expect([again.status, again.body.id]).toEqual([a.status, a.body.id])
    const [x, y] = made.map((r) => r.body.id)

    const settles = await Promise.all([ok('POST', `/v1/wallets/holds/${x}/settle`, { amount: '15' }), ok('POST', `/v1/wallets/holds/${x}/settle`, { amount: '15' })])
    const releases = await Promise.all([ok('POST', `/v1/wallets/holds/${y}/release`), ok('POST', `/v1/wallets/holds/${y}/release`)])
    expect(settles[0]).toMatchObject({ status: 'settled', settled_amount: '15', transaction_id: expect.any(String) })
    expect(settles[1]).toEqual(settles[0])
    expect(releases[1]).toEqual(releases[0])
    expect((await ledger(h, w.id, '&type=debit')).map((t) => [t.credit_amount, t.reference_id])).toEqual([['15', x]])
    const after = await ok('GET', `/v1/wallets/${w.id}`)
    expect([after.credit_balance, after.held_balance, after.available_balance]).toEqual(['35', '0', '35'])
    expect(await eventsOf(h, x)).toEqual(['wallet.hold.created', 'wallet.hold.settled'])
  })
})

describe('bad input', () => {
  it.each([
    [{ amount: '1', expires_in_seconds: 86_401 }, 'expires_in_seconds'],
    [{ amount: '-1' }, 'amount'],
    [{ amount: '0' }, 'amount'],
    [{ amount: '1', feature_id: 'feat_x', quantity: '1' }, 'amount'],
    [{ feature_id: 'feat_x' }, 'quantity'],
    [{}, 'amount'],
  ])('%j is refused naming %s', async (body, field) => {
    const before = await ok('GET', `/v1/wallets/${wallet.id}/holds`)
    await refused('POST', `/v1/wallets/${wallet.id}/holds`, body, 400, field)
    expect((await ok('GET', `/v1/wallets/${wallet.id}/holds`)).pagination.total).toBe(before.pagination.total)
  })
  it('answers 404 for another tenant’s hold and an unknown one', async () => {
    const hold = await ok('POST', `/v1/wallets/${wallet.id}/holds`, { amount: '1' }, 201)
    const other = (await h.newTenant()).apiKey
    expect((await h.http('POST', `/v1/wallets/holds/${hold.id}/release`, { key: other })).status).toBe(404)
    expect((await h.http('GET', '/v1/wallets/holds/hold_nope')).status).toBe(404)
  })
})
