// A one-off invoice's line billed under a commitment (POST /v1/invoices line_items[].commitment_info, as the spec
// lists it) over HTTP: kept and answered with the line; parts that do not make up the line are refused, nothing made.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { customer } from '../../../test/catalog.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'

let h: Harness
let customerId: string

beforeAll(async () => {
  h = await startHarness({ env: { KAFKA_BROKERS: '' } })
  customerId = (await customer(h)).id
})
afterAll(() => h?.stop())

const invoice = (commitment_info: Record<string, unknown>) => ({
  customer_id: customerId,
  currency: 'USD',
  subtotal: '100.00',
  total: '100.00',
  amount_due: '100.00',
  line_items: [{ display_name: 'API usage', amount: '100.00', quantity: '1', price_type: 'USAGE', commitment_info }],
})

describe('commitment_info on one-off invoice lines', () => {
  it('keeps the commitment a line was billed under and answers it with the line', async () => {
    // 100.00 committed for the month, 70.00 used: the true-up bills the 30.00 left.
    const info = { type: 'amount', amount: '100.00', duration: 'MONTHLY', true_up_enabled: true, is_windowed: false, computed_commitment_utilized_amount: '70.00', computed_overage_amount: '0', computed_true_up_amount: '30.00' }
    const made = await h.http('POST', '/v1/invoices', { body: invoice(info) })
    expect(made.status, JSON.stringify(made.body)).toBe(201)
    expect(made.body.line_items[0].commitment_info).toEqual(info)
    const read = await h.http('GET', `/v1/invoices/${made.body.id}`)
    expect(read.body.line_items[0]).toMatchObject({ amount: '100', commitment_info: info })
  })

  it('refuses computed parts that do not add up to the line, naming the field, and makes nothing', async () => {
    const before = (await h.http('GET', `/v1/invoices?customer_id=${customerId}`)).body.pagination.total
    const bad = await h.http('POST', '/v1/invoices', { body: invoice({ amount: '100.00', computed_commitment_utilized_amount: '70.00', computed_true_up_amount: '20.00' }) })
    expect([bad.status, bad.body.code, Object.keys(bad.body.details)]).toEqual([400, 'validation_error', ['line_items[0].commitment_info']])
    const unknown = await h.http('POST', '/v1/invoices', { body: invoice({ amount: '100.00', commitment: 'yes' }) })
    expect(unknown.status).toBe(400)
    expect((await h.http('GET', `/v1/invoices?customer_id=${customerId}`)).body.pagination.total).toBe(before)
  })
})
