// Plan sync through HTTP on a fixed clock, amounts by hand. A plan's seat goes from 10.00 to 12.00 on 21 April
// 2024 (April: 30 days, 10 left).
// - From the next period (default): nothing prorated; May bills 12.00 a seat, 3 seats 36.00.
// - Now, with create_prorations: −10.00 × 10/30 = −3.333… → −3.33 and 12.00 × 10/30 = 4.00; May's invoice
//   12.00 − 3.33 + 4.00 = 12.67.
// Each subscription is moved once: a rerun, or a run whose cursor went back, moves nobody again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../../core/clock.ts'
import { customer, fixedPrice, plan } from '../../../test/catalog.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import type { InvoiceWire, Page } from '../../../test/wire.ts'

let h: Harness
const clock = fixedClock('2024-04-01T00:00:00Z')

beforeAll(async () => {
  h = await startHarness({ clock, env: { KAFKA_BROKERS: '', INVOICE_GRACE_PERIOD_MINUTES: '0' } })
})
afterAll(() => h?.stop())

const post = (path: string, body?: unknown) => h.http('POST', path, { body })
const get = (path: string) => h.http('GET', path)
const del = (path: string) => h.http('DELETE', path)
const job = async (name: string) => {
  const res = await post(`/v1/jobs/${name}/run`)
  expect(res.body.summary.failed ?? 0, JSON.stringify(res.body.summary)).toBe(0)
  return res.body.summary
}
const lastInvoice = async (subId: string) => (await h.http<Page<InvoiceWire>>('GET', `/v1/invoices?subscription_id=${subId}&sort=created_at&order=asc&limit=100`)).body.items.at(-1)!
const lines = (i: InvoiceWire) => i.line_items.map((l) => [l.display_name, l.quantity, l.amount])

/** A plan with a 10.00 seat and its subscriptions from 1 April (quantities as given), April billed. */
async function setUp(quantities: string[]) {
  const p = await plan(h, { prices: [fixedPrice('10.00', { display_name: 'Seat' })] })
  const subs = []
  for (const quantity of quantities) {
    const cus = await customer(h)
    const res = await post('/v1/subscriptions', { customer_id: cus.id, plan_id: p.id, currency: 'USD', billing_period: 'MONTHLY', collection_method: 'send_invoice', start_date: '2024-04-01T00:00:00Z' })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    if (quantity !== '1') {
      const changed = await post(`/v1/subscriptions/${res.body.id}/modify/execute`, { type: 'quantity_change', quantity_change_params: { line_items: [{ id: res.body.line_items[0].id, quantity }], proration_behavior: 'none' } })
      expect(changed.status, JSON.stringify(changed.body)).toBe(200)
    }
    subs.push(res.body)
  }
  return { plan: p, subs }
}

/** The seat's new price: 12.00 added, 10.00 deleted. */
async function reprice(p: any) {
  expect((await post('/v1/prices', { ...fixedPrice('12.00', { display_name: 'Seat' }), plan_id: p.id })).status).toBe(201)
  expect((await del(`/v1/prices/${p.prices[0].id}`)).status).toBe(200)
}

const outOfSync = async (subId: string) => (await get(`/v1/subscriptions/${subId}/v2`)).body.plan_prices_out_of_sync

