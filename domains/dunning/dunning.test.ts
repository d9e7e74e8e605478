// Dunning walked by moving the clock: an overdue invoice enters the environment's schedule, each step runs once on
// its day (reminder email to DATA_DIR/mail, a payment retry at the connected Stripe stand-in, a final action), the
// invoice shows its status and next step, each step is announced, and a payment at any point ends the schedule and
// lifts the entitlement suspension.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixedClock } from '../../core/clock.ts'
import { customer, eventsOf, feature, fixedPrice, plan, subscribed } from '../../test/catalog.ts'
import { startFakeStripe, type FakeStripe } from '../../test/fake-stripe.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { call, runNamedJob } from '../../test/wallets.ts'

const DAY = 86_400_000
const T0 = new Date('2025-03-01T10:00:00Z')
const clock = fixedClock(T0)
const SECRET_KEY = 'sk_test_meterbill_dunning_1234'
let h: Harness
let stripe: FakeStripe
let sso: any
let pro: any

beforeAll(async () => {
  h = await startHarness({ clock })
  stripe = await startFakeStripe(SECRET_KEY)
  sso = await feature(h, 'boolean')
  pro = await plan(h, { prices: [fixedPrice('10')], entitlements: [{ feature_id: sso.id }] })
})
afterAll(async () => {
  await stripe?.stop()
  await h?.stop()
})

const at = (days: number) => new Date(T0.getTime() + days * DAY)
const invoice = (id: string) => call(h, 'GET', `/v1/invoices/${id}`)
const granted = async (customerId: string) => (await call(h, 'GET', `/v1/customers/${customerId}/entitlements`)).features.map((f: any) => f.feature.id)
const dunning = () => runNamedJob(h, 'dunning')
const reminders = async (invoiceId: string) => (await call(h, 'GET', `/v1/communications?invoice_id=${invoiceId}&kind=dunning_reminder&order=asc`)).items

/** A finalized USD invoice of a new subscriber to Pro, due `dueInDays` after T0. */
async function overdueSubscriber(name: string, email: string | null = `${name.toLowerCase()}@example.org`) {
  const cust = await customer(h, { name, ...(email && { email }) })
  const sub = await subscribed(h, { customer_id: cust.id, plan_id: pro.id })
  const draft = await call(h, 'POST', '/v1/invoices', { customer_id: cust.id, subscription_id: sub.id, currency: 'USD', subtotal: '50.00', total: '50.00', amount_due: '50.00', due_date: at(1).toISOString(), line_items: [{ display_name: 'Pro seats', amount: '50.00', quantity: '1' }] }, 201)
  await call(h, 'POST', `/v1/invoices/${draft.id}/finalize`)
  return { cust, sub, inv: await invoice(draft.id) }
}

describe('dunning settings', () => {
  it('are off by default, refuse bad steps naming the field, and take a documented preset', async () => {
    expect(await call(h, 'GET', '/v1/dunning/settings')).toMatchObject({ enabled: false, steps: [] })
    const noSteps = await h.http('PUT', '/v1/dunning/settings', { body: { enabled: true } })
    expect(noSteps.status).toBe(400)
    expect(noSteps.body.details).toHaveProperty('steps')
    const early = await h.http('PUT', '/v1/dunning/settings', { body: { enabled: true, steps: [{ days_after_due: 3, actions: ['suspend_entitlements'] }, { days_after_due: 5, actions: ['reminder_email'] }] } })
    expect(early.status).toBe(400)
    expect(early.body.details).toHaveProperty(['steps[0].actions'])
    const outOfOrder = await h.http('PUT', '/v1/dunning/settings', { body: { steps: [{ days_after_due: 5, actions: ['reminder_email'] }, { days_after_due: 5, actions: ['reminder_email'] }] } })
    expect(outOfOrder.status).toBe(400)
    expect(await call(h, 'GET', '/v1/dunning/settings')).toMatchObject({ enabled: false, steps: [] })
    const presets = await call(h, 'GET', '/v1/dunning/presets')
    expect(await call(h, 'PUT', '/v1/dunning/settings', { preset: 'strict' })).toMatchObject({ enabled: false, steps: presets.strict })
  })
})

describe('a schedule walked day by day', () => {
  it('reminds, retries, suspends entitlements on the last step, and lifts the suspension when paid', async () => {
    await call(h, 'PUT', '/v1/dunning/settings', {
      enabled: true,
      steps: [
        { days_after_due: 1, actions: ['reminder_email', 'retry_payment'] },
        { days_after_due: 7, actions: ['reminder_email'] },
        { days_after_due: 10, actions: ['suspend_entitlements'] },
      ],
    })
    const { cust, sub, inv } = await overdueSubscriber('Grace')
    expect(await granted(cust.id)).toEqual([sso.id])

    // Enters the schedule at once: the invoice shows its first step, due a day after its due date.
    expect(await dunning()).toMatchObject({ entered: 1, ran: 0 })
    expect(await invoice(inv.id)).toMatchObject({ dunning_status: 'active', dunning_next_step: 0, dunning_next_step_at: at(2).toISOString() })

    clock.set(new Date(at(2).getTime() - 1000))
    expect(await dunning()).toMatchObject({ attempted: 0 })
    clock.set(at(2))
    expect(await dunning()).toMatchObject({ ran: 1 })
    expect(await invoice(inv.id)).toMatchObject({ dunning_status: 'active', dunning_next_step: 1, dunning_next_step_at: at(8).toISOString() })
    const [first] = (await call(h, 'GET', `/v1/invoices/${inv.id}/dunning`)).steps_run
    expect(first).toMatchObject({ step: 0, results: { reminder_email: 'sent', retry_payment: 'skipped: the invoice was not pushed to a payment provider' } })
    expect(await reminders(inv.id)).toEqual([expect.objectContaining({ to_email: 'grace@example.org', delivery_status: 'sent', subject: `Reminder: invoice ${inv.invoice_number} is 1 days overdue` })])
    expect(await dunning()).toMatchObject({ attempted: 0 })

    // The worker was down past two steps: the later one runs, the earlier is recorded as superseded (no second reminder).
    clock.set(at(12))
    expect(await dunning()).toMatchObject({ ran: 1 })
    const view = await call(h, 'GET', `/v1/invoices/${inv.id}/dunning`)
    expect(view).toMatchObject({ dunning_status: 'completed', next_step: null })
    expect(view.steps_run.map((r: any) => [r.step, Object.keys(r.results).sort()])).toEqual([[0, ['reminder_email', 'retry_payment']], [1, ['skipped']], [2, ['suspend_entitlements']]])
    expect(await reminders(inv.id)).toHaveLength(1)
    expect(await granted(cust.id)).toEqual([])
    expect(await call(h, 'GET', `/v1/subscriptions/${sub.id}`)).toMatchObject({ entitlements_suspended_by: inv.id })

    await call(h, 'PUT', `/v1/invoices/${inv.id}/payment`, { payment_status: 'SUCCEEDED', amount: '50.00' })
    expect(await invoice(inv.id)).toMatchObject({ dunning_status: 'resolved', dunning_next_step: null, dunning_next_step_at: null })
    expect(await granted(cust.id)).toEqual([sso.id])
    const events = await eventsOf(h, inv.id)
    expect(events.filter((e) => e.startsWith('invoice.dunning'))).toEqual(['invoice.dunning.step', 'invoice.dunning.step', 'invoice.dunning.resolved'])
  })

  it('retries the payment at the connected provider, cancels at period end on the last step, and a payment mid-way stops another', async () => {
    clock.set(T0)
    await call(h, 'POST', '/v1/connections', { name: 'Stripe', provider_type: 'stripe', api_base_url: stripe.url, encrypted_secret_data: { stripe: { secret_key: SECRET_KEY, webhook_secret: 'whsec_dunning_test' } } }, 201)
    clock.advance(1000)
    await call(h, 'PUT', '/v1/dunning/settings', { steps: [{ days_after_due: 2, actions: ['retry_payment'] }, { days_after_due: 5, actions: ['reminder_email', 'cancel_subscription'] }] })
    const unpaid = await overdueSubscriber('Hopper')
    const paying = await overdueSubscriber('Lamarr', null)
    await runNamedJob(h, 'invoice-sync')
    // The customer saves a card at Stripe after the invoice was sent: the retry charges it.
    const stripeInvoice = [...stripe.invoices.values()].find((i) => i.metadata.meterbill_invoice_id === unpaid.inv.id)!
    stripe.customers.get(stripeInvoice.customer)!.invoice_settings.default_payment_method = 'pm_card_visa'

    clock.set(at(3))
    expect(await dunning()).toMatchObject({ entered: 2, ran: 2 })
    const retry = (await call(h, 'GET', `/v1/invoices/${unpaid.inv.id}/dunning`)).steps_run[0]
    expect(retry.results.retry_payment).toBe(`charged: stripe invoice ${stripeInvoice.id} is paid`)
    expect(stripe.invoices.get(stripeInvoice.id)!.status).toBe('paid')

    await call(h, 'PUT', `/v1/invoices/${paying.inv.id}/payment`, { payment_status: 'SUCCEEDED', amount: '50.00' })
    expect(await invoice(paying.inv.id)).toMatchObject({ dunning_status: 'resolved', dunning_next_step_at: null })

    clock.set(at(6))
    expect(await dunning()).toMatchObject({ attempted: 1, ran: 1 })
    expect(await invoice(unpaid.inv.id)).toMatchObject({ dunning_status: 'completed' })
    expect(await call(h, 'GET', `/v1/subscriptions/${unpaid.sub.id}`)).toMatchObject({ cancel_at_period_end: true })
    expect(await call(h, 'GET', `/v1/subscriptions/${paying.sub.id}`)).toMatchObject({ cancel_at_period_end: false })
    expect((await call(h, 'GET', `/v1/invoices/${paying.inv.id}/dunning`)).steps_run).toHaveLength(1)
    expect(await reminders(paying.inv.id)).toHaveLength(0)
    expect(await reminders(unpaid.inv.id)).toEqual([expect.objectContaining({ delivery_status: 'sent', transport: 'file' })])
  })

  it('lifts a suspension when the invoice is voided', async () => {
    await call(h, 'PUT', '/v1/dunning/settings', { steps: [{ days_after_due: 1, actions: ['suspend_entitlements'] }] })
    const { cust, inv } = await overdueSubscriber('Noether')
    expect(await dunning()).toMatchObject({ entered: 1, ran: 1 })
    expect(await granted(cust.id)).toEqual([])
    await call(h, 'POST', `/v1/invoices/${inv.id}/void`)
    expect(await invoice(inv.id)).toMatchObject({ invoice_status: 'VOIDED', dunning_status: 'resolved' })
    expect(await granted(cust.id)).toEqual([sso.id])
  })
})