describe('plan sync from the next period', () => {
  let p: any, subs: any[], run: any

  beforeAll(async () => {
    clock.set('2024-04-01T00:00:00Z')
    ;({ plan: p, subs } = await setUp(['1', '3']))
    await job('billing-run')
    clock.set('2024-04-21T00:00:00Z')
    await reprice(p)
  })

  it('starts a run answering Flexprice\'s workflow fields and its progress', async () => {
    expect(await outOfSync(subs[0].id)).toBe(true)
    const res = await post(`/v1/plans/${p.id}/sync/subscriptions`)
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    run = res.body
    expect([run.status, run.workflow_id, run.run_id, run.change_at, run.progress]).toEqual(['pending', run.id, run.id, 'end_of_period', { processed: 0, total: 2, moved: 0, skipped: 0, failed: 0 }])
    const again = await post(`/v1/plans/${p.id}/sync/subscriptions`)
    expect([again.status, again.body.code]).toEqual([400, 'invalid_operation'])
  })

  it('moves each subscription once, from 1 May, keeping quantities, with an audit of what changed', async () => {
    expect(await job('plan-sync')).toMatchObject({ runs: 1, moved: 2 })
    const done = (await get(`/v1/plans/${p.id}/sync/subscriptions/${run.id}`)).body
    expect([done.status, done.progress]).toEqual(['completed', { processed: 2, total: 2, moved: 2, skipped: 0, failed: 0 }])
    const audit = (await get(`/v1/plans/${p.id}/sync/subscriptions/${run.id}/changes`)).body.items
    expect(audit.map((a: any) => [a.outcome, a.effective_date, a.ended.map((l: any) => l.quantity), a.started.map((l: any) => l.quantity)]).sort()).toEqual([
      ['moved', '2024-05-01T00:00:00.000Z', ['1'], ['1']],
      ['moved', '2024-05-01T00:00:00.000Z', ['3'], ['3']],
    ])
    expect(await outOfSync(subs[1].id)).toBe(false)
    // A run whose cursor went back (as after a crash) finds every subscription recorded and moves nobody again.
    await h.running.deps.sql`UPDATE plan_sync_runs SET run_status = 'running', cursor = '' WHERE id = ${run.id}`
    expect(await job('plan-sync')).toMatchObject({ runs: 1, moved: 0 })
    const seats = (await get(`/v1/subscriptions/${subs[1].id}`)).body.line_items.map((l: any) => [l.quantity, l.price_id === p.prices[0].id ? 'old' : 'new', l.end_date])
    expect(seats).toEqual([
      ['1', 'old', '2024-04-01T00:00:00.000Z'],
      ['3', 'old', '2024-05-01T00:00:00.000Z'],
      ['3', 'new', null],
    ])
  })

  it('bills the new price from May, nothing prorated: 12.00 and 36.00', async () => {
    clock.set('2024-05-01T00:00:00Z')
    await job('subscription-lifecycle')
    await job('billing-run')
    expect(lines(await lastInvoice(subs[0].id))).toEqual([['Seat', '1', '12']])
    expect(lines(await lastInvoice(subs[1].id))).toEqual([['Seat', '3', '36']])
  })

  it('a second run skips subscriptions already on the plan\'s prices', async () => {
    const second = (await post(`/v1/plans/${p.id}/sync/subscriptions`)).body
    expect(await job('plan-sync')).toMatchObject({ moved: 0, skipped: 2 })
    const audit = (await get(`/v1/plans/${p.id}/sync/subscriptions/${second.id}/changes`)).body.items
    expect(audit.map((a: any) => [a.outcome, a.reason])).toEqual([
      ['skipped', "already on the plan's prices"],
      ['skipped', "already on the plan's prices"],
    ])
  })
})

describe('plan sync now, prorated', () => {
  it('credits −3.33 and charges 4.00 for the 10 days left; May bills 12.67', async () => {
    clock.set('2024-04-01T00:00:00Z')
    const { plan: p, subs } = await setUp(['1'])
    await job('billing-run')
    clock.set('2024-04-21T00:00:00Z')
    await reprice(p)
    const res = await post(`/v1/plans/${p.id}/sync/subscriptions`, { change_at: 'immediate', proration_behavior: 'create_prorations' })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(await job('plan-sync')).toMatchObject({ moved: 1 })
    clock.set('2024-05-01T00:00:00Z')
    await job('subscription-lifecycle')
    await job('billing-run')
    const may = await lastInvoice(subs[0].id)
    expect(lines(may).sort()).toEqual(
      [
        ['Remaining time on Seat from 2024-04-21', '1', '4'],
        ['Seat', '1', '12'],
        ['Unused time on Seat from 2024-04-21', '1', '-3.33'],
      ].sort(),
    )
    expect(may.subtotal).toBe('12.67')
  })

  it('refuses an unknown plan and an unknown field, changing nothing', async () => {
    expect((await post('/v1/plans/plan_missing/sync/subscriptions')).status).toBe(404)
    const bad = await post('/v1/plans/plan_missing/sync/subscriptions', { change_at: 'tomorrow' })
    expect([bad.status, Object.keys(bad.body.details)]).toEqual([400, ['change_at']])
  })
})
